"""A study in a language opens only when every pool item and the practice item are translated into each of its
languages, or the researcher leaves the untranslated ones out; the monitor shows the coverage."""
import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Item
from studies.errors import TranslationsMissing
from studies.models import Study, StudyStatus
from studies.services import study_create, study_exclude_untranslated, study_update
from studies.setup_checks import translation_coverage

ZH = {"context": "管家说他整晚都在花园里。", "question": "谁在说谎？", "options": ["管家", "厨师", "园丁", "司机"]}


@pytest.fixture
def sample(db):
    """The shipped sample puzzles: 24 test items, 15 of them (9001-9015) with a Chinese translation."""
    call_command("load_sample_data", stdout=io.StringIO())
    items = list(Item.objects.filter(source="sample", split="test").order_by("id"))
    assert sum(1 for i in items if i.translations.get("zh-hans")) == 15
    return items


def _translated(items):
    return [i for i in items if i.translations.get("zh-hans")]


def _untranslated(items):
    return [i for i in items if not i.translations.get("zh-hans")]


def _setup(**fields):
    return {"per_participant": 2, "raters": 1, "time_limit_seconds": 600, "language": "zh-hans", **fields}


def test_a_chinese_study_with_one_untranslated_item_cannot_open_until_it_is_translated_or_left_out(sample):
    ids = [i.pk for i in _translated(sample)[:5]] + [_untranslated(sample)[0].pk]
    missing = _untranslated(sample)[0]
    with pytest.raises(TranslationsMissing) as refused:
        study_create(slug="zh-open", item_ids=ids, status=StudyStatus.OPEN, **_setup())
    assert refused.value.field == "status" and refused.value.http_status == 400
    assert f"1 pool item ({missing}) has no 简体中文 translation" in refused.value.message
    assert not Study.objects.filter(slug="zh-open").exists()

    study = study_create(slug="zh", item_ids=ids, status=StudyStatus.DRAFT, **_setup())
    with pytest.raises(TranslationsMissing):
        study_update(study_id=study.pk, status=StudyStatus.OPEN)
    assert Study.objects.get(pk=study.pk).status == StudyStatus.DRAFT  # the refused change is rolled back

    # Translating the item lets it open ...
    Item.objects.filter(pk=missing.pk).update(translations={"zh-hans": ZH})
    assert study_update(study_id=study.pk, status=StudyStatus.OPEN).status == StudyStatus.OPEN
    # ... and so does leaving untranslated items out.
    other = study_create(slug="zh-2", item_ids=[i.pk for i in _untranslated(sample)[1:3]] + ids[:3],
                         status=StudyStatus.DRAFT, **_setup())
    assert study_exclude_untranslated(study_id=other.pk) == 2
    opened = study_update(study_id=other.pk, status=StudyStatus.OPEN)
    assert sorted(opened.pool.values_list("item_id", flat=True)) == sorted(ids[:3])


def test_an_untranslated_practice_item_blocks_opening_and_is_not_left_out(sample):
    ids = [i.pk for i in _translated(sample)[:4]]
    practice = _untranslated(sample)[0]
    with pytest.raises(TranslationsMissing) as refused:
        study_create(slug="zh-p", item_ids=ids, status=StudyStatus.OPEN, practice_item=practice,
                     exclude_untranslated=True, **_setup())
    assert "the practice item has no 简体中文 translation" in refused.value.message
    ok = study_create(slug="zh-p", item_ids=ids, status=StudyStatus.OPEN, practice_item=_translated(sample)[-1],
                      **_setup())
    assert ok.status == StudyStatus.OPEN


def test_every_offered_language_needs_its_translations_and_the_original_none(sample):
    ids = [i.pk for i in _translated(sample)[:3]] + [_untranslated(sample)[0].pk]
    english = study_create(slug="en", item_ids=ids, status=StudyStatus.OPEN, **_setup(language=""))
    assert translation_coverage(english) == []
    with pytest.raises(TranslationsMissing):
        study_create(slug="en-zh", item_ids=ids, status=StudyStatus.OPEN, extra_languages=["zh-hans"],
                     **_setup(language=""))


def test_coverage_counts_translated_items_and_the_practice_item(sample):
    ids = [i.pk for i in sample[:20]]  # 15 translated, 5 not
    study = study_create(slug="cov", item_ids=ids, status=StudyStatus.DRAFT, practice_item=sample[-1], **_setup())
    (coverage,) = translation_coverage(study)
    assert (coverage.language, coverage.items, coverage.translated) == ("zh-hans", 20, 15)
    assert [i.pk for i in coverage.missing] == [i.pk for i in sample[15:20]]
    assert coverage.practice_missing and not coverage.complete and coverage.share == 0.75


def test_an_incomplete_translation_does_not_count(sample):
    item = _untranslated(sample)[0]
    Item.objects.filter(pk=item.pk).update(translations={"zh-hans": {**ZH, "options": ZH["options"][:2]}})
    study = study_create(slug="part", item_ids=[item.pk], status=StudyStatus.DRAFT, per_participant=1, raters=1,
                         language="zh-hans")
    assert [i.pk for i in translation_coverage(study)[0].missing] == [item.pk]


def test_monitor_shows_the_coverage_and_leaves_untranslated_items_out(researcher_client, sample):
    ids = [i.pk for i in sample[:20]]
    study = study_create(slug="mon", item_ids=ids, status=StudyStatus.DRAFT, **_setup())
    page = researcher_client.get(reverse("studies:study_monitor", args=["mon"])).content.decode()
    coverage = re.search(r'<section class="card" id="translation-coverage">.*?</section>', page, re.S).group(0)
    assert "15 / 20 (75%)" in coverage and "简体中文" in coverage
    for item in sample[15:20]:
        assert reverse("annotation:item_detail", args=[item.pk]) in coverage
    assert "The study cannot open until" in coverage and 'id="exclude-untranslated"' in coverage
    researcher_client.post(reverse("studies:exclude_untranslated", args=["mon"]))
    assert study.pool.count() == 15
    page = researcher_client.get(reverse("studies:study_monitor", args=["mon"])).content.decode()
    assert "15 / 15 (100%)" in page and 'id="exclude-untranslated"' not in page


def test_the_form_and_the_api_refuse_to_open_and_the_form_can_leave_items_out(researcher_client, sample):
    data = {"slug": "zh-form", "title": "ZH", "status": StudyStatus.OPEN, "pool_split": "test", "seed": 0,
            "per_participant": 3, "raters": 1, "time_limit_minutes": "10", "grace_seconds": 5, "language": "zh-hans",
            "bonus_per_correct": "0", "bonus_currency": "GBP"}
    page = researcher_client.post(reverse("studies:study_create"), data)
    assert page.status_code == 200
    assert "9 pool items (sample#9016, sample#9017" in " ".join(page.context["form"].errors["status"])
    assert "have no 简体中文 translation" in " ".join(page.context["form"].errors["status"])
    api = researcher_client.post("/api/studies/", {**data, "time_limit_seconds": 600}, content_type="application/json")
    assert api.status_code == 400 and api.json()["code"] == "translations_missing"
    assert len(api.json()["untranslated"]["简体中文"]) == 9
    created = researcher_client.post(reverse("studies:study_create"), {**data, "exclude_untranslated": "on"})
    assert created.status_code == 302
    study = Study.objects.get(slug="zh-form")
    assert study.status == StudyStatus.OPEN and study.pool.count() == 15
