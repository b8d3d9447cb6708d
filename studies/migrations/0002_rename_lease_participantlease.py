from django.db import migrations


class Migration(migrations.Migration):
    """`Lease` -> `ParticipantLease`: a participant's lease, not an annotator's (annotation.AnnotatorLease)."""

    dependencies = [
        ("studies", "0001_initial"),
    ]

    operations = [
        migrations.RenameModel(old_name="Lease", new_name="ParticipantLease"),
    ]
