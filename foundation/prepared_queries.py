"""Querysets compiled once per process, for the reads on the hottest paths (a participant's answer and question).

Django compiles a queryset to SQL each time it is evaluated. For the small fixed reads of an answer (the attempt
with its study, locked; its leases; the answered and the next item) the compiling costs more CPU than PostgreSQL
spends running them: about 1-2 ms each on two cores, a third of an answer's CPU. A `PreparedQuery` builds its
queryset once per database alias with markers in place of the values that change, keeps the compiled SQL, and
then runs that SQL with the values, turning the rows into model instances the way the ORM's own iterable does
(the compiler's converters, `only()`'s deferred fields, `select_related` populators). The SQL is the ORM's, so
the result is the same as evaluating the queryset; tests/foundation/test_prepared_queries.py compares them.
On PostgreSQL that SQL is also prepared on each connection that runs it (foundation.server_statements): planned
once per connection instead of at every request.

Only for querysets of model instances whose values are plain filter values (each marker must appear once among
the compiled parameters); a `select_for_update` one must run inside a transaction, as the ORM requires.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators
from django.db.transaction import TransactionManagementError

from foundation.server_statements import ServerStatement


@dataclass
class _Compiled:
    alias: str
    sql: str
    params: tuple
    slots: tuple[int, ...]          # where each value goes among the parameters
    compiler: Any                   # the compiler that made the SQL: its select list, klass_info, converters
    init_list: list[str]
    start: int
    end: int
    for_update: bool
    converters: dict                # the compiler's value converters of the selected columns
    populators: list                # select_related: how each related object is built from a row
    statement: ServerStatement      # the SQL, prepared on each PostgreSQL connection that runs it


class PreparedQuery:
    """`build(*markers)` returns the queryset; `run(*values)` evaluates it with the values in the markers' places.

    The markers must be values no real call passes and that the fields accept (a string for a text field, an
    int for a key); each must appear exactly once among the compiled parameters.
    """

    def __init__(self, build: Callable[..., QuerySet], *markers: Any):
        self.build, self.markers = build, markers
        self._compiled: _Compiled | None = None  # one database alias: the queryset's own

    def queryset(self, *values: Any) -> QuerySet:
        """The queryset itself, with the values (what `run` is equal to)."""
        return self.build(*values)

    def run(self, *values: Any) -> list[Model]:
        return self.instances(self.rows(*values))

    def rows(self, *values: Any) -> list[tuple]:
        """The rows as the database gives them, for `instances` or `fields` (a caller that needs few instances)."""
        if len(values) != len(self.markers):
            raise TypeError(f"{len(self.markers)} values expected, {len(values)} given")
        compiled = self._compiled or self._compile(self.build(*self.markers))
        connection = connections[compiled.alias]
        if compiled.for_update and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(compiled.params)
        for slot, value in zip(compiled.slots, values):
            params[slot] = value
        with connection.cursor() as cursor:
            compiled.statement.execute(connection, cursor, params)
            return cursor.fetchall()

    def compiled_sql(self) -> tuple[str, tuple, int]:
        """Its SQL and parameters (the markers in their places), compiled once, for a statement built around it, and
        how many columns of a row `instances` reads (a row may have more after them)."""
        compiled = self._compiled or self._compile(self.build(*self.markers))
        return compiled.sql, compiled.params, compiled.end

    def instances(self, rows: list[tuple]) -> list[Model]:
        """The model instances of rows from `rows`, as `run` makes them."""
        return self._instances(self._compiled, rows)

    def fields(self, rows: list[tuple], *names: str) -> list[tuple]:
        """Of each row from `rows`, the values of the model's fields `names` (attnames), converted as the ORM
        converts them (SQLite reads a datetime as text)."""
        compiled = self._compiled
        columns = [compiled.start + compiled.init_list.index(name) for name in names]
        converters = {i: compiled.converters[i] for i in columns if i in compiled.converters}
        if converters:
            rows = compiled.compiler.apply_converters([list(row) for row in rows], converters)
        return [tuple(row[i] for i in columns) for row in rows]

    def first(self, *values: Any) -> Model | None:
        found = self.run(*values)
        return found[0] if found else None

    def _compile(self, queryset: QuerySet) -> _Compiled:
        if queryset._iterable_class is not ModelIterable or queryset._prefetch_related_lookups:
            raise ValueError("only querysets of model instances (no values(), no prefetch_related) can be prepared")
        alias = queryset.db
        compiler = queryset.query.get_compiler(using=alias)
        for_update = bool(queryset.query.select_for_update)
        sql, params = compiler.as_sql()  # the ORM's own checks too (select_for_update outside a transaction)
        slots = []
        for marker in self.markers:
            found = [i for i, param in enumerate(params) if type(param) is type(marker) and param == marker]
            if len(found) != 1:
                raise ValueError(f"the marker {marker!r} appears {len(found)} times among the parameters of {sql}")
            slots.append(found[0])
        klass_info, select = compiler.klass_info, compiler.select
        select_fields = klass_info["select_fields"]
        start, end = select_fields[0], select_fields[-1] + 1
        compiled = _Compiled(alias=alias, sql=sql, params=tuple(params), slots=tuple(slots), compiler=compiler,
                             init_list=[column[0].target.attname for column in select[start:end]], start=start,
                             end=end, for_update=for_update,
                             converters=compiler.get_converters([column[0] for column in select[:compiler.col_count]]),
                             populators=get_related_populators(klass_info, select, alias),
                             statement=ServerStatement(sql, f"q_{queryset.model._meta.db_table}"))
        self._compiled = compiled
        return compiled

    @staticmethod
    def _instances(compiled: _Compiled, rows: list[tuple]) -> list[Model]:
        """As the ORM's ModelIterable: converted values, the model's (deferred) fields, related objects."""
        compiler, alias = compiled.compiler, compiled.alias
        model = compiler.klass_info["model"]
        if compiled.converters:
            rows = compiler.apply_converters(rows, compiled.converters)
        found = []
        for row in rows:
            instance = model.from_db(alias, compiled.init_list, row[compiled.start:compiled.end])
            for populator in compiled.populators:
                populator.populate(row, instance)
            found.append(instance)
        return found


class PreparedUpdate:
    """`build(*markers)` returns (queryset, {field: new value}); `run(*values)` is `queryset.update(**new values)`
    with the values in the markers' places, and returns the number of rows it changed. Django's own UpdateQuery is
    compiled once per database alias; at each run a value that is a new value is prepared by its field
    (`get_db_prep_save`, as the compiler prepares it), one in a filter goes in as it is (as in `PreparedQuery`).
    Each marker must appear exactly once among the compiled parameters. No signals (the ORM's update sends none)."""

    def __init__(self, build: Callable[..., tuple[QuerySet, dict[str, Any]]], *markers: Any):
        self.build, self.markers = build, markers
        self._compiled: tuple[str, ServerStatement, list, list[tuple[int, Any]]] | None = None

    def orm_update(self, *values: Any) -> int:
        """What `run` is equal to: the ORM's own update."""
        queryset, new_values = self.build(*values)
        return queryset.update(**new_values)

    def _compile(self) -> tuple[str, ServerStatement, list, list[tuple[int, Any]]]:
        from django.db.models.sql import UpdateQuery

        queryset, new_values = self.build(*self.markers)
        alias = queryset.db
        connection = connections[alias]
        query = queryset.query.chain(UpdateQuery)  # as QuerySet.update builds it
        query.add_update_values(new_values)
        query.annotations = {}
        sql, params = query.get_compiler(alias).as_sql()
        meta = queryset.model._meta
        slots = []
        for marker in self.markers:
            field = next((meta.get_field(name) for name, value in new_values.items() if value is marker), None)
            sought = field.get_db_prep_save(marker, connection) if field is not None else marker
            found = [i for i, param in enumerate(params) if type(param) is type(sought) and param == sought]
            if len(found) != 1:
                raise ValueError(f"the marker {marker!r} appears {len(found)} times among the parameters of {sql}")
            slots.append((found[0], field))
        self._compiled = (alias, ServerStatement(sql, f"u_{meta.db_table}"), list(params), slots)
        return self._compiled

    def run(self, *values: Any) -> int:
        if len(values) != len(self.markers):
            raise TypeError(f"{len(self.markers)} values expected, {len(values)} given")
        alias, statement, params, slots = self._compiled or self._compile()
        connection = connections[alias]
        params = list(params)
        for (slot, field), value in zip(slots, values):
            params[slot] = field.get_db_prep_save(value, connection) if field is not None else value
        with transaction.mark_for_rollback_on_error(alias), connection.cursor() as cursor:
            statement.execute(connection, cursor, params)
            return cursor.rowcount


class PreparedInsert:
    """`save(instance)`: INSERT one new row of `model` (every concrete field but an unset auto primary key), RETURNING
    its primary key, with the SQL built once per process by Django's own insert compiler; the values are prepared
    by that compiler's methods (`pre_save_val`, `prepare_value`), as `Model.save()` prepares them. No model signals
    are sent: only for models nothing listens to (tests/foundation/test_prepared_queries.py checks)."""

    def __init__(self, model: type[Model], using: str = "default", *, ignore_conflicts: bool = False):
        self.model, self.using, self.ignore_conflicts = model, using, ignore_conflicts
        self._compiled: tuple[ServerStatement, list, Any] | None = None

    def _compile(self, instance: Model) -> tuple[ServerStatement, list, Any]:
        from django.db.models.sql import InsertQuery

        meta = self.model._meta
        fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
        from django.db.models.constants import OnConflict

        query = InsertQuery(self.model, on_conflict=OnConflict.IGNORE if self.ignore_conflicts else None)
        query.insert_values(fields, [instance])
        compiler = query.get_compiler(using=self.using)
        compiler.returning_fields = [meta.pk]
        ((sql, _params),) = compiler.as_sql()
        self._compiled = (ServerStatement(sql, f"i_{meta.db_table}"), fields, compiler)
        return self._compiled

    def save(self, instance: Model) -> Model:
        """INSERT the instance (IntegrityError on a conflict), its new key set; the instance."""
        if self.ignore_conflicts:
            raise TypeError("an insert that ignores conflicts is made with insert_or_none()")
        return self._insert(instance)

    def insert_or_none(self, instance: Model) -> Model | None:
        """`ignore_conflicts`: INSERT ... ON CONFLICT DO NOTHING; the instance with its new key, or None when a unique
        constraint already held such a row (nothing written)."""
        if not self.ignore_conflicts:
            raise TypeError("only an insert made with ignore_conflicts=True answers None on a conflict")
        if not connections[self.using].features.can_return_columns_from_insert:
            raise NotImplementedError("this database cannot say which row an INSERT ... ON CONFLICT wrote")
        return self._insert(instance)

    def _insert(self, instance: Model) -> Model | None:
        if instance.pk is not None or not instance._state.adding:
            raise ValueError("only a new instance without a primary key can be inserted")
        statement, fields, compiler = self._compiled or self._compile(instance)
        params = [compiler.prepare_value(field, compiler.pre_save_val(field, instance)) for field in fields]
        connection = connections[self.using]
        with connection.cursor() as cursor:
            statement.execute(connection, cursor, params)
            if connection.features.can_return_columns_from_insert:
                row = cursor.fetchone()
                if row is None:  # ON CONFLICT DO NOTHING did nothing
                    return None
                instance.pk = row[0]
            else:  # a database without INSERT ... RETURNING (an old SQLite): the id it just gave
                instance.pk = connection.ops.last_insert_id(cursor, self.model._meta.db_table, self.model._meta.pk.column)
        instance._state.adding, instance._state.db = False, self.using
        return instance
