"""The PostgreSQL backend of the test settings: Django's own, with one change to how tables are emptied.

After every transactional test (transactional_db, live servers, Celery workers) pytest-django empties
every table with Django's `flush`, which on PostgreSQL is one TRUNCATE of all ~40 tables: a new file for
every table and index, 1-2 s each time on a busy machine. The tables hold a few hundred rows at that
point, so DELETE FROM each of them, in the same transaction with the (deferrable) foreign keys checked
at commit, empties them in milliseconds. Sequences are not reset either way (Django's flush only
resets them when asked, and then, as with CASCADE, this falls back to TRUNCATE).
"""
from django.db.backends.postgresql import operations

from foundation.postgresql import base


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if not tables or reset_sequences or allow_cascade:
            return super().sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return ["SET CONSTRAINTS ALL DEFERRED",
                *(f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))}" for table in tables)]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
