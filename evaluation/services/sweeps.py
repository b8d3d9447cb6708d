"""A sweep before it starts: the requests (and, where endpoints have prices, the cost) of launching
endpoints x methods over one item selection (the launch itself is ``services.sweep_launch``)."""
from __future__ import annotations

from collections.abc import Sequence

from evaluation.errors import NoDemonstrations
from evaluation.model_calls.launch_estimate import SweepEstimate
from evaluation.models import ModelEndpoint, OptionOrder
from evaluation.prompting.methods import METHODS
from evaluation.selectors.analysis import launch_estimate
from evaluation.services import runs as services
from evaluation.services.runs import enough_demonstrations, select_item_ids
from foundation.errors import Invalid
from foundation.words import gettext


def sweep_estimate(*, endpoints: Sequence[ModelEndpoint], methods: Sequence[str], split: str = "",
                   item_status: str = "", question_type: str = "", ids: Sequence[int] = (),
                   limit: int | None = None, samples: int = 1, k: int | None = None,
                   option_order: str = OptionOrder.ORIGINAL, method_field: str = "methods",
                   **_launch_only) -> SweepEstimate:
    """Per endpoint, the estimate of its runs (one per method); refuses an empty sweep or selection
    (a method without demonstrations is refused on ``method_field``, the name of the caller's field)."""
    if not endpoints:
        raise Invalid(gettext("Choose at least one endpoint."), field="endpoints")
    if not methods:
        raise Invalid(gettext("Choose at least one method."), field="methods")
    methods = list(dict.fromkeys(methods))
    needs = [m for m in methods if m in METHODS and METHODS[m].shots]
    if needs:  # refused here as the launch would refuse it, before anyone presses the button
        item_ids = select_item_ids(split=split, item_status=item_status, question_type=question_type, ids=ids,
                                   limit=limit)
        for method in needs:
            if item_ids and not enough_demonstrations(METHODS[method].shots, item_ids):
                raise NoDemonstrations(gettext("%(method)s needs demonstrations: import the train split first.", method=method),
                                       field=method_field)
    return SweepEstimate(endpoints=tuple(
        (endpoint.name, launch_estimate(endpoint=endpoint, methods=methods, split=split, item_status=item_status,
                                        question_type=question_type, ids=ids, limit=limit, samples=samples, k=k,
                                        option_order=option_order))
        for endpoint in dict.fromkeys(endpoints)))


def launch_check(*, endpoints: Sequence[ModelEndpoint], methods: Sequence[str], check: bool = True,
                 endpoint_field: str = "endpoints", method_field: str = "methods",
                 **selection) -> tuple[SweepEstimate, list[str]]:
    """What a launch is refused for before anything starts, cheapest first: the selection's refusals (no
    items, no demonstrations), which ask no endpoint; then, with ``check``, each remote endpoint's
    (``services.endpoints_check``). Returns the estimate and the endpoint check's warnings."""
    plan = sweep_estimate(endpoints=endpoints, methods=methods, method_field=method_field, **selection)
    warnings = services.endpoints_check(endpoints=endpoints, field=endpoint_field) if check else []
    return plan, warnings
