"""Participant pages in Chinese: UI strings from locale/zh_Hans, items from their translation, KeyInfo by character."""
import json
import re

from django.urls import reverse

from annotation.models import Item
from studies.models import Attempt, Response
from studies.selectors import study_results

ZH = {"context": "管家说他整晚都在花园里。但是他的鞋子是干的，而昨晚下了雨。", "question": "谁在说谎？",
      "options": ["管家", "厨师", "园丁", "司机"], "evidence": "他的鞋子是干的 -> 他没有在花园里\n昨晚下了雨 -> 花园是湿的"}


def test_chinese_study_shows_translated_item_and_ui_and_scores_keyinfo_by_character(client, make_study, items):
    ids = items(3)
    Item.objects.filter(pk__in=ids).update(translations={"zh-hans": ZH})
    study = make_study(n_items=3, per_participant=1, raters=1, language="zh-hans")
    landing = client.get(reverse("studies_public:landing", args=[study.slug]), {"PROLIFIC_PID": "zh1"})
    assert "我已阅读以上说明并同意参加。" in landing.content.decode()
    join = client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "zh1"})
    attempt = Attempt.objects.get()
    assert "开始" in client.get(join.url).content.decode()
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    assert "第 1 题，共 1 题" in page and "剩余时间" in page and ZH["context"] in page and "管家" in page
    start = ZH["context"].index("他的鞋子是干的")
    highlight = [{"start": start, "end": start + 7, "text": "他的鞋子是干的"}]
    position = re.search(r'data-position="(\d+)"', page).group(1)
    done = client.post(reverse("studies_public:answer", args=[attempt.token]), {
        "position": position, "chosen_option": 0, "highlights": json.dumps(highlight, ensure_ascii=False)})
    assert done.status_code == 302
    assert "谢谢参与" in client.get(done.url).content.decode()
    assert Response.objects.get().language == "zh-hans"
    results = study_results(study)
    assert results.keyinfo is not None and results.keyinfo > 0.5  # rouge-score alone would give 0 for Chinese


def test_browser_language_switches_the_ui_when_the_study_has_none(client, make_study):
    study = make_study()
    page = client.get(reverse("studies_public:landing", args=[study.slug]), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "研究说明与知情同意" in page.content.decode()
    english = client.get(reverse("studies_public:landing", args=[study.slug]), HTTP_ACCEPT_LANGUAGE="en")
    assert "Information and consent" in english.content.decode()


def test_chinese_practice_feedback_and_field_errors(client, make_study, items):
    Item.objects.filter(pk__in=items(12)).update(translations={"zh-hans": ZH})  # an open Chinese study needs them
    practice = Item.objects.get(pk=items(12)[-1])
    study = make_study(language="zh-hans", practice_item=practice)
    client.post(reverse("studies_public:join", args=[study.slug]), {"consent": "yes", "PROLIFIC_PID": "zh2"})
    attempt = Attempt.objects.get()
    url = reverse("studies_public:practice", args=[attempt.token])
    assert "答对了" in client.post(url, {"chosen_option": practice.answer_index}).content.decode()
    page = client.post(reverse("studies_public:start", args=[attempt.token]), follow=True).content.decode()
    position = re.search(r'data-position="(\d+)"', page).group(1)
    bad = client.post(reverse("studies_public:answer", args=[attempt.token]),
                      {"position": position, "chosen_option": 0, "confidence": "9"})
    assert bad.status_code == 400 and "把握程度必须在 1 到 5 之间" in bad.content.decode()
