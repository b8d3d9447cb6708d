"""Blind review is blind everywhere (issue 19, break 2): while a label is in blind review, nothing the judge
said of it (verdict, belief, rationale, any payload field: similarities, matched_option, votes, samples,
stated_confidence, verdict_without_belief, anchors, anchored_share; the screening suggestion; the clue-graph
draft as a suggestion) reaches anyone who could review it, through any page, partial or API.

The labels are the judge's own: the real JudgeSolver (built-in, and a model judge's scripted replies for the
logprob, verbal and sampled belief sources) gives each outcome, and `label_rows` turns it into the rows a judge
run records through `belief_labels_record`. The responses are not a hand-kept list: every route of the URL
configuration is asked (GET, and GET as htmx), its parameters filled with every object of the world, plus the
"next label" POST of the API and of the page; the reviewer holds a lease in every queue.
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import json
import re
from types import SimpleNamespace

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import BeliefLabel, BeliefLease, ItemStatus, Stage
from annotation.selectors.belief import SUBJECT_FIELDS, reviewer_choices
from annotation.services.belief import belief_labels_record, belief_queue_for, belief_queue_policy_set
from evaluation.execution.judge import _item_input, label_rows
from evaluation.judge.beliefs import TokenLogprob
from evaluation.judge.client import JudgeCompletion
from evaluation.judge.solving import JudgeSolver
from tests.annotation.workflow_support import make_items

pytestmark = pytest.mark.django_db

CLUE_REPLY = {"key_information": [{"quote": "The window was open", "implication": "a way in from outside"},
                                   {"quote": "muddy boots stood by the desk", "implication": "someone came from the garden"},
                                   {"quote": "a kettle whistled downstairs", "implication": "the cook was awake"}],
              "reasoning": [{"inputs": ["a way in from outside", "someone came from the garden"],
                             "output": "the gardener climbed in"}],
              "confidence": 0.7319}
VERDICTS = {"1.1": ("no", 0.9137), "1.2": ("yes", 0.6871), "1.3": ("no", 0.8423), "1.4": ("no", 0.9581),
            "1.5": ("no", 0.7764), "keep": ("delete", 0.8312)}


def _scripted(*texts, logprobs=()):
    calls = []

    async def generate(messages, call_key):
        calls.append(call_key)
        return JudgeCompletion(text=texts[min(len(calls) - 1, len(texts) - 1)], tokens_in=10, tokens_out=5,
                               latency_s=0.01, attempts=1, logprobs=logprobs)

    return generate


def _judge(queue, task: str, source: str, data, *replies, k: int = 1, logprobs=()) -> list[int]:
    """One judgement by the real solver, recorded as a judge run records it; the new labels' ids."""
    solver = JudgeSolver(task=task, belief_source=source)
    outcome = asyncio.run(solver.solve(data, (), _scripted(*replies, logprobs=logprobs) if replies else None, k=k))
    rows = label_rows(SimpleNamespace(task=task, producer=f"judge-run:{queue.name}"), solver, data, outcome)
    before = set(BeliefLabel.objects.filter(queue=queue).values_list("pk", flat=True))
    belief_labels_record(queue=queue, rows=rows)
    return sorted(set(BeliefLabel.objects.filter(queue=queue).values_list("pk", flat=True)) - before)


def _logprob_tokens(verdict: str, other: str):
    pieces = ['{"verdict": "', verdict, '", "rationale": "The answer names the gardener, kettle evidence."}']
    tokens = (TokenLogprob(pieces[0], -0.01), TokenLogprob(verdict, -0.3, ((verdict, -0.3), (other, -1.9))),
              TokenLogprob(pieces[2], -0.01))
    return "".join(pieces), tokens


