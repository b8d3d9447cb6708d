from django.urls import path  # noqa: F401

app_name = "studies_api"
urlpatterns: list = []
