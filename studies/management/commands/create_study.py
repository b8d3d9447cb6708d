"""Create a study from a split: a seeded sample (or all) of its items."""
from django.core.management.base import BaseCommand, CommandError
from django.utils import translation

from foundation.error_mapping import REFUSED, error_text
from studies.models import DEFAULT_CONSENT_TEXT, DEFAULT_TIME_LIMIT, StudyStatus
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
        parser.add_argument("--extra-language", action="append", default=[], dest="extra_languages",
                            help="Another language participants may switch to ('' = the original); repeatable.")
        parser.add_argument("--consent-text", default=None,
                            help="The consent page's information (default: the standard text, in the study's language).")
        parser.add_argument("--instructions", default="")
        parser.add_argument("--bonus", default="0", help="Bonus per correct answer.")
        parser.add_argument("--completion-code", default="")
        parser.add_argument("--completion-url", default="")
        parser.add_argument("--timeout-code", default="",
                            help="Code shown when the time runs out (default: none, the participant is asked to "
                                 "return the study).")
        parser.add_argument("--timeout-instruction", default="")
        parser.add_argument("--include-rejected", action="store_true", help="Also sample items annotators rejected.")
        parser.add_argument("--status", default=StudyStatus.OPEN, choices=StudyStatus.values)

    def handle(self, *args, **o):
        item_ids = sample_pool(split=o["split"], sample=o["sample"], seed=o["seed"],
                               include_rejected=o["include_rejected"])
        if not item_ids:
            raise CommandError(f"No items in split {o['split']!r}.")
        if o["sample"] and len(item_ids) < o["sample"]:
            raise CommandError(f"Split {o['split']!r} has only {len(item_ids)} items.")
        consent = o["consent_text"]
        if consent is None:
            with translation.override(o["language"] or "en"):
                consent = str(DEFAULT_CONSENT_TEXT)
        try:
            study = study_create(
                slug=o["slug"], title=o["title"], item_ids=item_ids, per_participant=o["per_participant"],
                raters=o["raters"], time_limit_seconds=o["time_limit"],
                question_time_limit_seconds=o["question_time_limit"], language=o["language"],
                extra_languages=o["extra_languages"], consent_text=consent, instructions=o["instructions"],
                bonus_per_correct=o["bonus"], completion_code=o["completion_code"],
                completion_url=o["completion_url"], timeout_completion_code=o["timeout_code"],
                timeout_instruction=o["timeout_instruction"], status=o["status"], seed=o["seed"],
                pool_split=o["split"], pool_sample=o["sample"], pool_include_rejected=o["include_rejected"],
            )
        except REFUSED as error:
            raise CommandError(error_text(error)) from error
        places = len(item_ids) * study.raters // study.per_participant
        self.stdout.write(f"created study {study.slug} ({study.status}): {len(item_ids)} items x {study.raters} raters, "
                          f"{study.per_participant} per participant -> {places} complete attempts; "
                          f"link /s/{study.slug}/")
