"""Result.item_version: the item version each result saw.

Rows written before this field existed get the version the item had when the row was
last written: the highest revision number created by then (ItemRevision.number equals
the item's version after that change), else 1.
"""

from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery
from django.db.models.functions import Coalesce


def backfill(apps, schema_editor):
    Result = apps.get_model("evaluation", "Result")
    ItemRevision = apps.get_model("annotation", "ItemRevision")
    seen = (ItemRevision.objects.filter(item_id=OuterRef("item_id"), created_at__lte=OuterRef("updated_at"))
            .values("item_id").annotate(latest=Max("number")).values("latest")[:1])
    Result.objects.filter(item_version__isnull=True).update(item_version=Coalesce(Subquery(seen), 1))


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0006_belief_labels"),
        ("evaluation", "0004_run_circular_option_order"),
    ]

    operations = [
        migrations.AddField(
            model_name="result",
            name="item_version",
            field=models.PositiveIntegerField(null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="result",
            name="item_version",
            field=models.PositiveIntegerField(
                help_text="The item's version when it was asked (Item.version); another version now = a stale row."),
        ),
        migrations.AddConstraint(
            model_name="result",
            constraint=models.CheckConstraint(condition=models.Q(item_version__gte=1),
                                              name="result_item_version_positive"),
        ),
    ]
