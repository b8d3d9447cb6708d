"""Assignment is an annotator's lease on an item in a stage: call it AnnotatorLease."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0004_stage_config_defaults'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(model_name='assignment', name='assignment_one_live_slot_per_annotator'),
        migrations.RemoveConstraint(model_name='assignment', name='assignment_expiry_after_lease'),
        migrations.RemoveConstraint(model_name='assignment', name='assignment_submitted_has_time'),
        migrations.RenameModel(old_name='Assignment', new_name='AnnotatorLease'),
        migrations.RenameIndex(model_name='annotatorlease', new_name='annotator_lease_queue_idx',
                               old_name='annotation__stage_af6e97_idx'),
        migrations.RenameIndex(model_name='annotatorlease', new_name='annotator_lease_user_idx',
                               old_name='annotation__annotat_cd6f76_idx'),
        migrations.AlterField(
            model_name='annotatorlease', name='annotator',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='annotator_leases',
                                    to=settings.AUTH_USER_MODEL),
        ),
        migrations.AlterField(
            model_name='annotatorlease', name='item',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='annotator_leases',
                                    to='annotation.item'),
        ),
        migrations.RenameField(model_name='verificationdecision', old_name='assignment', new_name='lease'),
        migrations.RenameField(model_name='reviewdecision', old_name='assignment', new_name='lease'),
        migrations.AddConstraint(
            model_name='annotatorlease',
            constraint=models.UniqueConstraint(condition=models.Q(('status__in', ['leased', 'submitted'])),
                                               fields=('item', 'stage', 'annotator'),
                                               name='annotator_lease_one_live_slot'),
        ),
        migrations.AddConstraint(
            model_name='annotatorlease',
            constraint=models.CheckConstraint(condition=models.Q(('expires_at__gte', models.F('leased_at'))),
                                              name='annotator_lease_expiry_after_lease'),
        ),
        migrations.AddConstraint(
            model_name='annotatorlease',
            constraint=models.CheckConstraint(
                condition=models.Q(models.Q(('status', 'submitted'), _negated=True), ('submitted_at__isnull', False),
                                   _connector='OR'),
                name='annotator_lease_submitted_has_time'),
        ),
    ]
