from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Items and curation"
    # Navigation offered to each role by the base layout and the home page.
    home_links = {
        "annotators": [("Work queue", "annotation:queue"), ("Adjudication", "annotation:adjudication_list")],
        "researchers": [("Curation progress", "annotation:progress"), ("Agreement", "annotation:agreement")],
    }

    def ready(self) -> None:
        from detectbench_web.celery import app

        # Stale "next item" leases come back on demand; the sweep keeps the progress board tidy.
        app.conf.beat_schedule = {
            **(app.conf.beat_schedule or {}),
            "annotation-expire-leases": {"task": "annotation.tasks.leases_expire_sweep", "schedule": 300.0},
        }
