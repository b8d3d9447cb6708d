"""Create a study from a split: a seeded sample (or all) of its items."""
from django.core.management.base import BaseCommand, CommandError

from detectbench_web.error_mapping import REFUSED, error_text

from studies.models import DEFAULT_TIME_LIMIT, StudyStatus
from studies.services import sample_pool, study_create


class Command(BaseCommand):
    help = "Create a study: --slug S --split SPLIT [--sample N --seed K] --per-participant 15 --raters 3 --time-limit SECONDS"

    def add_arguments(self, parser):
        parser.add_argument("--slug", required=True)
        parser.add_argument("--title", default="")
        parser.add_argument("--split", required=True)
        parser.add_argument("--sample", type=int, default=None)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--per-participant", type=int, default=15)
        parser.add_argument("--raters", type=int, default=3)
        parser.add_argument("--time-limit", type=int, default=DEFAULT_TIME_LIMIT, help="Seconds for the attempt.")
        parser.add_argument("--question-time-limit", type=int, default=None)
        parser.add_argument("--language", default="", help="'' (original) or zh-hans.")
        parser.add_argument("--bonus", default="0", help="Bonus per correct answer.")
        parser.add_argument("--completion-code", default="")
        parser.add_argument("--completion-url", default="")
        parser.add_argument("--status", default=StudyStatus.OPEN, choices=StudyStatus.values)

    def handle(self, *args, **o):
        item_ids = sample_pool(split=o["split"], sample=o["sample"], seed=o["seed"])
        if not item_ids:
            raise CommandError(f"No items in split {o['split']!r}.")
        if o["sample"] and len(item_ids) < o["sample"]:
            raise CommandError(f"Split {o['split']!r} has only {len(item_ids)} items.")
        try:
            study = study_create(
                slug=o["slug"], title=o["title"], item_ids=item_ids, per_participant=o["per_participant"],
                raters=o["raters"], time_limit_seconds=o["time_limit"],
                question_time_limit_seconds=o["question_time_limit"], language=o["language"],
                bonus_per_correct=o["bonus"], completion_code=o["completion_code"],
                completion_url=o["completion_url"], status=o["status"], seed=o["seed"], pool_split=o["split"],
                pool_sample=o["sample"],
            )
        except REFUSED as error:
            raise CommandError(error_text(error)) from error
        places = len(item_ids) * study.raters // study.per_participant
        self.stdout.write(f"created study {study.slug} ({study.status}): {len(item_ids)} items x {study.raters} raters, "
                          f"{study.per_participant} per participant -> {places} complete attempts; "
                          f"link /s/{study.slug}/")
