from django.urls import include, path

from studies import apis

app_name = "studies_api"
urlpatterns = [
    path("", apis.StudyListApi.as_view(), name="study_list"),
    path("<slug:slug>/", apis.StudyDetailApi.as_view(), name="study_detail"),
    path("<slug:slug>/attempts/", apis.AttemptListApi.as_view(), name="attempt_list"),
    path("<slug:slug>/attempts/<int:pk>/extend/", apis.AttemptExtendApi.as_view(), name="attempt_extend"),
    path("<slug:slug>/attempts/<int:pk>/expire/", apis.AttemptExpireApi.as_view(), name="attempt_expire"),
    path("<slug:slug>/reask/", apis.StudyReaskApi.as_view(), name="study_reask"),
    path("<slug:slug>/export/", apis.StudyExportApi.as_view(), name="study_export"),
    path("<slug:slug>/prolific/", include("studies.prolific.api_urls")),
]
