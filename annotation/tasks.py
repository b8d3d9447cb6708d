from celery import shared_task

from .models import Item
from .services import derived_facts


@shared_task(acks_late=True)
def item_refresh_facts(item_id: int) -> None:
    """Recompute an item's derived analysis fields (idempotent)."""
    item = Item.objects.filter(pk=item_id).first()
    if item is None:
        return
    facts = derived_facts(context=item.context, question=item.question, evidence=item.evidence, reasoning=item.reasoning)
    Item.objects.filter(pk=item_id).update(**facts)


@shared_task(acks_late=True)
def leases_expire_sweep() -> int:
    """Give back expired annotation leases (idempotent; lease_next also does it lazily)."""
    from .services import leases_expire

    return leases_expire()
