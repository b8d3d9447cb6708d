from django.apps import AppConfig


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Human studies"
    home_links: dict = {}
