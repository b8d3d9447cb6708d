"""Data in every backed-up table, made the way the app makes it: real DetectBench items through the import
service, the curation workflow, a study with answers and a refusal, a model run and a judge run computed in
process, belief reviews. Leaves some work open (leases, a draft) so that unfinished states are backed up too."""
from __future__ import annotations

from django.contrib.auth.models import Group, Permission, User

from annotation.models import BeliefLabel, Item, Stage
from annotation.selectors.belief import shown_label
from annotation.services import (
    adjudication_resolve,
    belief_lease_next,
    belief_review_submit,
    draft_save,
    item_edit,
    item_update,
    items_enter_workflow,
    lease_next,
    review_submit,
    stage_config_set,
    stage_submit,
    verification_submit,
)
from annotation.services.belief_sightings import belief_sightings_record
from evaluation.services import judge as judge_services
from evaluation.services import runs as evaluation_services
from studies.errors import AnswerRefused
from studies.models import StudyStatus
from studies.services import attempt_start, response_submit, study_create, study_join
from studies.services.responses import question_open
from tests.support.items import import_items

#: An API key that must never reach a backup (the endpoint stores only the variable's name).
API_KEY_ENV = "BACKUP_TEST_API_KEY"
API_KEY_VALUE = "sk-backup-test-secret-0123456789"
ITEMS = 10


def _user(username: str, group: str, **extra) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username, email=f"{username}@example.org",
                                    **extra)
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def _curation(items: list[Item], ann1: User, ann2: User, res: User) -> None:
    stage_config_set(stage=Stage.VERIFICATION, annotators_required=2, lease_minutes=30)
    for stage in (Stage.REWRITE, Stage.CLUE_GRAPH, Stage.REVIEW):
        stage_config_set(stage=stage, annotators_required=1, lease_minutes=45)
    items_enter_workflow(user=res, item_ids=[item.pk for item in items[:3]])
    # Item 0: both keep -> rewrite -> clue graph -> review -> published; item 1: they disagree -> adjudicated.
    for annotator, decisions in ((ann1, ("keep", "keep")), (ann2, ("keep", "delete"))):
        for decision in decisions:
            lease = lease_next(user=annotator, stage=Stage.VERIFICATION)
            item = Item.objects.get(pk=lease.item_id)
            verification_submit(item_id=item.pk, user=annotator, decision=decision,
                                criteria=["heavy_math"] if decision == "delete" else [],
                                comment=f"{annotator.username} says {decision}", item_version=item.version)
    adjudication_resolve(adjudication_id=items[1].adjudications.get().pk, user=res, decision="keep",
                         comment="the maths is light")
    item = Item.objects.get(pk=items[0].pk)
    lease_next(user=ann1, stage=Stage.REWRITE)
    item = item_edit(item_id=item.pk, base_version=item.version, changes={"question": item.question + " (edited)"},
                     user=ann1, stage=Stage.REWRITE, note="clearer question", finish=True)
    lease_next(user=ann1, stage=Stage.CLUE_GRAPH)
    item = stage_submit(item_id=item.pk, user=ann1, stage=Stage.CLUE_GRAPH, item_version=item.version)
    lease_next(user=ann2, stage=Stage.REVIEW)
    review_submit(item_id=item.pk, user=ann2, action="approve", item_version=item.version, comment="fine")
    # Open work: item 1 is in rewrite, leased to ann2 with a draft; item 2 waits in verification leased to ann1.
    lease = lease_next(user=ann2, stage=Stage.REWRITE)
    draft_save(item_id=lease.item_id, user=ann2, stage=Stage.REWRITE, base_version=lease.item.version,
               data={"question": "half-typed 问题 \u2028 with a line separator", "ratio": 0.1})
    lease_next(user=ann1, stage=Stage.VERIFICATION)


def _study(items: list[Item], res: User) -> None:
    study = study_create(slug="backup-study", title="Backup study", item_ids=[item.pk for item in items[3:9]],
                         per_participant=2, raters=2, time_limit_seconds=600, status=StudyStatus.OPEN,
                         completion_code="DONE-42", bonus_per_correct="0.35", user=res)
    finished = attempt_start(attempt_id=study_join(study=study, participant_id="PID-1", session_id="S1").pk)
    for _ in range(2):
        question = question_open(attempt=finished)
        response_submit(token=finished.token, position=question.lease.position, chosen_option=1, confidence=4,
                        highlights=[{"start": 0, "end": 5, "text": question.lease.item.context[:5]}])
    try:  # a replayed answer: refused and kept as a RefusedAnswer
        response_submit(token=finished.token, position=question.lease.position, chosen_option=0)
    except AnswerRefused:
        pass
    running = attempt_start(attempt_id=study_join(study=study, participant_id="PID-2").pk)
    question_open(attempt=running)  # shown, not answered: an active participant lease
    study_join(study=study, participant_id="PID-3")  # consented, not started
    _prolific(study, finished, res)


