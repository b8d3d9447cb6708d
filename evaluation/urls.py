from django.urls import path

from . import views
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
]