@pytest.fixture
def world(annotator, annotator2, researcher):
    """Labels of every judge kind in blind queues (k=2), and a reviewer holding a lease in each queue."""
    to_verify = make_items(2, status=ItemStatus.VERIFICATION, source="bv")
    (to_graph,) = make_items(1, status=ItemStatus.CLUE_GRAPH, source="bg")
    answered = make_items(2, status=ItemStatus.PUBLISHED, source="bf")
    queues = {name: belief_queue_for(name=name, blind=True, reviewers_per_label=2)
              for name in ("ft-builtin", "ft-sampled", "ft-verbal", "ft-logprob", "scr-builtin", "scr-verbal",
                           "cg-builtin", "cg-verbal", "ft-same")}
    n = itertools.count(900)

    def free_text(item, answer):
        return _item_input(f"result:{next(n)}", item, answer)

    gold = answered[0].options[answered[0].answer_index]
    for item in answered:
        _judge(queues["ft-builtin"], "free-text", "builtin", free_text(item, f"It is {gold}, surely"))
        _judge(queues["ft-builtin"], "free-text", "builtin", free_text(item, "Somebody from next door"))
        _judge(queues["ft-sampled"], "free-text", "sampled", free_text(item, "The gardener did it"),
               '{"verdict": "incorrect", "rationale": "Sampled: the gardener is not the gold option."}',
               '{"verdict": "correct"}', '{"verdict": "incorrect"}', "not json", '{"verdict": "incorrect"}',
               '{"verdict": "correct"}', '{"verdict": "incorrect"}', k=7)
        _judge(queues["ft-verbal"], "free-text", "verbal", free_text(item, "Mrs Peacock"),
               '{"verdict": "correct", "confidence": 0.6137, "rationale": "Verbal: names the gold option."}')
        # A queue whose labels all have one belief: triage has nothing to order by (and says so to researchers).
        _judge(queues["ft-same"], "free-text", "verbal", free_text(item, "Colonel Mustard"),
               '{"verdict": "incorrect", "confidence": 0.6443, "rationale": "Same: the colonel is no option."}')
        text, tokens = _logprob_tokens("incorrect", "correct")
        _judge(queues["ft-logprob"], "free-text", "logprob", free_text(item, "The butler"), text, logprobs=tokens)
        # An endpoint that sent no log-probabilities: unscored, the verdict kept in the payload.
        _judge(queues["ft-logprob"], "free-text", "logprob", free_text(item, "The cook"),
               '{"verdict": "correct", "rationale": "No-logprob: the cook matches the gold option."}')
    for item in to_verify:
        target = _item_input(f"item:{item.pk}", item)
        _judge(queues["scr-builtin"], "screening", "builtin", target)
        body = {aspect: {"verdict": label, "confidence": belief} for aspect, (label, belief) in VERDICTS.items()}
        body["rationale"] = "Screening: the puzzle leans on arithmetic of the timetable."
        _judge(queues["scr-verbal"], "screening", "verbal", target, json.dumps(body))
    graph_target = _item_input(f"item:{to_graph.pk}", to_graph)
    _judge(queues["cg-builtin"], "clue-graph", "builtin", graph_target)
    _judge(queues["cg-verbal"], "clue-graph", "verbal", graph_target, json.dumps(CLUE_REPLY))
    labels = list(BeliefLabel.objects.select_related("queue").order_by("pk"))
    kinds = {(label.queue.name, label.status) for label in labels}
    assert {("ft-logprob", "unscored"), ("ft-logprob", "scored"), ("ft-sampled", "scored"),
            ("cg-verbal", "scored"), ("scr-verbal", "scored")} <= kinds
    assert any("verdict_without_belief" in label.payload for label in labels)
    assert any("votes" in label.payload for label in labels)
    assert any("similarities" in label.payload for label in labels)
    assert any("stated_confidence" in label.payload for label in labels)
    assert any("anchored_share" in label.payload for label in labels)
    return SimpleNamespace(queues=queues, labels=labels, annotator=annotator, annotator2=annotator2,
                           researcher=researcher, items=[*to_verify, to_graph, *answered])


# ---- what of a label is the judge's

MARKERS = ('id="judge-', 'class="judge-', "The judge says", "The judge said", "judge-payload",
           "Accept the judge", "verdict_without_belief", "stated_confidence", "similarities", "matched_option",
           "anchored_share", '"votes"', "<dt>votes</dt>", "<dt>samples</dt>", "awaiting review have",
           "The judge gave none")


def _values(value, key: str = ""):
    """The distinctive renderings of a judge value: text, and numbers as a page or an API writes them."""
    if isinstance(value, dict):
        for inner_key, inner in value.items():
            yield from _values(inner, inner_key)
    elif isinstance(value, list):
        for inner in value:
            yield from _values(inner, key)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, float):
        if value not in (0.0, 0.5, 1.0):
            yield repr(value)
            yield f"{value:.2f}"
            if key == "anchored_share":
                yield f"{round(value * 100)}%"
    elif isinstance(value, str) and len(value.strip()) >= 8:
        yield value