def _prolific(study, finished, res: User) -> None:
    """The study's Prolific side: its connection, a submission, a logged webhook delivery, a paid bonus batch."""
    from decimal import Decimal

    from django.utils import timezone

    from studies.prolific.models import (
        BonusBatch,
        BonusPayment,
        ProlificConnection,
        ProlificSubmission,
        ProlificWebhookDelivery,
    )

    now = timezone.now()
    connection = ProlificConnection.objects.create(study=study, prolific_study_id="PS-1", token_env="PROLIFIC_TOKEN")
    ProlificSubmission.objects.create(submission_id="S1", participant_id="PID-1", connection=connection,
                                      attempt=finished, status="AWAITING REVIEW", status_at=now)
    ProlificWebhookDelivery.objects.create(event_id="ev-1", event_type="submission.status.change", resource_id="S1",
                                           status="AWAITING REVIEW", sent_at=now, outcome="applied", attempt=finished)
    batch = BonusBatch.objects.create(study=study, state="sent", currency="GBP", total=Decimal("0.70"),
                                      proposed_by=res, approved_by=res, approved_at=now, sent_at=now)
    BonusPayment.objects.create(batch=batch, attempt=finished, participant_id="PID-1", correct=2,
                                amount=Decimal("0.70"))


def _evaluation(res: User) -> None:
    evaluation_services.endpoint_create(name="remote-model", base_url="http://127.0.0.1:9/v1", model="some-model",
                                        api_key_env=API_KEY_ENV, temperature=0.95, top_p=0.95,
                                        extra_params={"top_k": 5}, price_in_per_mtok="0.1500")
    endpoint = evaluation_services.endpoint_for_cli(builtin="lexical")
    for method in ("naive", "free-text"):
        run = evaluation_services.run_launch(endpoint=endpoint, method=method, split="test", limit=4, samples=2,
                                             user=res, enqueue=False, note=f"backup {method}")
        evaluation_services.run_execute_in_process(run=run)
    # An item of the last run changed, and the run refreshed: its old rows are kept (evaluation.supersededresult).
    asked = Item.objects.get(pk=run.item_ids[0])
    item_update(item_id=asked.pk, base_version=asked.version, user=res, changes={"question": asked.question + " (r)"})
    run, superseded = evaluation_services.run_refresh(run=run, user=res, enqueue=False)
    assert superseded == 2
    evaluation_services.run_execute_in_process(run=run)
    config = judge_services.judge_config_builtin()
    judge_run = judge_services.judge_run_launch(config=config, task="screening", split="test", limit=3, user=res,
                                                enqueue=False)
    judge_services.judge_run_execute_in_process(judge_run=judge_run)
    # A position probe of it: its labels are in their own table (evaluation.judgeprobelabel).
    probe = judge_services.judge_probe_launch(judge_run=judge_run, kind="reversed", sample=2, user=res, enqueue=False)
    judge_services.judge_run_execute_in_process(judge_run=probe)


def _belief_reviews(ann1: User, ann2: User) -> None:
    queue_id = BeliefLabel.objects.order_by("pk").first().queue_id
    lease = belief_lease_next(queue_id=queue_id, user=ann1)
    belief_review_submit(lease_id=lease.pk, user=ann1, human_label=lease.label.choices[-1], comment="checked")
    # Once answered, its judge is shown to ann1 (annotation.beliefsighting).
    belief_sightings_record(user=ann1, shown=[shown_label(lease.label, user=ann1)], via="belief_review")
    belief_lease_next(queue_id=queue_id, user=ann2)  # handed out, not answered


def build_everything(data_dir) -> dict[str, int]:
    """Fill every backed-up table; returns rows per table label."""
    ann1, ann2 = _user("ann1", "annotators"), _user("ann2", "annotators")
    res = _user("res1", "researchers", is_staff=True, first_name="Ré", last_name="Searcher")
    res.user_permissions.add(Permission.objects.get(codename="view_item", content_type__app_label="annotation"))
    Group.objects.get(name="researchers").permissions.add(
        Permission.objects.get(codename="add_study", content_type__app_label="studies"))
    import_items(data_dir / "test.jsonl", split="test", limit=ITEMS)
    items = list(Item.objects.order_by("pk"))
    _curation(items, ann1, ann2, res)
    _study(items, res)
    _evaluation(res)
    _belief_reviews(ann1, ann2)
    from detectbench_web.backup import backed_up_models

    return {m._meta.label_lower: m._base_manager.count() for m in backed_up_models()}
