"""Each participant lease records the content version and the language its question was shown at.

Leases shown before: an answered one takes what its answer recorded; another one shown (timed out, released, open)
the content version the item had when it was shown (its last revision by then) and the attempt's language.
"""
from django.db import migrations, models
from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def fill_shown(apps, schema_editor):
    Lease = apps.get_model("studies", "ParticipantLease")
    Response = apps.get_model("studies", "Response")
    Attempt = apps.get_model("studies", "Attempt")
    Revision = apps.get_model("annotation", "ItemRevision")
    answer = Response.objects.filter(lease_id=OuterRef("pk"))
    Lease.objects.filter(shown_content_version__isnull=True, response__isnull=False).update(
        shown_content_version=Subquery(answer.values("item_version")[:1]),
        shown_language=Subquery(answer.values("language")[:1]))
    at_shown = (Revision.objects.filter(item_id=OuterRef("item_id"), created_at__lte=OuterRef("shown_at"))
                .order_by("-number").values("content_version")[:1])
    Lease.objects.filter(shown_content_version__isnull=True, shown_at__isnull=False).update(
        shown_content_version=Coalesce(Subquery(at_shown), Value(1)),
        shown_language=Subquery(Attempt.objects.filter(pk=OuterRef("attempt_id")).values("language")[:1]))


class Migration(migrations.Migration):

    dependencies = [
        ('studies', '0011_lease_draft_revision'),
        ('annotation', '0008_item_content_version'),
    ]

    operations = [
        migrations.AddField(
            model_name='participantlease',
            name='shown_content_version',
            field=models.PositiveIntegerField(blank=True, help_text="The item's content version (Item.content_version) the question was last shown at: an answer is scored on it, and refused when the item's content changed since (the question is shown again).", null=True),
        ),
        migrations.AddField(
            model_name='participantlease',
            name='shown_language',
            field=models.CharField(blank=True, db_default='', default='', help_text='The language the question was last shown in ("" = the original): the answer is checked and recorded in it, whatever the attempt\'s language is meanwhile.', max_length=10),
        ),
        migrations.AlterField(
            model_name='refusedanswer',
            name='reason',
            field=models.CharField(choices=[('late', 'After the deadline'), ('question_timeout', "After the question's time limit"), ('already_answered', 'Already answered'), ('closed', 'Attempt not running'), ('content_changed', "The question's content changed since it was shown")], max_length=20),
        ),
        migrations.RunPython(fill_shown, migrations.RunPython.noop),
    ]
