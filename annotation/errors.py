"""How annotation services refuse a call: subclasses of the project's error contract.

Views map them with `foundation.error_mapping` (forms and pages), the API with
DRF's exception handler; each carries its HTTP status, so a refusal is never a 500.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from foundation.errors import Conflict, Invalid, NotFound

if TYPE_CHECKING:
    from annotation.dataformat import RecordError
    from annotation.models import Item

#: The item fields an API answers with (ItemSerializer and the `current` item of a stale edit).
ITEM_API_FIELDS = ("id", "source", "external_id", "split", "status", "version", "context", "question", "options",
                   "answer_index", "evidence", "reasoning", "question_type", "updated_at")


class ImportRejected(Invalid):
    """The file has invalid lines and nothing was imported; `line_errors` lists them."""

    code = "import_rejected"

    def __init__(self, line_errors: list[RecordError]):
        self.line_errors = list(line_errors)
        shown = "\n".join(str(e) for e in line_errors[:20])
        more = f"\n... and {len(line_errors) - 20} more" if len(line_errors) > 20 else ""
        super().__init__(f"{len(line_errors)} invalid line(s), nothing imported:\n{shown}{more}", details={
            "lines": [{"line": e.line, "field": e.field, "message": e.message} for e in line_errors[:200]]})


class CuratedConflicts(Conflict):
    """An import would overwrite items edited in the app since their last import; nothing was imported."""

    code = "curated_conflict"

    def __init__(self, conflicts):
        self.conflicts = list(conflicts)
        shown = "\n".join(str(c) for c in self.conflicts[:20])
        more = f"\n... and {len(self.conflicts) - 20} more" if len(self.conflicts) > 20 else ""
        super().__init__(
            f"{len(self.conflicts)} item(s) were edited in the app since their last import; nothing imported "
            f"(keep them and import the rest: --keep-curated; replace them, as a new revision: --overwrite-curated):"
            f"\n{shown}{more}",
            details={"conflicts": [{"line": c.line, "id": c.external_id, "revision": c.revision, "author": c.author}
                                   for c in self.conflicts[:200]]})


class StaleVersion(Conflict):
    """An edit was based on an older version of the item than the one stored; carries the current item."""

    code = "stale_version"

    def __init__(self, item: Item, base_version: int):
        self.item = item
        self.base_version = base_version
        super().__init__(
            f"{item} changed (now version {item.version}) since version {base_version} that you started from: "
            f"look at it again",
            details={"current_version": item.version, "base_version": base_version,
                     "current": {name: item.pk if name == "id" else getattr(item, name) for name in ITEM_API_FIELDS}})


class WorkflowError(Conflict):
    """A workflow action that does not fit the item's current state."""

    code = "workflow"


class NoSlot(WorkflowError):
    """The stage already has its k annotators for this item (or this annotator may not take it)."""

    code = "no_slot"


class ItemNotFound(NotFound):
    code = "item_not_found"


__all__ = ["ITEM_API_FIELDS", "ImportRejected", "ItemNotFound", "NoSlot", "StaleVersion", "WorkflowError"]
