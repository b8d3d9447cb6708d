from django.urls import path

app_name = "evaluation"
urlpatterns: list = []
