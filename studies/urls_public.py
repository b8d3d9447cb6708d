from django.urls import path, re_path

from studies.views import drafts
from studies.views import participants as views_public
from studies.views.participant_pages import not_found_view

app_name = "studies_public"
urlpatterns = [
    path("a/<str:token>/", views_public.attempt_view, name="attempt"),
    path("a/<str:token>/start/", views_public.attempt_start_view, name="start"),
    path("a/<str:token>/answer/", views_public.answer_view, name="answer"),
    path("a/<str:token>/draft/", drafts.draft_view, name="draft"),
    path("a/<str:token>/practice/", views_public.practice_view, name="practice"),
    path("a/<str:token>/return/", views_public.attempt_return_view, name="return"),
    path("a/<str:token>/language/", views_public.attempt_language_view, name="language"),
    path("<slug:slug>/", views_public.study_landing, name="landing"),
    path("<slug:slug>/join/", views_public.study_join_view, name="join"),
    # A mistyped or cut-off study link gets the participants' 404 page (also with DEBUG on), never the URL list.
    re_path(r"^(?P<rest>.*)$", not_found_view, name="not_found"),
]
