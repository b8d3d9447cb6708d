from django.urls import path

from . import views

app_name = "annotation"
urlpatterns = [
    path("items/", views.item_list_view, name="item_list"),
    path("items/<int:pk>/", views.item_detail_view, name="item_detail"),
    path("items/import/", views.item_import_view, name="item_import"),
]
