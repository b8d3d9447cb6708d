"""The data-quality report on the real test split (9 items repeat an option, in 4 the correct option's text is
also a wrong one; the answer-position skew), flagged items for analyses, translations, the page and its JSON."""
import json
import time

import pytest
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from scipy import stats

from annotation.models import Item
from evaluation.selectors import quality
from evaluation.statistics.quality_checks import FLAG_KINDS, option_flags, translation_gaps
from foundation.errors import Invalid
from tests.support.items import import_items

pytestmark = pytest.mark.django_db

DUPLICATES = ["232", "433", "479", "521", "603", "783", "911", "927", "3796"]  # measured on v1.3 test.jsonl


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_option_checks():
    assert option_flags(["a", "b", "c"], 0) == {}
    assert set(option_flags(["a", "B ", "b"], 0)) == {"duplicate_options"}
    assert set(option_flags(["x  y", "b", "X Y"], 2)) == {"duplicate_options", "answer_text_repeated"}
    full = {"context": "c", "question": "q", "options": ["1", "2"]}
    assert translation_gaps({"zh": full}, {"zh"}, 2) == []
    assert translation_gaps({"zh": {**full, "options": ["1"]}}, {"zh", "de"}, 2) == ["de", "zh"]
    assert translation_gaps({"zh": {**full, "question": ""}}, {"zh"}, 2) == ["zh"]


def test_report_on_the_real_test_split(detectbench_dir, researcher_client):
    assert import_items(detectbench_dir / "test.jsonl", split="test") == 1196
    started = time.monotonic()
    report = quality.quality_report(split="test")
    first_s = time.monotonic() - started
    counts = {k["kind"]: k["count"] for k in report["kinds"]}
    assert report["n_items"] == 1196
    assert counts["duplicate_options"] == 9 and counts["answer_text_repeated"] == 4
    assert counts["missing_translation"] == 0 and report["languages"] == []
    ids = dict(Item.objects.filter(split="test").values_list("external_id", "pk"))
    duplicate = quality.flagged_item_ids(split="test", kinds=["duplicate_options"])
    assert duplicate == {ids[e] for e in DUPLICATES}
    repeated = quality.flagged_item_ids(split="test", kinds=["answer_text_repeated"])
    records = {str(r["id"]): r for r in _records(detectbench_dir / "test.jsonl")}
    by_pk = {pk: external for external, pk in ids.items()}
    for pk in repeated:  # independently: the correct text stands more than once
        record = records[by_pk[pk]]
        texts = [" ".join(o.split()).casefold() for o in record["options"]]
        assert texts.count(texts[record["answer"]]) == 2
    assert len(repeated) == 4 and repeated < duplicate
    # Unanchored clues: as many as the items have flagged; clue counts add up to the stored facts.
    clues = report["clues"]
    assert clues["clues"] == sum(Item.objects.filter(split="test").values_list("evidence_count", flat=True))
    assert clues["exact"] + clues["fuzzy"] + clues["unanchored"] == clues["clues"] and clues["unanchored"] > 0
    assert counts["unanchored_clue"] == len(quality.flagged_item_ids(split="test", kinds=["unanchored_clue"]))
    assert quality.flagged_item_ids(split="test") == {e["item"] for e in report["flagged"]}
    # Answer position: the paper's data puts the answer first in 571 of 1,196 items.
    positions = report["answer_positions"]
    assert positions["counts"][0] == 571 and sum(positions["counts"]) == 1196
    assert positions["first_share"] == pytest.approx(571 / 1196)
    assert positions["p_value"] == pytest.approx(stats.chisquare(positions["counts"]).pvalue)
    # A second read comes from the cache.
    started = time.monotonic()
    assert quality.quality_report(split="test") == report
    assert time.monotonic() - started < max(0.5, first_s / 5)
    # The page and its JSON (researchers only).
    page = researcher_client.get(reverse("evaluation:quality") + "?split=test").content.decode()
    assert 'data-kind="duplicate_options"><td><code>duplicate_options</code></td><td class="count">9</td>' in page
    assert 'data-kind="answer_text_repeated"><td><code>answer_text_repeated</code></td><td class="count">4</td>' in page
    assert "47.7%" in page and reverse("annotation:item_detail", args=[ids["232"]]) in page
    assert researcher_client.get(reverse("evaluation:quality") + "?split=test&format=json").json() == report
    assert researcher_client.get(reverse("evaluation:quality") + "?split=nope&format=json").status_code == 400
    assert b"Choose a split" in researcher_client.get(reverse("evaluation:quality")).content


def test_an_edit_or_a_translation_is_seen_at_once(detectbench_dir, annotator):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=20)
    before = quality.quality_report(split="test")
    assert before["n_flagged"] == len(before["flagged"])
    items = list(Item.objects.filter(split="test").order_by("pk"))
    first, second = items[0], items[1]
    options = list(first.options)
    options[1] = options[first.answer_index] if first.answer_index != 1 else options[0]
    Item.objects.filter(pk=first.pk).update(options=options, version=F("version") + 1, updated_at=timezone.now())
    translation = {"zh": {"context": "语境", "question": "问题", "options": ["一", "二", "三", "四"]}}
    Item.objects.filter(pk=second.pk).update(translations=translation, version=F("version") + 1,
                                             updated_at=timezone.now())
    after = quality.quality_report(split="test")
    counts = {k["kind"]: k["count"] for k in after["kinds"]}
    assert counts["duplicate_options"] == 1 and counts["answer_text_repeated"] == 1
    assert after["languages"] == ["zh"] and counts["missing_translation"] == 19  # every item but the second
    assert second.pk not in quality.flagged_item_ids(split="test", kinds=["missing_translation"])
    with pytest.raises(Invalid, match="Unknown flag"):
        quality.flagged_item_ids(split="test", kinds=["typo"])
    assert set(FLAG_KINDS) >= {"duplicate_options", "answer_text_repeated", "unanchored_clue", "missing_translation"}
    other = Client()
    other.force_login(annotator)
    assert other.get(reverse("evaluation:quality") + "?split=test").status_code == 403
