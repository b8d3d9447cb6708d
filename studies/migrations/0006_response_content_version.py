"""Re-pin participants' responses to the item's content version (annotation 0008): a row recorded Item.version, which also rose with
workflow statuses; it now records the content version the item had at that version."""
from django.db import migrations

from annotation.repinning import pinned


def forwards(apps, schema_editor):
    ItemRevision = apps.get_model("annotation", "ItemRevision")
    Row = apps.get_model("studies", "Response")
    mappings: dict[int, dict[int, int]] = {}
    for item_id, number, version in ItemRevision.objects.filter(item__version__gt=1).values_list(
            "item_id", "number", "content_version"):
        mappings.setdefault(item_id, {})[number] = version
    pairs = Row.objects.filter(item_id__in=list(mappings)).values_list("item_id", "item_version").distinct()
    for item_id, old in list(pairs):
        new = pinned(old, mappings[item_id])
        if new != old:
            Row.objects.filter(item_id=item_id, item_version=old).update(item_version=new)


class Migration(migrations.Migration):

    dependencies = [
        ("studies", "0005_attempt_ends_without_start"),
        ("annotation", "0008_item_content_version"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
