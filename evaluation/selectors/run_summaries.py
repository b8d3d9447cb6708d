"""A run's summary as every page, export and command shows it (`RunSummary`): its metrics, the metrics on the items'
current content when rows are stale, cost at the run's prices, wall time, circular accuracy; and why a run has no
accuracy yet (`accuracy_gap`). Built by evaluation.selectors.runs."""
from __future__ import annotations

from dataclasses import dataclass

from evaluation.models import Run, RunStatus
from evaluation.prompting.methods import METHODS
from evaluation.statistics.metrics import RunMetrics, cost

#: The methods whose answers are free text (no accuracy until a judge has labelled them).
FREE_TEXT_METHODS = frozenset(name for name, method in METHODS.items() if method.free_text)


def accuracy_gap(run: Run, metrics: RunMetrics, *, resolved: int = 0, total: int = 0, judged: bool = False) -> str:
    """Why a run has no accuracy, in words ('' when it has one): failed (with the reason), cancelled, queued,
    running, free text not judged yet, or every row failed."""
    if metrics.accuracy is not None:
        return ""
    if run.status == RunStatus.FAILED:
        return f"the run failed: {run.failure_reason}" if run.failure_reason else "the run failed"
    if run.status == RunStatus.CANCELLED:
        return "the run was cancelled before any row was answered"
    if run.status == RunStatus.QUEUED:
        return "queued: no row answered yet"
    if run.status == RunStatus.RUNNING:
        return f"running: no row answered yet ({resolved}/{total} done)" if total else "running: no row answered yet"
    if run.method in FREE_TEXT_METHODS:
        return "free text: judged (see the run's page)" if judged else "free text: not judged yet"
    if metrics.errors:
        return f"every row failed ({metrics.errors} request errors)"
    return "no row answered"


@dataclass(frozen=True)
class RunSummary:
    run: Run
    metrics: RunMetrics
    cost: float | None
    wall_s: float | None
    stale: int = 0  # rows of an item changed since the run asked it
    why: str = ""  # why there is no accuracy (accuracy_gap), on the run list
    #: Circular order: (items right in every rotation of their first sample, items with every rotation scored),
    #: fresh rows, as the leaderboard's cell of the run counts them; None for the other orders.
    circular: tuple[int, int] | None = None
    #: With stale rows or rows of a rejected (deleted) item: the metrics of the fresh rows of the items kept (the
    #: items' current content, as the leaderboard's cells count them); None otherwise (then ``metrics`` are those).
    fresh: RunMetrics | None = None

    @property
    def current(self) -> RunMetrics:
        """The metrics on the items' current content: the fresh rows'."""
        return self.metrics if self.fresh is None else self.fresh

    @property
    def rows_left_out(self) -> int:
        """Scored rows the metrics on the current content leave out (stale, or of a rejected item)."""
        return self.metrics.n - self.current.n

    @property
    def current_pct(self) -> float | None:
        return self._percent(self.current.accuracy)

    @property
    def circular_accuracy(self) -> float | None:
        return self.circular[0] / self.circular[1] if self.circular and self.circular[1] else None

    @property
    def circular_pct(self) -> float | None:
        return self._percent(self.circular_accuracy)

    @staticmethod
    def _percent(value: float | None) -> float | None:
        return None if value is None else 100.0 * value

    @property
    def accuracy_pct(self) -> float | None:
        return self._percent(self.metrics.accuracy)

    @property
    def keyinfo_pct(self) -> float | None:
        return self._percent(self.metrics.keyinfo)

    @property
    def first_option_pct(self) -> float | None:
        return self._percent(self.metrics.first_option_baseline)

    @property
    def text(self) -> dict:
        """The numbers of a list row as text (plain formatting: long lists render without ``floatformat``)."""
        m = self.metrics
        current = self.current.accuracy
        return {"acc": "—" if m.accuracy is None else f"{100 * m.accuracy:.1f}%",
                "current": "—" if current is None else f"{100 * current:.1f}%",
                "ci": "" if m.ci_low is None else f"{m.ci_low:.3f}–{m.ci_high:.3f}",
                "first": "—" if m.first_option_baseline is None else f"{100 * m.first_option_baseline:.1f}"}

    def as_json(self) -> dict:
        m = self.metrics
        return {
            "run": self.run.pk, "method": self.run.method, "model": self.run.endpoint.model,
            "status": self.run.status, "n": m.n, "accuracy": m.accuracy,
            "accuracy_ci95": [m.ci_low, m.ci_high] if m.ci_low is not None else None,
            "accuracy_parsed": m.accuracy_parsed, "first_option_baseline": m.first_option_baseline,
            "keyinfo": m.keyinfo, "parse_failures": m.parse_failures, "parse_failure_rate": m.parse_failure_rate,
            "errors": m.errors, "tokens_in": m.tokens_in, "tokens_out": m.tokens_out, "cost": self.cost,
            "wall_s": self.wall_s, "latest_wall_s": self.run.latest_wall_s, "option_order": self.run.option_order, "seed": self.run.seed,
            "prompt_version": self.run.prompt_version, "stale_rows": self.stale,
            "circular_accuracy": self.circular_accuracy, "circular_n": self.circular[1] if self.circular else None,
            # On the items' current content (stale rows and rejected items left out, as the leaderboard counts):
            # equal to the above when there are none.
            "n_fresh": self.current.n, "accuracy_fresh": self.current.accuracy,
            "accuracy_fresh_ci95": [self.current.ci_low, self.current.ci_high]
            if self.current.ci_low is not None else None,
        }


def circular_of(run: Run, verdicts: dict[int, tuple[int, int]]) -> tuple[int, int] | None:
    """A run's circular verdicts (``outcomes.circular_verdicts``): (0, 0) for a circular run without a complete
    item yet, None for a run of another order (one row per sample)."""
    return verdicts.get(run.pk, (0, 0)) if run.rotations > 1 else None


def priced(run: Run, metrics: RunMetrics, *, stale: int = 0, why: str = "",
            circular: tuple[int, int] | None = None, fresh: RunMetrics | None = None) -> RunSummary:
    price = cost(tokens_in=metrics.tokens_in, tokens_out=metrics.tokens_out,  # at the prices of its launch
                 price_in_per_mtok=run.price_in_per_mtok, price_out_per_mtok=run.price_out_per_mtok)
    return RunSummary(run=run, metrics=metrics, cost=price, wall_s=run.wall_s, stale=stale, why=why,
                      circular=circular, fresh=fresh)
