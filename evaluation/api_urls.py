from django.urls import path

from evaluation.apis import analysis as apis_analysis
from evaluation.apis import judge as judge_apis
from evaluation.apis import runs as apis
from evaluation.apis import scale as apis_scale
from evaluation.apis import tables as apis_tables

app_name = "evaluation_api"
urlpatterns = [
    path("endpoints/", apis.EndpointListApi.as_view(), name="endpoint-list"),
    path("endpoints/<int:pk>/", apis.EndpointDetailApi.as_view(), name="endpoint-detail"),
    path("runs/", apis.RunListApi.as_view(), name="run-list"),
    path("runs/<int:pk>/", apis.RunDetailApi.as_view(), name="run-detail"),
    path("runs/<int:pk>/cancel/", apis.RunCancelApi.as_view(), name="run-cancel"),
    path("runs/<int:pk>/resume/", apis.RunResumeApi.as_view(), name="run-resume"),
    path("runs/<int:pk>/refresh/", apis.RunRefreshApi.as_view(), name="run-refresh"),
    path("runs/<int:pk>/results/", apis.RunResultsApi.as_view(), name="run-results"),
    path("runs/<int:pk>/superseded/", apis.RunSupersededApi.as_view(), name="run-superseded"),
    path("sweeps/", apis_analysis.SweepLaunchApi.as_view(), name="sweep-launch"),
    path("sweeps/estimate/", apis_analysis.SweepEstimateApi.as_view(), name="sweep-estimate"),
    path("leaderboard/", apis_tables.LeaderboardApi.as_view(), name="leaderboard"),
    path("leaderboard/pairwise/", apis_tables.LeaderboardPairwiseApi.as_view(), name="leaderboard-pairwise"),
    path("figures/", apis_analysis.FigureListApi.as_view(), name="figure-list"),
    path("figures/<slug:name>/", apis_analysis.FigureDataApi.as_view(), name="figure-data"),
    path("figures/<slug:name>/<slug:fmt>/", apis_analysis.FigureFileApi.as_view(), name="figure-file"),
    path("quality/", apis_analysis.QualityReportApi.as_view(), name="quality-report"),
    path("one-scale/", apis_scale.OneScaleApi.as_view(), name="one-scale"),
    path("compare/", apis_tables.RunCompareApi.as_view(), name="run-compare"),
    path("judge-configs/", judge_apis.JudgeConfigListApi.as_view(), name="judge-config-list"),
    path("judge-configs/<slug:name>/quality/", judge_apis.JudgeQualityApi.as_view(), name="judge-quality"),
    path("judge-configs/<slug:name>/position-probes/", judge_apis.JudgeProbeLaunchApi.as_view(),
         name="judge-position-probe"),
    path("judge-runs/", judge_apis.JudgeRunListApi.as_view(), name="judge-run-list"),
    path("judge-runs/<int:pk>/", judge_apis.JudgeRunDetailApi.as_view(), name="judge-run-detail"),
    path("judge-runs/<int:pk>/cancel/", judge_apis.JudgeRunCancelApi.as_view(), name="judge-run-cancel"),
    path("judge-runs/<int:pk>/resume/", judge_apis.JudgeRunResumeApi.as_view(), name="judge-run-resume"),
]
