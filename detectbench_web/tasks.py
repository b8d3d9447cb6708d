"""Celery tasks of the project package: the demo's model and judge runs, handed over by `setup_demo --runs worker`."""
from celery import shared_task


@shared_task(name="detectbench_web.tasks.setup_demo_runs", ignore_result=True)
def setup_demo_runs() -> str:
    """The built-in baseline runs and judge runs of the demo that are still missing (`make run` starts the web
    server without waiting for them). Idempotent; a second message while one is at work does nothing."""
    from detectbench_web.demo import runs_by_one_process

    return runs_by_one_process()
