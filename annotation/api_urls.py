from django.urls import path

from annotation import apis, apis_belief

app_name = "annotation_api"
urlpatterns = [
    path("items/", apis.ItemListApi.as_view(), name="item_list"),
    path("items/<int:pk>/", apis.ItemDetailApi.as_view(), name="item_detail"),
    path("items/<int:pk>/revisions/", apis.ItemRevisionListApi.as_view(), name="item_revisions"),
    path("items/<int:pk>/verification/", apis.VerificationSubmitApi.as_view(), name="verification_submit"),
    path("items/<int:pk>/clue-graph/", apis.ClueGraphSubmitApi.as_view(), name="clue_graph_submit"),
    path("next/", apis.NextItemApi.as_view(), name="next_item"),
    path("belief/queues/", apis_belief.BeliefQueueListApi.as_view(), name="belief_queues"),
    path("belief/queues/<slug:name>/next/", apis_belief.BeliefNextApi.as_view(), name="belief_next"),
    path("belief/queues/<slug:name>/trust/", apis_belief.BeliefTrustApi.as_view(), name="belief_trust"),
    path("belief/queues/<slug:name>/policy/", apis_belief.BeliefQueuePolicyApi.as_view(), name="belief_policy"),
    path("belief/labels/", apis_belief.BeliefLabelListApi.as_view(), name="belief_labels"),
    path("belief/reviews/", apis_belief.BeliefReviewListApi.as_view(), name="belief_reviews"),
    path("belief/leases/<int:pk>/review/", apis_belief.BeliefReviewSubmitApi.as_view(), name="belief_review_submit"),
]
