"""Migration tests: take the test database to given migrations and back to the latest ones."""
from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets):
    """Migrate the database to `targets` ((app, migration) pairs); the historical apps at that state."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest():
    """Back to the latest migrations of every app (what the other tests expect)."""
    return migrate_to(MigrationExecutor(connection).loader.graph.leaf_nodes())
