from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

#: How often the periodic sweep closes attempts whose deadline passed (seconds).
SWEEP_INTERVAL_SECONDS = 30.0


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Human studies"
    home_links: dict = {"researchers": [(_("Studies"), "studies:study_list")]}

    def ready(self) -> None:
        from detectbench_web.celery import app

        app.conf.beat_schedule = {
            **(app.conf.beat_schedule or {}),
            "studies-sweep-expired-attempts": {
                "task": "studies.tasks.sweep_expired_attempts",
                "schedule": SWEEP_INTERVAL_SECONDS,
            },
        }
