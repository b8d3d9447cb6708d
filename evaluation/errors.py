"""How the evaluation services refuse a call: subclasses of the project's error contract.

Views and APIs do not catch these one by one: `foundation.error_mapping` turns any of
them into form errors, an error page or a JSON body with their HTTP status. Pure (no Django):
the pure packages raise them too (`evaluation.prompting.methods.get_method` raises UnknownMethod).
"""
from __future__ import annotations

from foundation.errors import Conflict, Invalid


class UnknownMethod(Invalid):
    """The method is not in the registry (evaluation.prompting.methods.METHODS)."""

    code = "unknown_method"


class EmptySelection(Invalid):
    """No item matches the run's selection."""

    code = "empty_selection"


class NoDemonstrations(Invalid):
    """A few-shot method was asked for before enough usable train items were imported."""

    code = "no_demonstrations"


class EmptyFigure(Conflict):
    """A figure would have nothing on it: no run, or no item common to the chosen runs. Says why and what to do,
    instead of drawing empty axes."""

    code = "empty_figure"
