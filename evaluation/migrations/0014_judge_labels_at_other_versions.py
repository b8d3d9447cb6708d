"""Judge labels of a model's result at a content version the result was not asked at are no longer counted.

Before the judge graded each result against the content its model was shown (migration 0013's release), it graded a
stale result against the item's content at the time of judging, and recorded the label at that version. Such a label
judged content the model never saw: it is no verdict on the answer. It is kept, with its reviews, as an error label
(left out of the review hand-out, the trust figures, the judge-powered shares and the precision target, like every
label whose judging failed), its rationale saying why. The judge writes no new ones (evaluation.execution.judge)."""
from django.db import migrations
from django.db.models import Case, F, TextField, Value, When
from django.db.models.functions import Concat

NOTE = ("Not counted: this label judged the item's content at version {label}, but its result was asked at version "
        "{asked} (recorded before the judge graded each result against the content its model was shown).")


def flag_labels_at_other_versions(apps, schema_editor=None) -> int:
    """Mark every such label an error label; returns how many."""
    BeliefLabel = apps.get_model("annotation", "BeliefLabel")
    Result = apps.get_model("evaluation", "Result")
    Superseded = apps.get_model("evaluation", "SupersededResult")
    flagged = 0
    labels = (BeliefLabel.objects.filter(target__startswith="result:").exclude(status="error")
              .values_list("pk", "target", "item_version").order_by("pk"))
    batch: list[tuple[int, int, int]] = []
    for pk, target, version in labels.iterator(chunk_size=2000):
        ident = target.partition(":")[2]
        if ident.isascii() and ident.isdigit():
            batch.append((pk, int(ident), version))
        if len(batch) >= 2000:
            flagged += _flag(BeliefLabel, Result, Superseded, batch)
            batch = []
    return flagged + _flag(BeliefLabel, Result, Superseded, batch)


def _flag(BeliefLabel, Result, Superseded, batch) -> int:
    ids = {result_id for _, result_id, _ in batch}
    asked = dict(Superseded.objects.filter(result_id__in=ids).values_list("result_id", "item_version"))
    asked.update(Result.objects.filter(pk__in=ids).values_list("pk", "item_version"))
    # One UPDATE per (label version, asked version) of the batch: the note names both.
    groups: dict[tuple[int, int], list[int]] = {}
    for pk, result_id, version in batch:
        if result_id in asked and asked[result_id] != version:
            groups.setdefault((version, asked[result_id]), []).append(pk)
    flagged = 0
    for (version, asked_at), pks in groups.items():
        note = NOTE.format(label=version, asked=asked_at)
        flagged += BeliefLabel.objects.filter(pk__in=pks).update(status="error", rationale=Case(
            When(rationale="", then=Value(note)), default=Concat(Value(note + "\n\n"), F("rationale")),
            output_field=TextField()))
    return flagged


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0013_belief_sighting"),
        ("evaluation", "0013_run_left_out_ids_superseded_result"),
    ]

    operations = [migrations.RunPython(flag_labels_at_other_versions, migrations.RunPython.noop)]
