"""A refused action reads in the reader's language (issue 20, point 9): the messages services, forms and import checks
refuse with, the notes shown on an item's history, and why the one-scale fit chose its model.

Two ways of finding English that slipped through:

- statically, every call of a refusal (a `ServiceError` subclass, found by walking the class tree, or Django's and
  DRF's `ValidationError`, or an import line's `RecordError`) in the services, forms and pure checks whose message is a
  bare string or f-string literal, not a gettext call; the files other sessions owned when this test was written are
  counted and may not gain any;
- at run time, a set of refusals raised with the reader in Chinese (services called directly, and the API and pages
  asked with the browser in Chinese): none of their messages may hold an English phrase (three words or more; data
  quoted in them aside).
"""
from __future__ import annotations

import ast
import importlib
import io
import pkgutil
import re

import pytest
from django.utils import translation

from foundation.errors import ServiceError
from tests.conftest import REPO_DIR
from tests.support.visible_text import ENGLISH_PHRASE, QUOTED

#: Where refusals are written: the services, forms, error classes and the checks whose words reach a page or an API.
SCANNED = ["annotation/**/*.py", "studies/**/*.py", "evaluation/**/*.py", "foundation/*.py"]
#: English refusals left in files that other sessions owned when the messages were made translatable (the number
#: found then): a file here may only lose them.
LEFT: dict[str, int] = {}
#: Calls whose positional arguments or message keywords are a message for people, besides the ServiceError tree.
OTHER_REFUSALS = {"ValidationError", "RecordError", "Check", "add_error", "Throttled", "PermissionDenied"}
MESSAGE_KEYWORDS = {"message", "detail", "errors"}


def _refusal_names() -> set[str]:
    for package in ("annotation", "studies", "evaluation", "foundation"):
        for module in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            if ".migrations" not in module.name and ".management" not in module.name:
                importlib.import_module(module.name)
    names, stack = set(), [ServiceError]
    while stack:
        cls = stack.pop()
        names.add(cls.__name__)
        stack += cls.__subclasses__()
    return names | OTHER_REFUSALS


def _is_literal(node: ast.AST) -> bool:
    """A message written out in English: a string (not empty) or an f-string, also inside an expression."""
    if isinstance(node, ast.Constant):  # words with a space between them: a code or a field name has none
        return isinstance(node.value, str) and bool(re.search(r"[A-Za-z]{2,}[^\n]*\s", node.value.strip()))
    if isinstance(node, ast.JoinedStr):
        return bool(re.search(r"[A-Za-z]{2,}", "".join(v.value for v in node.values if isinstance(v, ast.Constant)))
                    and " " in "".join(v.value for v in node.values if isinstance(v, ast.Constant)))
    if isinstance(node, ast.BinOp):
        return _is_literal(node.left) or _is_literal(node.right)
    if isinstance(node, ast.IfExp):
        return _is_literal(node.body) or _is_literal(node.orelse)
    if isinstance(node, ast.Dict):
        return any(v is not None and _is_literal(v) for v in node.values)
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_is_literal(v) for v in node.elts)
    return False


