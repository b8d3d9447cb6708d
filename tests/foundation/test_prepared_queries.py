"""A prepared query gives what its queryset gives: the same SQL, the same rows as the same model instances (fields,
deferred fields, related objects, converted values), for every prepared query in the project (found by scanning
the apps' modules), and it refuses what it cannot do instead of answering wrongly."""
from __future__ import annotations

import importlib
import pkgutil

import pytest
from django.db import connection, transaction
from django.db.models import Model
from django.db.models.signals import post_save, pre_save
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Item
from foundation.prepared_queries import PreparedInsert, PreparedQuery, PreparedUpdate
from foundation.server_statements import plain_statements
from studies.models import Attempt, ParticipantLease, Response, StudyStatus
from studies.services import attempt_start, study_create, study_join
from tests.support.items import import_items

APPS = ("foundation", "annotation", "studies", "evaluation", "detectbench_web")


def _module_level(kind: type) -> dict:
    """Every module-level instance of `kind` in the project's packages, by its dotted name."""
    found = {}
    for package_name in APPS:
        package = importlib.import_module(package_name)
        for module_info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}."):
            if ".migrations" in module_info.name or module_info.name.endswith(".tests"):
                continue
            for name, value in vars(importlib.import_module(module_info.name)).items():
                if isinstance(value, kind):
                    found[f"{module_info.name}.{name}"] = value
    return found


def _prepared_queries() -> dict[str, PreparedQuery]:
    return _module_level(PreparedQuery)


@pytest.fixture(autouse=True)
def _plain_sql():
    """The statements as their plain SQL, to compare with the ORM's (tests/foundation/test_server_statements.py
    checks that the same statements prepared on the server give the same rows)."""
    with plain_statements():
        yield


def _same(a: Model, b: Model) -> None:
    assert type(a) is type(b) and a.pk == b.pk
    assert a.get_deferred_fields() == b.get_deferred_fields()
    loaded = [f.attname for f in a._meta.concrete_fields if f.attname not in a.get_deferred_fields()]
    assert {n: getattr(a, n) for n in loaded} == {n: getattr(b, n) for n in loaded}
    for relation in a._state.fields_cache:  # select_related objects, compared the same way
        _same(a._state.fields_cache[relation], b._state.fields_cache[relation])
    assert set(a._state.fields_cache) == set(b._state.fields_cache)


@pytest.fixture
def attempt(db, detectbench_dir):
    import_items(detectbench_dir / "test.jsonl", split="test", limit=6)
    ids = list(Item.objects.order_by("pk").values_list("pk", flat=True))
    study = study_create(slug="prepared", item_ids=ids, per_participant=3, raters=1, time_limit_seconds=600,
                         status=StudyStatus.OPEN, completion_code="P")
    return attempt_start(attempt_id=study_join(study=study, participant_id="p1").pk)


def _values_for(name: str, attempt: Attempt) -> list[tuple]:
    """Real values for each prepared query's markers (a query with an unknown shape fails here: add it)."""
    lease_items = list(ParticipantLease.objects.filter(attempt=attempt).values_list("item_id", flat=True))
    by_marker_type = {
        "str": [(attempt.token,), (attempt.study.slug,), ("no-such-token",)],
        "int,str": [(attempt.study_id, attempt.token), (attempt.study_id, attempt.external_participant_id),
                    (attempt.study_id, "no-such"), (-1, attempt.token)],
        "int": [(attempt.pk,), (lease_items[0],), (-1,)],
        "int,int": [(lease_items[0], lease_items[1]), (lease_items[0], lease_items[0]), (-1, -2)],
    }
    return by_marker_type[",".join(type(m).__name__ for m in _prepared_queries()[name].markers)]


def test_the_project_has_prepared_queries_to_check():
    assert {"studies.services.responses._LOCKED_ATTEMPT", "studies.selectors.participants._ATTEMPT_BY_TOKEN",
            "studies.services.responses._LEASES", "studies.selectors.participants._STUDY_BY_SLUG",
            "studies.selectors.participants._OWN_ATTEMPT",
            "studies.selectors.participants._ATTEMPT_OF_PARTICIPANT"} <= set(_prepared_queries())