def judge_values(label: BeliefLabel) -> set[str]:
    """Everything of the judge's in `label` that a page could print (the subject, what the label is
    about, is not the judge's: the graded answer; a clue-graph draft, checked on its own below). Text of
    the item itself (an anchor's quote is a span of the context) is on every page and no sign of a leak,
    nor is a verdict word, which every review form offers as a choice ("incorrect", "delete"): verdicts
    are found by their place (MARKERS) and, in the API, field by field (`_check_api_leases`)."""
    subject = SUBJECT_FIELDS.get(label.task, ())
    found = set(_values(label.rationale)) | set(_values(label.belief))
    found |= set(_values({k: v for k, v in label.payload.items() if k not in subject}))
    item = label.item
    item_text = "\n".join([item.context, item.question, *item.options, item.evidence, item.reasoning])
    return {value for value in found if value not in item_text and value not in reviewer_choices(label)}


def _draft_texts(label: BeliefLabel) -> set[str]:
    return {text for key in ("evidence", "multi_hop_reasoning") for text in _values(label.payload.get(key, ""))}


# ---- every response a reviewer can fetch


def _routes():
    def walk(resolver: URLResolver, prefix: str = ""):
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                yield prefix + str(entry.pattern)

    return sorted(set(walk(get_resolver())))


_PARAM = re.compile(r"<(?:(?P<conv>[^>:]+):)?(?P<name>[^>]+)>|\(\?P<(?P<group>[^>]+)>[^)]*\)")


def _candidates(pattern: str, name: str, world, leases) -> list[str]:
    if pattern.startswith("admin/"):
        return ["1"]
    if name == "pk" and "belief/leases/" in pattern:
        return [str(lease.pk) for lease in leases]
    if name == "pk" and "belief/drafts/" in pattern:
        return [str(label.pk) for label in world.labels if label.task == "clue-graph"]
    if name == "pk" and "items/" in pattern:
        return [str(item.pk) for item in world.items]
    if name == "name":
        return list(world.queues)
    if name == "stage":
        return list(Stage.values)
    if name == "fmt":
        return ["csv", "json"]
    return ["1"]


def concrete_urls(world, leases) -> list[str]:
    urls = []
    for pattern in _routes():
        names = [m["name"] or m["group"] for m in _PARAM.finditer(pattern)]
        choices = [_candidates(pattern, name, world, leases) for name in names]
        for values in itertools.product(*choices):
            url = _PARAM.sub(lambda _, filled=iter(values): next(filled), pattern)
            urls.append("/" + url.replace("^", "").replace("$", ""))
    return urls


def fetch_everything(client: Client, urls: list[str]) -> dict[str, str]:
    """Every GET (plain and as htmx) that does not answer 4xx/3xx, by what was asked."""
    bodies = {}
    for url in urls:
        for htmx in (False, True):
            response = client.get(url, **({"HTTP_HX_REQUEST": "true"} if htmx else {}))
            assert response.status_code < 500, (url, response.status_code)
            if response.status_code == 200 and not getattr(response, "streaming", False):
                bodies[f"GET {url}{' (htmx)' if htmx else ''}"] = response.content.decode("utf-8", "replace")
    return bodies


def take_leases(world, client: Client, user) -> tuple[list[BeliefLease], dict[str, str]]:
    """The next-label POST of the API in every queue (and of the page, which comes back to the same lease)."""
    bodies = {}
    for name in world.queues:
        response = client.post(reverse("annotation_api:belief_next", args=[name]))
        assert response.status_code in (200, 204), response.content  # 204: every label is someone else's now
        if response.status_code == 204:
            continue
        bodies[f"POST next {name}"] = response.content.decode()
        again = client.post(reverse("annotation:belief_next", args=[name]), follow=True)
        assert again.status_code == 200
        bodies[f"POST page next {name}"] = again.content.decode()
    return list(BeliefLease.objects.filter(reviewer=user, status="leased").select_related("label")), bodies


def leaks(bodies: dict[str, str], labels: list[BeliefLabel]) -> list[str]:
    found = []
    values = {label.pk: judge_values(label) for label in labels}  # the same for every body
    for where, body in bodies.items():
        for marker in MARKERS:
            if marker in body:
                found.append(f"{where}: {marker!r}")
        for label in labels:
            for value in values[label.pk]:
                if _appears(value, body):
                    found.append(f"{where}: {label.queue.name} label {label.pk} {value[:60]!r}")
    return found


