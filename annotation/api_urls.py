from django.urls import path

from . import apis

app_name = "annotation_api"
urlpatterns = [
    path("items/", apis.ItemListApi.as_view(), name="item_list"),
    path("items/<int:pk>/", apis.ItemDetailApi.as_view(), name="item_detail"),
    path("items/<int:pk>/revisions/", apis.ItemRevisionListApi.as_view(), name="item_revisions"),
    path("items/<int:pk>/verification/", apis.VerificationSubmitApi.as_view(), name="verification_submit"),
    path("items/<int:pk>/clue-graph/", apis.ClueGraphSubmitApi.as_view(), name="clue_graph_submit"),
    path("next/", apis.NextItemApi.as_view(), name="next_item"),
]
