"""BeliefLabel.tie_key: the triage order breaks ties of belief with a key drawn apart from the audit key (a tie broken
by the audit key made the labels of a tie group beyond the order stream's frontier certain to be out of the uniform
sample, while their inclusion probability said u*). Labels recorded before keep an empty tie key: their hand-outs
went by the audit key, and annotation.review_order gives them that design's own inclusion probability."""
from django.db import migrations, models

import annotation.models.belief

HELP = ("Order among labels of equal belief in the triage order, in [0, 1), drawn apart from the audit key (empty for "
        "labels recorded before it existed: their ties went by the audit key).")


class Migration(migrations.Migration):
    dependencies = [("annotation", "0015_highest_content_version")]

    operations = [
        # Added empty (the existing labels' ties went by the audit key), then given its default for new labels.
        migrations.AddField(model_name="belieflabel", name="tie_key",
                            field=models.FloatField(null=True, blank=True, help_text=HELP)),
        migrations.AlterField(model_name="belieflabel", name="tie_key",
                              field=models.FloatField(null=True, blank=True, default=annotation.models.belief.new_audit_key,
                                                      help_text=HELP)),
        migrations.AddConstraint(
            model_name="belieflabel",
            constraint=models.CheckConstraint(condition=models.Q(tie_key__isnull=True)
                                              | models.Q(tie_key__gte=0, tie_key__lt=1), name="belief_label_tie_key")),
    ]
