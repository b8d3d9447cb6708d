"""The large text columns of a result row (every call's messages, the raw output) compressed with lz4 instead of
PostgreSQL's default pglz where the server has lz4 (PostgreSQL >= 14 built with it, as Debian's and the official
images are): a row's messages (~2.6 KB, the whole prompt) were compressed with pglz on every write, a fifth of
PostgreSQL's CPU for a row, and lz4 does it in a fraction of that (tests/perf/test_evaluation_scale.py). Values
already stored stay as they are (PostgreSQL reads both). Nothing on SQLite or a server without lz4."""
from django.db import migrations

COLUMNS = ("messages", "raw_output")


def _set(method: str):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for column in COLUMNS:
            schema_editor.execute(f"""
                DO $$ BEGIN
                    ALTER TABLE evaluation_result ALTER COLUMN {column} SET COMPRESSION {method};
                EXCEPTION WHEN feature_not_supported THEN
                    RAISE NOTICE 'no lz4 on this server: evaluation_result.{column} keeps its compression';
                END $$""")

    return apply


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0011_judge_position_probe")]

    operations = [migrations.RunPython(_set("lz4"), _set("default"), elidable=True)]
