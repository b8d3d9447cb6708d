from django.urls import path

from . import views, views_analysis
from .judge import views as judge_views

app_name = "evaluation"
urlpatterns = [
    path("endpoints/", views.endpoint_list_view, name="endpoint_list"),
    path("runs/", views.run_list_view, name="run_list"),
    path("runs/launch/", views.run_launch_view, name="run_launch"),
    path("runs/<int:pk>/", views.run_detail_view, name="run_detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel_view, name="run_cancel"),
    path("runs/<int:pk>/resume/", views.run_resume_view, name="run_resume"),
    path("compare/", views.comparison_view, name="comparison"),
    path("judge/", judge_views.judge_run_list_view, name="judge_run_list"),
    path("runs/launch/estimate/", views_analysis.launch_estimate_view, name="run_launch_estimate"),
    path("figures/", views_analysis.figures_view, name="figures"),
    path("figures/<slug:name>/", views_analysis.figure_view, name="figure"),
    path("figures/<slug:name>.<str:fmt>", views_analysis.figure_file_view, name="figure_file"),
    path("quality/", views_analysis.quality_view, name="quality"),
]
