"""How annotation services refuse a call: subclasses of the project's error contract.

Views map them with `foundation.error_mapping` (forms and pages), the API with
DRF's exception handler; each carries its HTTP status, so a refusal is never a 500.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from foundation.errors import Conflict, Invalid, NotFound
from foundation.words import gettext, ngettext

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
        more = "\n" + gettext("... and %(n)s more", n=len(line_errors) - 20) if len(line_errors) > 20 else ""
        super().__init__(ngettext("%(n)s invalid line, nothing imported:", "%(n)s invalid lines, nothing imported:",
                                  len(line_errors), n=len(line_errors)) + f"\n{shown}{more}", details={
            "lines": [{"line": e.line, "field": e.field, "message": e.message} for e in line_errors[:200]]})


class CuratedConflicts(Conflict):
    """An import would overwrite items edited in the app since their last import; nothing was imported."""

    code = "curated_conflict"

    def __init__(self, conflicts):
        self.conflicts = list(conflicts)
        shown = "\n".join(str(c) for c in self.conflicts[:20])
        more = "\n" + gettext("... and %(n)s more", n=len(self.conflicts) - 20) if len(self.conflicts) > 20 else ""
        super().__init__(
            ngettext("%(n)s item was edited in the app since its last import; nothing imported (keep it and import "
                     "the rest: --keep-curated; replace it, as a new revision: --overwrite-curated):",
                     "%(n)s items were edited in the app since their last import; nothing imported (keep them and "
                     "import the rest: --keep-curated; replace them, as a new revision: --overwrite-curated):",
                     len(self.conflicts), n=len(self.conflicts)) + f"\n{shown}{more}",
            details={"conflicts": [{"line": c.line, "id": c.external_id, "revision": c.revision, "author": c.author}
                                   for c in self.conflicts[:200]]})


class StaleVersion(Conflict):
    """An edit was based on an older version of the item than the one stored; carries the current item."""

    code = "stale_version"

    def __init__(self, item: Item, base_version: int):
        self.item = item
        self.base_version = base_version
        super().__init__(
            gettext("%(item)s changed (now version %(version)s) since version %(base)s that you started from: "
                    "look at it again", item=item, version=item.version, base=base_version),
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
