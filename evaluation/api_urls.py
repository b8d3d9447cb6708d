from django.urls import path  # noqa: F401

app_name = "evaluation_api"
urlpatterns: list = []
