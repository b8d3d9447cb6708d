from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Model evaluation"
    home_links: dict = {
        "researchers": [
            (_("Runs"), "evaluation:run_list"),
            (_("Leaderboard"), "evaluation:leaderboard"),
            (_("Compare runs"), "evaluation:run_compare"),
            (_("Judge runs"), "evaluation:judge_run_list"),
            (_("Endpoints"), "evaluation:endpoint_list"),
            (_("Figures"), "evaluation:figures"),
            (_("Data quality"), "evaluation:quality"),
            (_("One scale"), "evaluation:one_scale"),
        ]
    }

    def ready(self) -> None:
        from evaluation.models.endpoints import destination_policy

        destination_policy()  # a network in EVALUATION_ENDPOINT_ALLOWED_NETWORKS that is none stops the start