@pytest.mark.parametrize("name", sorted(_prepared_queries()))
def test_every_prepared_query_equals_its_queryset(name, attempt):
    prepared = _prepared_queries()[name]
    for values in _values_for(name, attempt):
        with transaction.atomic():  # some lock rows (select_for_update), as their callers do
            with CaptureQueriesContext(connection) as orm:
                expected = list(prepared.queryset(*values))
            with CaptureQueriesContext(connection) as ours:
                got = prepared.run(*values)
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            _same(a, b)
        with transaction.atomic():  # the rows read for `fields`: each field's value as the instance holds it
            names = list(prepared._compiled.init_list)
            fields = prepared.fields(prepared.rows(*values), *names)
        assert fields == [tuple(getattr(instance, name) for name in names) for instance in expected]
        if len(set(values)) == len(values):  # (the ORM writes IN (7) for IN (7, 7); the rows are the same)
            assert [q["sql"] for q in ours] == [q["sql"] for q in orm]  # one statement, the ORM's own, same values


@pytest.mark.django_db(transaction=True)
def test_a_locking_query_outside_a_transaction_is_refused_as_the_orm_refuses_it(attempt):
    locking = PreparedQuery(lambda token: Attempt.objects.select_for_update().filter(token=token), "marker")
    with pytest.raises(TransactionManagementError):
        locking.run(attempt.token)
    with transaction.atomic():
        assert [a.pk for a in locking.run(attempt.token)] == [attempt.pk]
    with pytest.raises(TransactionManagementError):  # compiled now: still refused
        locking.run(attempt.token)


def test_a_marker_that_is_not_exactly_once_among_the_parameters_is_refused(db):
    with pytest.raises(ValueError, match="appears 0 times"):
        PreparedQuery(lambda v: Attempt.objects.filter(token="fixed"), "marker").run("x")
    with pytest.raises(ValueError, match="appears 2 times"):
        PreparedQuery(lambda v: Attempt.objects.filter(token=v, external_participant_id=v), "marker").run("x")
    with pytest.raises(ValueError, match="model instances"):
        PreparedQuery(lambda v: Attempt.objects.filter(token=v).values("pk"), "marker").run("x")
    with pytest.raises(TypeError, match="1 values expected"):
        PreparedQuery(lambda v: Attempt.objects.filter(token=v), "marker").run("x", "y")


def test_values_are_parameters_never_sql(attempt):
    prepared = PreparedQuery(lambda token: Attempt.objects.filter(token=token), "marker")
    assert prepared.run("x' OR '1'='1") == []
    assert [a.pk for a in prepared.run(attempt.token)] == [attempt.pk]


def _prepared_inserts() -> dict[str, PreparedInsert]:
    return _module_level(PreparedInsert)


def test_the_project_has_prepared_inserts_and_nothing_listens_to_their_models_signals():
    inserts = _prepared_inserts()
    assert "studies.services.responses._RESPONSE_INSERT" in inserts
    for name, insert in inserts.items():  # save() sends no pre_save/post_save: nothing may be waiting for them
        assert not pre_save.has_listeners(insert.model) and not post_save.has_listeners(insert.model), name


def test_an_answer_inserted_prepared_is_the_row_the_orm_inserts(attempt):
    lease = ParticipantLease.objects.filter(attempt=attempt).order_by("position").first()
    other = ParticipantLease.objects.filter(attempt=attempt).order_by("position")[1]
    now = timezone.now()

    def answer(for_lease):
        return Response(attempt=attempt, item_id=for_lease.item_id, lease=for_lease, chosen_option=2, confidence=None,
                        highlights=[{"start": 0, "end": 3, "text": "The"}], language="", is_correct=False,
                        item_version=1, shown_at=now, answered_at=now, is_late=True)

    insert = PreparedInsert(Response)
    with CaptureQueriesContext(connection) as ours:
        mine = insert.save(answer(lease))
    with CaptureQueriesContext(connection) as orm:
        theirs = answer(other)
        theirs.save()
    assert mine.pk and not mine._state.adding and mine._state.db == "default"
    ours_sql, orm_sql = ours[0]["sql"], orm[0]["sql"]
    assert ours_sql.split(" VALUES ")[0] == orm_sql.split(" VALUES ")[0] and len(ours) == len(orm) == 1
    stored = {r.pk: r for r in Response.objects.filter(pk__in=[mine.pk, theirs.pk])}
    skip = {"id", "lease_id", "item_id"}
    fields = [f.attname for f in Response._meta.concrete_fields if f.attname not in skip]
    assert {f: getattr(stored[mine.pk], f) for f in fields} == {f: getattr(stored[theirs.pk], f) for f in fields}
    assert stored[mine.pk].highlights == [{"start": 0, "end": 3, "text": "The"}]
    with pytest.raises(ValueError):
        insert.save(mine)  # not new: refused, nothing written twice


def _prepared_updates() -> dict[str, PreparedUpdate]:
    return _module_level(PreparedUpdate)


def test_the_project_has_prepared_updates_to_check():
    assert "studies.services.questions._SHOWN_AT_UPDATE" in _prepared_updates()


