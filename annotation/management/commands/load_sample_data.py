import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from annotation.models import Item, ItemRevision
from annotation.services import item_import, item_update
from annotation.services.items import CURATED_KEEP

SAMPLE_DIR = Path(settings.BASE_DIR) / "sample_data"
SAMPLE_SOURCE = "sample"


class Command(BaseCommand):
    help = ("Load the original sample puzzles shipped in sample_data/ where they are missing (idempotent: items "
            "edited in the app are kept; a translation is added once, where an item has none and never had one removed).")

    @transaction.atomic
    def handle(self, *args, **options):
        for split in ("train", "test"):
            path = SAMPLE_DIR / f"{split}.jsonl"
            with path.open("rb") as stream:
                report = item_import(stream=stream, file_name=str(path.relative_to(settings.BASE_DIR)),
                                     source=SAMPLE_SOURCE, split=split, curated=CURATED_KEEP)
            self.stdout.write(f"{path.name}: {report.summary()}")
        translations_path = SAMPLE_DIR / "translations_zh.json"
        if translations_path.exists():
            translations = json.loads(translations_path.read_text(encoding="utf-8"))
            changed = 0
            # Added once: an item whose translations changed after its import (this command's own addition, an
            # annotator's edit or removal) keeps them as they are.
            settled = {external_id for external_id, changed in ItemRevision.objects.filter(
                item__source=SAMPLE_SOURCE, number__gt=1).values_list("item__external_id", "changed_fields")
                if "translations" in changed}  # read here: SQLite (make run's database) has no JSON containment
            for external_id, zh in translations.items():
                item = Item.objects.filter(source=SAMPLE_SOURCE, external_id=external_id).first()
                if item is None or item.translations.get("zh-hans") or external_id in settled:
                    continue  # an item's own translation (edited or removed in the app) is never replaced
                item_update(item_id=item.pk, base_version=item.version,
                            changes={"translations": {**item.translations, "zh-hans": zh}},
                            note="Chinese translation from sample_data")
                changed += 1
            self.stdout.write(f"translations: {changed} updated")
