"""Response.item_version: the item version each answer was scored on.

Answers given before this field existed get the version the item had when they were given: the
highest revision number created by then (ItemRevision.number equals the item's version after
that change), else 1.
"""

from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery
from django.db.models.functions import Coalesce


def backfill(apps, schema_editor):
    Response = apps.get_model("studies", "Response")
    ItemRevision = apps.get_model("annotation", "ItemRevision")
    seen = (ItemRevision.objects.filter(item_id=OuterRef("item_id"), created_at__lte=OuterRef("answered_at"))
            .values("item_id").annotate(latest=Max("number")).values("latest")[:1])
    Response.objects.filter(item_version__isnull=True).update(item_version=Coalesce(Subquery(seen), 1))


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0006_belief_labels"),
        ("studies", "0003_study_texts_languages_timeout"),
    ]

    operations = [
        migrations.AddField(
            model_name="response",
            name="item_version",
            field=models.PositiveIntegerField(null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="response",
            name="item_version",
            field=models.PositiveIntegerField(help_text="The item's version (Item.version) the answer was scored on."),
        ),
        migrations.AddConstraint(
            model_name="response",
            constraint=models.CheckConstraint(condition=models.Q(item_version__gte=1),
                                              name="response_item_version_positive"),
        ),
    ]