_NUMBER = re.compile(r"\d+\.\d+%?|\d+%")


def _appears(value: str, body: str) -> bool:
    """Text anywhere; a number as a number of its own (0.06 is not in 12:00:10.060123)."""
    if value not in body:  # the quick test: no number of its own either
        return False
    if _NUMBER.fullmatch(value):
        return re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])", body) is not None
    return value in body


def _check_api_leases(bodies: dict[str, str]) -> None:
    """The next-label answers, field by field: no judge field, a payload of the subject only."""
    for where, body in bodies.items():
        if not where.startswith("POST next "):
            continue
        handed = json.loads(body)
        assert handed["blind"] is True, where
        assert handed["stream"] is None, where  # in triage order "order" says the judge doubted the label
        label = handed["label"]
        assert (label["label"], label["belief"], label["belief_source"], label["rationale"]) == (None,) * 4, where
        assert set(label["payload"]) <= set(SUBJECT_FIELDS.get(label["task"], ())), (where, label["payload"])


def test_a_blind_reviewer_fetches_nothing_the_judge_said(world, client):
    labels = world.labels
    for user in (world.annotator, world.annotator2):
        client.force_login(user)
        leases, bodies = take_leases(world, client, user)
        assert len(leases) == len(world.queues) or user == world.annotator2
        _check_api_leases(bodies)
        urls = concrete_urls(world, leases)
        bodies |= fetch_everything(client, urls)
        assert len(bodies) > 60
        assert any("/verify/" in where for where in bodies) and any("/clue-graph/" in where for where in bodies)
        assert not leaks(bodies, labels), "\n".join(leaks(bodies, labels)[:40])
        # A clue-graph draft reaches only the review page of the lease that hands it out (it is what is
        # reviewed there): never the clue-graph screen, as a suggestion.
        held = {lease.label_id: lease.pk for lease in leases}
        for label in labels:
            if label.task != "clue-graph":
                continue
            for where, body in bodies.items():
                shown = [text for text in _draft_texts(label) if text in body]
                allowed = label.pk in held and (f"/belief/leases/{held[label.pk]}/" in where
                                                or where.startswith("POST "))
                assert not shown or allowed, (where, label.pk, shown)

    # A researcher on the annotators' pages is a reviewer too (researcher pages show everything).
    client.force_login(world.researcher)
    leases, bodies = take_leases(world, client, world.researcher)
    annotator_urls = [u for u in concrete_urls(world, leases)
                      if u.startswith(("/annotation/items/", "/annotation/belief/leases/", "/api/annotation/items/",
                                       "/annotation/queue", "/annotation/belief/"))
                      and "/trust/" not in u and not u.endswith("/belief/trust/")]
    bodies |= fetch_everything(client, annotator_urls)
    assert not leaks(bodies, labels), "\n".join(leaks(bodies, labels)[:40])
    labels_api = client.get(reverse("annotation_api:belief_labels")).content.decode()
    exact = [value for value in judge_values(labels[0]) if not re.fullmatch(r"\d\.\d\d", value)]  # not rounded
    assert exact and all(value in labels_api for value in exact)  # the researcher's own record


def test_the_walk_finds_the_judge_when_review_is_not_blind(world, client):
    """The control: the same walk over the same labels, the queues not blind, finds the judge's values
    (so the blind test above would see a leak)."""
    for queue in world.queues.values():
        belief_queue_policy_set(queue_id=queue.pk, blind=False)
    client.force_login(world.annotator)
    leases, bodies = take_leases(world, client, world.annotator)
    bodies |= fetch_everything(client, concrete_urls(world, leases))
    found = leaks(bodies, world.labels)
    for name in world.queues:
        assert any(f"{name} label" in leak for leak in found), name
    assert any("/verify/" in leak and 'id="judge-' in leak for leak in found)
    assert any("/clue-graph/" in leak and "67%" in leak for leak in found)  # the verbal draft's anchored share


def _shown_values(bodies: dict[str, str], labels: list[BeliefLabel]) -> dict[str, list[str]]:
    """Each judge value that a response shows, with where: the labels carrying it are the ones it may be of (the
    judges here word two items' labels alike, so a value need not name one label)."""
    values = {value for label in labels for value in judge_values(label)}
    shown: dict[str, list[str]] = collections.defaultdict(list)
    for where, body in bodies.items():
        for value in values:
            if _appears(value, body):
                shown[value].append(where)
    return shown


