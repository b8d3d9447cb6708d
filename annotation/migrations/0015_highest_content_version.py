"""Item.highest_content_version: the highest content version an item has had (content versions name contents, so a
revert can take an item back to an earlier one; its rows at the others are then stale). Filled from the revisions."""

from django.db import migrations, models


def fill(apps, schema_editor):
    Item = apps.get_model("annotation", "Item")
    ItemRevision = apps.get_model("annotation", "ItemRevision")
    Item.objects.filter(content_version__gt=1).update(highest_content_version=models.F("content_version"))
    highest = (ItemRevision.objects.filter(item_id=models.OuterRef("pk")).order_by("-content_version")
               .values("content_version")[:1])
    # Items whose history holds a content version above the one they have now (none before content versions
    # named contents, unless changed outside the services).
    (Item.objects.annotate(history=models.Subquery(highest))
     .filter(history__gt=models.F("highest_content_version"))
     .update(highest_content_version=models.Subquery(highest)))


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0014_content_version_names_content"),
    ]

    operations = [
        migrations.AddField(
            model_name="item",
            name="highest_content_version",
            field=models.PositiveIntegerField(default=1, help_text="The highest content version the item has had: above 1, its rows may be at a version other than its content's now (also when a revert took it back to 1)."),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
