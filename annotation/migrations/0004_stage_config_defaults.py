from django.db import migrations

# Paper appendix B: verification is done independently by two annotators; the other stages by one.
DEFAULTS = {"verification": 2, "rewrite": 1, "clue_graph": 1, "review": 1}


def seed(apps, schema_editor):
    StageConfig = apps.get_model("annotation", "StageConfig")
    for stage, k in DEFAULTS.items():
        StageConfig.objects.get_or_create(stage=stage, defaults={"annotators_required": k, "lease_minutes": 30})


class Migration(migrations.Migration):
    dependencies = [("annotation", "0003_workflow")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