def _unrecorded(bodies: dict[str, str], labels: list[BeliefLabel], user) -> dict[str, tuple]:
    """The judge values shown to `user` in `bodies` none of whose labels has a sighting of theirs."""
    from annotation.models import BeliefSighting

    recorded = set(BeliefSighting.objects.filter(user=user).values_list("label_id", flat=True))
    missing = {}
    for value, where in _shown_values(bodies, labels).items():
        owners = {label.pk for label in labels if value in judge_values(label)}
        if not owners & recorded:
            missing[value[:50]] = (sorted(owners), where[:3])
    return missing


def test_every_response_that_shows_a_judge_records_that_its_reader_saw_it(world, client):
    """The sighting record is complete: walking every route as an annotator over sighted queues, each judge value
    that reached that annotator in any response belongs to a label with a BeliefSighting for them (else a later
    review of it, the queue turned blind meanwhile, would be recorded blind). Discovered, not listed: whatever route
    shows a judge tomorrow is walked too. The blind walk over the same world records none. The pages and the API
    are walked by different people, so that neither's record hides a gap in the other's."""
    from annotation.models import BeliefSighting

    client.force_login(world.annotator)
    take_leases(world, client, world.annotator)
    fetch_everything(client, concrete_urls(world, list(BeliefLease.objects.filter(reviewer=world.annotator))))
    assert not BeliefSighting.objects.filter(user=world.annotator).exists()  # blind: nothing shown, nothing recorded

    for queue in world.queues.values():
        belief_queue_policy_set(queue_id=queue.pk, blind=False)
    # The pages: leases taken with the page's button, then every route.
    client.force_login(world.annotator2)
    for name in world.queues:
        assert client.post(reverse("annotation:belief_next", args=[name]), follow=True).status_code == 200
    leases = list(BeliefLease.objects.filter(reviewer=world.annotator2).select_related("label"))
    bodies = fetch_everything(client, concrete_urls(world, leases))
    assert not _unrecorded(bodies, world.labels, world.annotator2), _unrecorded(bodies, world.labels, world.annotator2)
    places = {where for found in _shown_values(bodies, world.labels).values() for where in found}
    for page in ("/belief/leases/", "/verify/", "/clue-graph/"):
        assert any(page in where for where in places), page
    assert len(leases) >= 7

    # The API: the first annotator asks for the next label again (their own leases, now sighted).
    client.force_login(world.annotator)
    bodies = {}
    for name in world.queues:
        response = client.post(reverse("annotation_api:belief_next", args=[name]))
        if response.status_code == 200:
            bodies[f"POST next {name}"] = response.content.decode()
    assert len(bodies) >= 7 and _shown_values(bodies, world.labels)
    assert not _unrecorded(bodies, world.labels, world.annotator), _unrecorded(bodies, world.labels, world.annotator)


def test_the_judge_shows_once_the_reviewer_answered_or_the_label_has_its_reviews(world, client):
    queue = world.queues["ft-verbal"]
    client.force_login(world.annotator)
    handed = client.post(reverse("annotation_api:belief_next", args=[queue.name])).json()
    assert handed["label"]["belief"] is None
    answer = client.post(reverse("annotation_api:belief_review_submit", args=[handed["lease"]]),
                         {"human_label": "incorrect"}, content_type="application/json")
    assert answer.status_code == 201 and answer.json()["belief"] == 0.6137
    page = client.get(reverse("annotation:belief_review", args=[handed["lease"]])).content.decode()
    assert 'id="judge-reveal"' in page and "0.61" in page
    # The screening suggestions of an item come back for everyone once each has its k reviews.
    item = world.items[0]
    verify = reverse("annotation:verify", args=[item.pk])
    assert 'id="judge-suggestion"' not in client.get(verify).content.decode()
    for user in (world.annotator, world.annotator2):
        client.force_login(user)
        client.post(verify, {"decision": "keep", "item_version": item.version, "comment": ""})
    client.force_login(world.researcher)
    assert 'id="judge-suggestion"' in client.get(verify).content.decode()


