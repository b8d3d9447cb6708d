from django.urls import path

from evaluation.apis import analysis as apis_analysis
from evaluation.apis import judge as judge_apis
from evaluation.apis import runs as apis
from evaluation.apis import tables as apis_tables

app_name = "evaluation_api"
urlpatterns = [
    path("endpoints/", apis.EndpointListAPI.as_view(), name="endpoint-list"),
    path("endpoints/<int:pk>/", apis.EndpointDetailAPI.as_view(), name="endpoint-detail"),
    path("runs/", apis.RunListAPI.as_view(), name="run-list"),
    path("runs/<int:pk>/", apis.RunDetailAPI.as_view(), name="run-detail"),
    path("runs/<int:pk>/cancel/", apis.RunCancelAPI.as_view(), name="run-cancel"),
    path("runs/<int:pk>/resume/", apis.RunResumeAPI.as_view(), name="run-resume"),
    path("runs/<int:pk>/results/", apis.RunResultsAPI.as_view(), name="run-results"),
    path("sweeps/", apis_analysis.SweepLaunchAPI.as_view(), name="sweep-launch"),
    path("sweeps/estimate/", apis_analysis.SweepEstimateAPI.as_view(), name="sweep-estimate"),
    path("leaderboard/", apis_tables.LeaderboardAPI.as_view(), name="leaderboard"),
    path("figures/", apis_analysis.FigureListAPI.as_view(), name="figure-list"),
    path("figures/<slug:name>/", apis_analysis.FigureDataAPI.as_view(), name="figure-data"),
    path("figures/<slug:name>/<slug:fmt>/", apis_analysis.FigureFileAPI.as_view(), name="figure-file"),
    path("quality/", apis_analysis.QualityReportAPI.as_view(), name="quality-report"),
    path("compare/", apis_tables.RunCompareAPI.as_view(), name="run-compare"),
    path("judge-configs/", judge_apis.JudgeConfigListAPI.as_view(), name="judge-config-list"),
    path("judge-runs/", judge_apis.JudgeRunListAPI.as_view(), name="judge-run-list"),
    path("judge-runs/<int:pk>/", judge_apis.JudgeRunDetailAPI.as_view(), name="judge-run-detail"),
    path("judge-runs/<int:pk>/cancel/", judge_apis.JudgeRunCancelAPI.as_view(), name="judge-run-cancel"),
    path("judge-runs/<int:pk>/resume/", judge_apis.JudgeRunResumeAPI.as_view(), name="judge-run-resume"),
]
