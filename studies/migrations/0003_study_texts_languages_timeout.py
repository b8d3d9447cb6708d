"""Participant languages (a study's extra languages, an attempt's chosen one), what a timeout shows,
rejected items out of pools by default, and constraint messages in words."""
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def attempts_keep_their_language(apps, schema_editor):
    """Attempts made before the switch saw their study's language."""
    Attempt = apps.get_model("studies", "Attempt")
    Study = apps.get_model("studies", "Study")
    Attempt.objects.update(language=Subquery(Study.objects.filter(pk=OuterRef("study_id")).values("language")[:1]))


class Migration(migrations.Migration):

    dependencies = [
        ('studies', '0002_rename_lease_participantlease'),
    ]

    operations = [
        migrations.AddField(
            model_name='attempt',
            name='language',
            field=models.CharField(blank=True, help_text='The language the participant sees the study in (one the study offers).', max_length=10),
        ),
        migrations.AddField(
            model_name='study',
            name='extra_languages',
            field=models.JSONField(blank=True, default=list, help_text='Other languages a participant may switch to ("" = the original English); each needs translations.'),
        ),
        migrations.AddField(
            model_name='study',
            name='pool_include_rejected',
            field=models.BooleanField(default=False, help_text='Draw the pool also from items that annotators rejected (left out by default).'),
        ),
        migrations.AddField(
            model_name='study',
            name='timeout_completion_code',
            field=models.CharField(blank=True, help_text='Code shown when the time runs out (answers so far are kept); empty = ask the participant to return the study instead.', max_length=64),
        ),
        migrations.AddField(
            model_name='study',
            name='timeout_instruction',
            field=models.TextField(blank=True, help_text='What a participant whose time ran out (or who stopped) should do; empty = a standard instruction.'),
        ),
        migrations.AlterConstraint(
            model_name='study',
            name='study_per_participant_positive',
            constraint=models.CheckConstraint(condition=models.Q(('per_participant__gte', 1)), name='study_per_participant_positive', violation_error_message='Each participant needs at least one question.'),
        ),
        migrations.AlterConstraint(
            model_name='study',
            name='study_raters_positive',
            constraint=models.CheckConstraint(condition=models.Q(('raters__gte', 1)), name='study_raters_positive', violation_error_message='Each item needs at least one rater.'),
        ),
        migrations.AlterConstraint(
            model_name='study',
            name='study_time_limit_min',
            constraint=models.CheckConstraint(condition=models.Q(('time_limit_seconds__gte', 10)), name='study_time_limit_min', violation_error_message='The time limit must be at least 10 seconds.'),
        ),
        migrations.AlterConstraint(
            model_name='study',
            name='study_bonus_not_negative',
            constraint=models.CheckConstraint(condition=models.Q(('bonus_per_correct__gte', 0)), name='study_bonus_not_negative', violation_error_message='The bonus cannot be negative.'),
        ),
        migrations.RunPython(attempts_keep_their_language, migrations.RunPython.noop),
    ]