def test_a_draft_in_blind_review_cannot_be_taken_by_its_id_and_screen_reviews_record_that_they_were_blind(
        world, client):
    from annotation.models import BeliefReview

    client.force_login(world.annotator)
    draft = next(label for label in world.labels if label.task == "clue-graph")
    graph_item = draft.item
    response = client.post(reverse("annotation:belief_draft", args=[draft.pk]),
                           {"action": "accept", "base_version": graph_item.version})
    assert response.status_code == 302
    graph_item.refresh_from_db()
    assert graph_item.evidence != draft.payload["evidence"]
    assert not BeliefReview.objects.filter(label=draft).exists()
    item = world.items[0]
    client.post(reverse("annotation:verify", args=[item.pk]),
                {"decision": "keep", "item_version": item.version, "comment": ""})
    reviews = BeliefReview.objects.filter(label__item=item, reviewer=world.annotator)
    assert reviews.exists() and all(review.blind for review in reviews)


# ---- other people's verdicts on a label


def _verdicts_shown(bodies: dict[str, str], reviews) -> list[str]:
    """Where a page names another reviewer beside a keep/delete verdict ("ann1: Keep", "kept by ann1, ann2")."""
    found = []
    for review in reviews:
        name = re.escape(review.reviewer.get_username())
        pattern = re.compile(rf"(?i)\b(kept|deleted)\b[^<>\n]{{0,40}}\b{name}\b|\b{name}\b[^<>\n]{{0,3}}(keep|delete)\b")
        found += [f"{where}: {review.reviewer}" for where, body in bodies.items() if pattern.search(body)]
    return found


@pytest.mark.parametrize("second", ["keep", "delete"])
def test_a_label_whose_other_verdicts_can_be_read_is_no_longer_reviewed_blind(
        annotator, annotator2, django_user_model, client, second):
    """A blind screening queue with k=3 and verification by 2: once both have decided, their verdicts (reviews of
    these very labels, made on the verification screen) can be read on the annotators' pages (the history, the
    revisions API, the adjudication pages; the item's status says keep or delete). Walking every route as the third
    annotator finds them; so the queue hands that annotator none of the item's labels, and the lease they took
    before is refused (409), its page offering no answer."""
    from annotation.models import BeliefReview
    from tests.conftest import _make_user

    third = _make_user(django_user_model, "ann3", "annotators")
    (item,) = make_items(1, status=ItemStatus.VERIFICATION, source="ov")
    queue = belief_queue_for(name="scr-k3", blind=True, reviewers_per_label=3, order="audit")
    body = {aspect: {"verdict": label, "confidence": belief} for aspect, (label, belief) in VERDICTS.items()}
    _judge(queue, "screening", "verbal", _item_input(f"item:{item.pk}", item), json.dumps(body))
    client.force_login(third)
    early = client.post(reverse("annotation_api:belief_next", args=[queue.name])).json()
    for user, decision in ((annotator, "keep"), (annotator2, second)):
        item.refresh_from_db()
        other = Client()
        other.force_login(user)
        other.post(reverse("annotation:verify", args=[item.pk]), {
            "decision": decision, "item_version": item.version, "comment": "",
            **({"criteria": ["heavy_math"]} if decision == "delete" else {})})
    labels = list(BeliefLabel.objects.filter(queue=queue).select_related("queue", "item"))
    assert BeliefReview.objects.filter(label__in=labels).count() == 2 * len(labels)
    world = SimpleNamespace(queues={queue.name: queue}, labels=labels, items=[item])
    leases = list(BeliefLease.objects.filter(reviewer=third))
    bodies = fetch_everything(client, concrete_urls(world, leases))
    reviews = BeliefReview.objects.filter(label__in=labels).select_related("reviewer")
    assert _verdicts_shown(bodies, reviews)  # the walk sees the other verdicts (the test is not vacuous)
    answer = client.post(reverse("annotation_api:belief_review_submit", args=[early["lease"]]),
                         {"human_label": "keep" if early["label"]["aspect"] == "keep" else "no"},
                         content_type="application/json")
    assert answer.status_code == 409 and answer.json()["code"] == "verification_decided", answer.content
    assert not BeliefReview.objects.filter(reviewer=third).exists()
    assert client.post(reverse("annotation_api:belief_next", args=[queue.name])).status_code == 204
    page = client.get(reverse("annotation:belief_review", args=[early["lease"]])).content.decode()
    assert 'id="lease-closed"' in page and 'id="review-form"' not in page
