from django.urls import path

from evaluation.views import analysis as views_analysis
from evaluation.views import endpoints as views_endpoints
from evaluation.views import judge as judge_views
from evaluation.views import runs as views
from evaluation.views import tables as views_tables

app_name = "evaluation"
urlpatterns = [
    path("endpoints/", views.endpoint_list_view, name="endpoint_list"),
    path("endpoints/<int:pk>/edit/", views.endpoint_edit_view, name="endpoint_edit"),
    path("endpoints/check/", views_endpoints.endpoint_check_view, name="endpoint_check"),
    path("runs/", views.run_list_view, name="run_list"),
    path("runs/launch/", views.run_launch_view, name="run_launch"),
    path("runs/<int:pk>/", views.run_detail_view, name="run_detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel_view, name="run_cancel"),
    path("runs/<int:pk>/resume/", views.run_resume_view, name="run_resume"),
    path("runs/<int:pk>/refresh/", views.run_refresh_view, name="run_refresh"),
    path("runs/<int:pk>/results/<int:result_pk>/", views.result_detail_view, name="result_detail"),
    path("runs/<int:pk>/results.jsonl", views_tables.run_results_jsonl_view, name="run_results_jsonl"),
    path("runs/<int:pk>/superseded.jsonl", views_tables.run_superseded_jsonl_view, name="run_superseded_jsonl"),
    path("runs/<int:pk>/question-types.<str:fmt>", views_tables.run_types_export_view, name="run_types_export"),
    path("runs.<str:fmt>", views_tables.run_list_export_view, name="run_list_export"),
    path("leaderboard/", views_tables.leaderboard_view, name="leaderboard"),
    path("leaderboard.<str:fmt>", views_tables.leaderboard_export_view, name="leaderboard_export"),
    path("leaderboard/pairwise.<str:fmt>", views_tables.leaderboard_pairwise_export_view,
         name="leaderboard_pairwise_export"),
    path("compare/", views_tables.comparison_redirect_view, name="comparison"),
    path("compare/runs/", views_tables.run_compare_view, name="run_compare"),
    path("judge/", judge_views.judge_run_list_view, name="judge_run_list"),
    path("judge/<slug:name>/quality/", judge_views.judge_quality_view, name="judge_quality"),
    path("judge/<slug:name>/quality.csv", judge_views.judge_quality_csv_view, name="judge_quality_csv"),
    path("runs/launch/estimate/", views_analysis.launch_estimate_view, name="run_launch_estimate"),
    path("figures/", views_analysis.figures_view, name="figures"),
    path("figures/<slug:name>/", views_analysis.figure_view, name="figure"),
    path("figures/<slug:name>.<str:fmt>", views_analysis.figure_file_view, name="figure_file"),
    path("quality/", views_analysis.quality_view, name="quality"),
    path("one-scale/", views_analysis.one_scale_view, name="one_scale"),
    path("one-scale/<slug:name>.<str:fmt>", views_analysis.one_scale_file_view, name="one_scale_file"),
]