class _Rollback(Exception):
    pass


@pytest.mark.parametrize("name", sorted(_prepared_updates()))
def test_every_prepared_update_equals_the_orms_update(name, attempt):
    prepared = _prepared_updates()[name]
    model = prepared.build(*prepared.markers)[0].model
    rows = list(model.objects.order_by("pk").values_list("pk", flat=True))
    now = timezone.now()
    by_type = {"int": [rows[0], rows[-1], -1], "datetime": [now, now.replace(microsecond=1)], "str": ["x", "y"]}
    kinds = [type(marker).__name__ for marker in prepared.markers]
    changed = []
    for i in range(3):
        values = tuple(by_type[kind][min(i, len(by_type[kind]) - 1)] for kind in kinds)
        outcomes, sent = [], []
        # Ours as plain SQL, the ORM's, ours prepared on the server (PREPARE once, then EXECUTE).
        for call, plain in ((prepared.run, True), (prepared.orm_update, True), (prepared.run, False)):
            try:
                with transaction.atomic(), plain_statements(plain), CaptureQueriesContext(connection) as ran:
                    count = call(*values)
                    after = list(model.objects.order_by("pk").values())
                    raise _Rollback
            except _Rollback:
                pass
            outcomes.append((count, after))
            sent.append([q["sql"] for q in ran][:-1])  # the last one is the read of every row
        assert outcomes[0] == outcomes[1] == outcomes[2], (name, values)  # rows changed, every row afterwards
        assert sent[0] == sent[1]  # the statement: the ORM's own
        _executed(ran[:-1], prepared._compiled[1])
        changed.append(outcomes[0][0])
    assert any(changed) and changed[-1] == 0, changed  # it changed a row, and none of no row (-1)


def _held(name: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE name = %s", [name])
        row = cursor.fetchone()
    return row[0] if row else None


def _executed(ran, statement) -> None:
    """What ran was the statement's EXECUTE alone, its PREPARE (if any, in a savepoint) before it, the ORM's SQL."""
    sent = [q["sql"] for q in ran if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert sent[-1].startswith(f"EXECUTE {statement.name}") and len(sent) <= 2, sent
    assert _held(statement.name) == statement.prepare_sql


@pytest.mark.parametrize("name", sorted(_prepared_queries()))
def test_every_prepared_query_run_prepared_on_the_server_gives_its_querysets_instances(name, attempt):
    prepared = _prepared_queries()[name]
    for values in _values_for(name, attempt):
        with transaction.atomic():
            expected = list(prepared.queryset(*values))
            with plain_statements(False):
                prepared.run(*values)  # prepared on this connection (if not yet)
                with CaptureQueriesContext(connection) as ran:
                    got = prepared.run(*values)
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            _same(a, b)
        statement = prepared._compiled.statement
        assert len(ran) == 1 and ran[0]["sql"].startswith(f"EXECUTE {statement.name}(")
        assert statement.sql == prepared.queryset(*prepared.markers).query.sql_with_params()[0]  # the ORM's SQL
        _executed(ran, statement)


def test_an_insert_run_prepared_on_the_server_returns_its_new_key(attempt):
    insert = PreparedInsert(Attempt)
    with plain_statements(False):
        made = [insert.save(Attempt(study=attempt.study, external_participant_id="server-0"))]
        with CaptureQueriesContext(connection) as ran:
            made.append(insert.save(Attempt(study=attempt.study, external_participant_id="server-1")))
    assert [a.pk for a in made] == list(Attempt.objects.filter(external_participant_id__startswith="server-")
                                        .order_by("pk").values_list("pk", flat=True))
    _executed(ran, insert._compiled[0])


def test_an_insert_that_ignores_conflicts_answers_none_and_writes_nothing_on_one(attempt):
    insert = PreparedInsert(Attempt, ignore_conflicts=True)
    before = Attempt.objects.count()
    taken = Attempt(study=attempt.study, external_participant_id=attempt.external_participant_id)  # unique per study
    assert insert.insert_or_none(taken) is None and taken.pk is None and taken._state.adding
    new = insert.insert_or_none(Attempt(study=attempt.study, external_participant_id="another"))
    assert new.pk and Attempt.objects.get(pk=new.pk).external_participant_id == "another"
    assert Attempt.objects.count() == before + 1
    with pytest.raises(TypeError):
        insert.save(Attempt(study=attempt.study, external_participant_id="third"))
    with pytest.raises(TypeError):
        PreparedInsert(Attempt).insert_or_none(Attempt(study=attempt.study, external_participant_id="fourth"))
