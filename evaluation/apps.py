from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Model evaluation"
    home_links: dict = {
        "researchers": [
            ("Runs", "evaluation:run_list"),
            ("Endpoints", "evaluation:endpoint_list"),
            ("Compare", "evaluation:comparison"),
            ("Figures", "evaluation:figures"),
            ("Data quality", "evaluation:quality"),
        ]
    }
