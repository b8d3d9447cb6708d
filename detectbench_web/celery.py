"""Celery application: settings come from Django settings under the CELERY_ namespace."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "detectbench_web.settings.base")

app = Celery("detectbench_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Running chunks take no more of the queue once their worker is shutting down (whatever asked it to).
app.steps["worker"].add("evaluation.execution.continuation:StopTakingChunks")
