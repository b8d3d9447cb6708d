"""Re-pin model results to the item's content version (annotation 0008): a row recorded Item.version, which also rose
with workflow statuses; it now records the content version the item had at that version."""
from django.db import migrations

from annotation.repinning import repin_rows


def forwards(apps, schema_editor):
    repin_rows(apps, "evaluation", "Result")


class Migration(migrations.Migration):

    dependencies = [
        ("evaluation", "0008_endpoint_version"),
        ("annotation", "0008_item_content_version"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