def _name(func: ast.AST) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def english_refusals(path, names: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and _name(node.func) in names:
            arguments = list(node.args) + [k.value for k in node.keywords if k.arg in MESSAGE_KEYWORDS]
            if _name(node.func) == "add_error":
                arguments = arguments[1:]  # the field name
            if any(_is_literal(a) for a in arguments):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def test_every_refusal_message_in_the_services_and_forms_is_translated():
    names = _refusal_names()
    assert {"NoSlot", "AnswerRefused", "PreflightRefused", "EmptySelection"} <= names  # the tree was walked
    files = sorted({path for pattern in SCANNED for path in REPO_DIR.glob(pattern)})
    assert len(files) > 40
    found: dict[str, list[str]] = {}
    for path in files:
        for line in english_refusals(path, names):
            found.setdefault(str(path.relative_to(REPO_DIR)), []).append(line)
    grown = {f: lines for f, lines in found.items() if len(lines) > LEFT.get(f, 0)}
    assert not grown, "English refusal messages (wrap them in gettext, named %(placeholders)s):\n" + "\n".join(
        line for lines in grown.values() for line in lines)


def test_the_static_check_finds_an_english_refusal(tmp_path):
    """The check above can fail: a literal, an f-string and a message dict are found; gettext calls are not."""
    sample = tmp_path / "refusal_sample.py"
    sample.write_text('raise Invalid("Choose a split.", field="split")\n'
                      'raise NoSlot(f"{item} is taken")\n'
                      'raise AnswerInvalid({"position": "Not shown yet."})\n'
                      'raise Invalid(gettext("Choose a split."), field="split")\n'
                      'raise AnswerRefused(AnswerRefused.UNKNOWN, gettext("Unknown attempt."), 404)\n')
    found = english_refusals(sample, {"Invalid", "NoSlot", "AnswerInvalid", "AnswerRefused"})
    assert [line.split(":")[1] for line in found] == ["1", "2", "3"]


def _english(text: str) -> list[str]:
    return ENGLISH_PHRASE.findall(QUOTED.sub("", text))


def _refusal_in_chinese(call) -> str:
    with translation.override("zh-hans"):
        with pytest.raises(ServiceError) as refused:
            call()
    return refused.value.message


@pytest.mark.django_db
def test_refusals_raised_for_a_chinese_reader_have_no_english(annotator, researcher):
    from annotation.dataformat import parse_jsonl
    from annotation.item_checks import clue_span_checks, option_checks
    from annotation.models import Stage
    from annotation.services import items_export, review_submit, stage_config_set, verification_submit
    from annotation.services.belief import belief_queue_for, belief_queue_policy_set
    from annotation.services.editing import item_revert
    from annotation.services.leases import items_enter_workflow
    from evaluation.services.endpoint_check import endpoint_connection_check
    from evaluation.services.judge import judge_config_get
    from evaluation.services.sweeps import sweep_estimate
    from studies.content import clean_answer
    from studies.errors import AttemptNotRunning, EmptyPool, PoolFrozen, StudyNotOpen
    from studies.services import highlight_draft_save, response_submit
    from tests.annotation.workflow_support import make_items

    item = make_items(1)[0]
    calls = {
        "unknown stage": lambda: stage_config_set(stage="nowhere", annotators_required=1, lease_minutes=5),
        "k below one": lambda: stage_config_set(stage=Stage.REWRITE, annotators_required=0, lease_minutes=5),
        "no revision": lambda: item_revert(item_id=item.pk, revision_number=99, base_version=item.version),
        "export format": lambda: items_export(items=[], out=io.StringIO(), fmt="xml"),
        "send back without a comment": lambda: review_submit(item_id=item.pk, user=annotator, action="send_back",
                                                             send_back_to=Stage.REWRITE, item_version=item.version),
        "delete without a criterion": lambda: verification_submit(item_id=item.pk, user=annotator, decision="delete",
                                                                  criteria=[], item_version=item.version),
        "not in the stage": lambda: review_submit(item_id=item.pk, user=annotator, action="approve",
                                                  item_version=item.version),
        "queue nothing": lambda: items_enter_workflow(user=researcher),
        "queue name": lambda: belief_queue_for(name="Not a slug!"),
        "queue policy": lambda: belief_queue_for(name="q", random_share=2),
        "no queue": lambda: belief_queue_policy_set(queue_id=10 ** 6, blind=True),
        "no endpoint to test": lambda: endpoint_connection_check(kind="openai", base_url="", model=""),
        "empty sweep": lambda: sweep_estimate(endpoints=[], methods=["Naive"]),
        "no judge": lambda: judge_config_get(name="nobody"),
        "unknown attempt": lambda: response_submit(token="nope", position=0, chosen_option=0),
        "unknown draft": lambda: highlight_draft_save(token="nope", position=0, highlights=[]),
        "bad answer": lambda: clean_answer(context="abc", n_options=2, chosen_option=7, confidence=9,
                                           highlights=[{"start": 0, "end": 9, "text": "x"}]),
    }
    messages = {name: _refusal_in_chinese(call) for name, call in calls.items()}
    with translation.override("zh-hans"):
        messages.update({f"study error {e.code}": e.message for e in (AttemptNotRunning(), EmptyPool(), PoolFrozen(),
                                                                                 StudyNotOpen())})
        parsed = parse_jsonl(io.BytesIO(b'{"id": 1}\n[1]\nnot json\n{"id": 2, "context": "", "question": "q", '
                                        b'"options": ["a"], "answer": 5, "clue_graph": {}}\n'), file="f.jsonl")
        messages.update({f"import line {e.line} {e.field}": e.message for e in parsed.errors})
        checks = option_checks(["a", "", "a"], None) + clue_span_checks("one two three four", [(1, 15)])
        messages.update({f"check {c.kind}": c.message for c in checks})
    assert len(parsed.errors) >= 6 and len(checks) == 4
    english = {name: _english(message) for name, message in messages.items() if _english(message)}
    assert not english, english
    assert all(re.search(r"[\u4e00-\u9fff]", message) for message in messages.values()), messages


@pytest.mark.django_db
def test_api_and_pages_refuse_in_chinese(annotator, researcher):
    from tests.annotation.workflow_support import api_for, client_for, make_items

    chinese = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
    item = make_items(1)[0]
    # An annotator asking a researcher's API; a stale revert through the API; a page refusing a decision.
    forbidden = api_for(annotator).get("/api/studies/", **chinese)
    assert forbidden.status_code == 403 and forbidden.json()["detail"] == "此接口仅供研究人员使用。"
    refused = api_for(annotator).post(f"/api/annotation/items/{item.pk}/verification/",
                                      {"decision": "delete", "item_version": item.version}, format="json", **chinese)
    assert refused.status_code == 400 and refused.json()["code"] == "invalid" and refused.json()["field"] == "criteria"
    assert refused.json()["detail"] == "删除决定至少需要勾选一条标准（表 7，1.1-1.5）。"
    reverted = client_for(annotator).post(f"/annotation/items/{item.pk}/revert/",
                                          {"revision": 99, "base_version": item.version}, **chinese)
    assert reverted.status_code == 404 and f"条目 {item.pk} 没有修订版本 99。" in reverted.content.decode()
    page = client_for(annotator).post(f"/annotation/items/{item.pk}/review/",
                                      {"action": "approve", "item_version": item.version}, **chinese)
    assert page.status_code == 409
    assert "不在“审核”" in page.content.decode()


@pytest.mark.django_db
def test_history_notes_read_in_chinese_and_stay_stored_in_english(annotator, annotator2):
    from annotation.models import ItemRevision, Stage
    from annotation.services import review_submit, stage_submit
    from tests.annotation.workflow_support import client_for, make_items, set_k

    set_k(Stage.CLUE_GRAPH, 1)
    set_k(Stage.REVIEW, 1)
    item = make_items(1, status=Stage.CLUE_GRAPH)[0]
    item = stage_submit(item_id=item.pk, user=annotator, stage=Stage.CLUE_GRAPH, item_version=item.version)
    review_submit(item_id=item.pk, user=annotator2, action="send_back", send_back_to=Stage.REWRITE,
                  comment="Option 3 repeats option 1", item_version=item.version)
    notes = list(ItemRevision.objects.filter(item=item).order_by("number").values_list("note", flat=True))
    assert "clue_graph done" in notes and "review: sent back to rewrite: Option 3 repeats option 1" in notes
    chinese = client_for(annotator).get(f"/annotation/items/{item.pk}/history/",
                                        HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "线索图构建完成" in chinese and "审核：退回到问题改写：Option 3 repeats option 1" in chinese
    assert "review: sent back" not in chinese and "clue_graph done" not in chinese
    detail = client_for(annotator).get(f"/annotation/items/{item.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "审核：退回到问题改写" in detail.content.decode()
    english = client_for(annotator).get(f"/annotation/items/{item.pk}/history/",
                                        HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "review: sent back to rewrite: Option 3 repeats option 1" in english


def test_why_the_one_scale_fit_chose_its_model_reads_in_chinese():
    from evaluation.statistics.irt import choose_model

    with translation.override("zh-hans"):
        rasch, two_pl, asked = choose_model([3, 4, 5]), choose_model([150] * 3), choose_model([1], "2pl")
    assert rasch[0] == "Rasch" and "少于 100 个" in rasch[1] and two_pl[0] == "2PL" and "不少于 100 个" in two_pl[1]
    assert not any(_english(reason) for _, reason in (rasch, two_pl, asked))
    with translation.override("en"):
        assert "fewer than 100" in choose_model([3, 4, 5])[1]
