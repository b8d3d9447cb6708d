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
            ("One scale", "evaluation:one_scale"),
        ]
    }

    def ready(self) -> None:
        from evaluation.models.endpoints import destination_policy

        destination_policy()  # a network in EVALUATION_ENDPOINT_ALLOWED_NETWORKS that is none stops the start
