"""The evaluation tables as files: CSV (formula-safe), JSON, LaTeX (booktabs), plain text, and a run's rows
as JSONL. Pages, the API and the `leaderboard` command all write through these."""
from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator

from evaluation.selectors.leaderboard import Leaderboard
from evaluation.selectors.one_scale import OneScale
from evaluation.statistics.pairwise import Pairwise
from foundation import csv_safety

LEADERBOARD_COLUMNS = [
    "row", "method", "endpoint", "run", "split", "option_order", "n", "correct", "accuracy", "ci95_low", "ci95_high",
    "keyinfo", "first_option_baseline", "stale_dropped", "is_reference", "pairs", "ref_right_cell_wrong",
    "ref_wrong_cell_right", "p_value", "p_holm", "significant", "items", "judge", "n_reviewed", "circular_accuracy",
    "circular_n",
]
#: A free-text cell's accuracy per judge, one CSV row each: the judge's labels alone, the people's reviews alone
#: (weighted by the queue's design) and the judge-powered (PPI++) estimate, each with its n.
JUDGED_ROWS = ("judge_only", "people_only", "judge_powered")


def leaderboard_rows(table: Leaderboard) -> list[dict]:
    """One flat row per cell, then one per baseline cell (what the CSV holds)."""
    rows = []
    for cell in table.cells:
        j = cell.as_json()
        low, high = j["accuracy_ci95"] or (None, None)
        disc = j["discordant"] or (None, None)
        rows.append({"row": "method", "method": j["method"], "endpoint": j["endpoint"], "run": j["run"],
                     "split": j["split"], "option_order": j["option_order"], "n": j["n"], "correct": j["correct"],
                     "accuracy": j["accuracy"], "ci95_low": low, "ci95_high": high, "keyinfo": j["keyinfo"],
                     "first_option_baseline": j["first_option_baseline"], "stale_dropped": j["stale_dropped"],
                     "is_reference": j["is_reference"], "pairs": j["pairs"], "ref_right_cell_wrong": disc[0],
                     "ref_wrong_cell_right": disc[1], "p_value": j["p_value"], "p_holm": j["p_holm"],
                     "significant": j["significant"], "items": None, "circular_accuracy": j["circular_accuracy"],
                     "circular_n": j["circular_n"]})
        rows += _judged_rows(cell, j)
    for baseline in table.baselines:
        for endpoint, c in zip(table.endpoints, baseline.cells):
            if c is not None:
                rows.append({"row": baseline.key, "method": baseline.label, "endpoint": endpoint.name,
                             "split": table.split, "option_order": table.option_order, "n": c.n,
                             "accuracy": c.value, "ci95_low": c.low, "ci95_high": c.high, "items": c.items})
    return rows


def _judged_rows(cell, j: dict) -> list[dict]:
    """The rows of a free-text cell's judged accuracies (none for a multiple-choice cell)."""
    rows = []
    for judged in cell.judged if j.get("judged") is not None else ():
        base = {"method": j["method"], "endpoint": j["endpoint"], "run": j["run"], "split": j["split"],
                "option_order": j["option_order"], "judge": judged.config}
        rows.append({**base, "row": JUDGED_ROWS[0], "n": judged.counted, "correct": judged.correct,
                     "accuracy": judged.accuracy, "n_reviewed": judged.reviewed})
        for kind, estimate in ((JUDGED_ROWS[1], judged.people), (JUDGED_ROWS[2], judged.powered)):
            estimate = estimate or {}
            rows.append({**base, "row": kind, "n": estimate.get("n"), "accuracy": estimate.get("value"),
                         "ci95_low": estimate.get("low"), "ci95_high": estimate.get("high"),
                         "n_reviewed": estimate.get("n_reviewed")})
    return rows


def csv_text(rows: Iterable[dict], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv_safety.DictWriter(out, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row.get(k) for k in columns})
    return out.getvalue()


def leaderboard_csv(table: Leaderboard) -> str:
    return csv_text(leaderboard_rows(table), LEADERBOARD_COLUMNS)


def leaderboard_json(table: Leaderboard) -> str:
    """The command's JSON: the API's document (`Leaderboard.as_json`: scope, cells, baselines, rejected_items, ...)."""
    return json.dumps(table.as_json(), indent=2)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _num(value: float | None, digits: int = 1) -> str:
    return "--" if value is None else f"{100 * value:.{digits}f}"


def _has_circular(table: Leaderboard) -> bool:
    return any(c.circular is not None for c in table.cells)


def leaderboard_latex(table: Leaderboard) -> str:
    """Paper Table 4 as a booktabs table: per model KeyInfo, Acc. and n (with circular cells, Circ. before n: the
    circular accuracy, -- for a cell of another order); * = differs from the reference (exact McNemar,
    Holm-corrected, p < alpha), dagger = the reference; baselines and humans below."""
    endpoints = table.endpoints
    circular = _has_circular(table)
    heads = ["KeyInfo", "Acc.", "Circ.", "$n$"] if circular else ["KeyInfo", "Acc.", "$n$"]
    per = len(heads)
    width = 1 + per * len(endpoints)
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\begin{tabular}{l" + (" " + "r" * per) * len(endpoints) + "}", r"\toprule"]
    lines.append(" & " + " & ".join(rf"\multicolumn{{{per}}}{{c}}{{{latex_escape(e.name)}}}" for e in endpoints)
                 + r" \\")
    if endpoints:
        lines.append(" ".join(rf"\cmidrule(lr){{{2 + per * i}-{1 + per * (i + 1)}}}" for i in range(len(endpoints))))
    lines.append("Method" + (" & " + " & ".join(heads)) * len(endpoints) + r" \\")
    lines.append(r"\midrule")
    family = None
    for row in table.rows:
        if row["family"] != family:
            family = row["family"]
            lines.append(rf"\multicolumn{{{width}}}{{l}}{{\emph{{{latex_escape(family)}}}}} \\")
        parts = [latex_escape(row["method"].paper_label)]
        for cell in row["cells"]:
            if cell is None:
                parts += ["--"] * per
                continue
            mark = r"$^{\dagger}$" if cell.is_reference else r"$^{*}$" if cell.significant else ""
            parts += [_num(cell.metrics.keyinfo), _num(cell.metrics.accuracy) + mark]
            parts += [_num(cell.circular_accuracy)] if circular else []
            parts.append(str(cell.metrics.n))
        lines.append(" & ".join(parts) + r" \\")
    if table.baselines:
        lines.append(r"\midrule")
    for baseline in table.baselines:
        parts = [latex_escape(baseline.label)]
        for c in baseline.cells:
            shown = ["--", "--"] if c is None else [_num(c.value), str(c.n)]
            parts += ["", shown[0], *([""] if circular else []), shown[1]]
        lines.append(" & ".join(parts) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + latex_escape(_caption(table)) + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _caption(table: Leaderboard) -> str:
    text = f"KeyInfo and accuracy (%) on {table.scope}; n = scored rows of each cell."
    if _has_circular(table):
        text += (" Circ. = circular accuracy (%): an item is right only if every rotation of its options is (its "
                 "first sample), over the items with every rotation scored; Acc. and n count each rotation's row.")
    if table.reference is not None:
        text += (f" Reference (dagger): {table.reference.key}; * = exact McNemar test on the paired items, "
                 f"Holm-corrected across the table, p < {table.alpha}.")
    return text


def leaderboard_text(table: Leaderboard) -> str:
    """A plain-text rendering for the terminal: one line per cell and baseline."""
    lines = [f"Leaderboard: {table.scope}"]
    if table.reference is not None:
        lines.append(f"reference {table.reference.key}; exact McNemar, Holm-corrected, * = p_holm < {table.alpha}")
    circular = _has_circular(table)
    lines.append(f"{'method':<28} {'endpoint':<28} {'run':>5} {'n':>6} {'acc %':>6} {'95% CI':>13} "
                 f"{'KeyInfo':>7} {'first':>6} {'p_holm':>8}" + (f" {'circ %':>6} {'items':>6}" if circular else ""))
    for c in table.cells:
        m = c.metrics
        ci = f"{_num(m.ci_low)}-{_num(m.ci_high)}" if m.ci_low is not None else "--"
        p = "ref" if c.is_reference else ("--" if c.p_holm is None else f"{c.p_holm:.4f}" + ("*" if c.significant
                                                                                               else ""))
        lines.append(f"{c.method:<28} {c.endpoint.name[:28]:<28} {c.run.pk:>5} {m.n:>6} {_num(m.accuracy):>6} "
                     f"{ci:>13} {_num(m.keyinfo):>7} {_num(m.first_option_baseline):>6} {p:>8}"
                     + (f" {_num(c.circular_accuracy):>6} {'--' if c.circular is None else c.circular[1]:>6}"
                        if circular else ""))
    for baseline in table.baselines:
        for endpoint, b in zip(table.endpoints, baseline.cells):
            if b is not None:
                lines.append(f"{baseline.label:<28} {endpoint.name[:28]:<28} {'':>5} {b.n:>6} {_num(b.value):>6}")
    return "\n".join(lines) + "\n"


PAIRWISE_COLUMNS = ["a", "b", "test", "n", "a_only", "b_only", "a_accuracy", "b_accuracy", "difference", "ci95_low",
                    "ci95_high", "a_better", "b_better", "raters", "p_value", "p_adjusted", "correction",
                    "significant"]


def pairwise_rows(result: Pairwise) -> list[dict]:
    """One flat row per pair (what the CSV holds)."""
    rows = []
    for t in result.tests:
        j = t.as_json()
        low, high = j.pop("ci95") or (None, None)
        rows.append(j | {"ci95_low": low, "ci95_high": high, "correction": result.correction})
    return rows


def pairwise_csv(result: Pairwise) -> str:
    return csv_text(pairwise_rows(result), PAIRWISE_COLUMNS)


def _p(value: float | None) -> str:
    if value is None:
        return "--"
    return f"{value:.4f}" if value >= 1e-4 else r"$<$0.0001"


def pairwise_latex(result: Pairwise, *, scope: str = "") -> str:
    """Every pair as a booktabs table (a longtable beyond 40 pairs: needs \\usepackage{longtable}): the two
    sides, n, their accuracies (%) on the common items, the pairs each side wins, p and the corrected p;
    * = corrected p < alpha."""
    long = len(result.tests) > 40
    head = ["A", "B", "Test", "$n$", "Acc. A", "Acc. B", "A$>$B", "B$>$A", "$p$", "$p_{adj}$"]
    begin = r"\begin{longtable}{llcrrrrrrr}" if long else r"\begin{tabular}{llcrrrrrrr}"
    lines = ([] if long else [r"\begin{table}[t]", r"\centering", r"\small"]) + [begin, r"\toprule",
                                                                               " & ".join(head) + r" \\",
                                                                               r"\midrule"]
    if long:
        lines.append(r"\endhead")
    for t in result.tests:
        mark = r"$^{*}$" if t.significant else ""
        lines.append(" & ".join([latex_escape(t.a), latex_escape(t.b), latex_escape(t.test), str(t.n),
                                 _num(t.a_accuracy), _num(t.b_accuracy), str(t.a_better), str(t.b_better),
                                 _p(t.p_value), _p(t.p_adjusted) + mark]) + r" \\")
    caption = (f"Every pair compared{' on ' + scope if scope else ''}. Cells: exact McNemar test on the "
               f"(item, version) pairs both have; humans: paired sign-flip test over items (each item's share of "
               f"raters right against the model's outcome). All {len(result.tests)} tests corrected together by "
               f"{result.correction_label}; * = corrected p < {result.alpha}.")
    lines.append(r"\bottomrule")
    if long:
        lines += [r"\caption{" + latex_escape(caption) + r"}\\", r"\end{longtable}"]
    else:
        lines += [r"\end{tabular}", r"\caption{" + latex_escape(caption) + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


RESPONDENT_COLUMNS = ["key", "kind", "label", "answers", "correct", "accuracy", "ability", "se", "ci95_low",
                      "ci95_high", "model", "split"]
ITEM_SCALE_COLUMNS = ["item", "external_id", "version", "current", "difficulty", "difficulty_se", "discrimination",
                      "discrimination_se", "people_answers", "people_correct", "people_accuracy", "model_answers",
                      "model_correct", "model_accuracy", "people_difficulty", "model_difficulty", "contrast_z",
                      "model", "split"]


def respondents_csv(result: OneScale) -> str:
    """Every respondent (models first, then people, each by ability) with its ability and 95% interval."""
    rows = [r.as_json() | {"ci95_low": r.low, "ci95_high": r.high, "model": result.model, "split": result.split}
            for r in result.respondents]
    return csv_text(rows, RESPONDENT_COLUMNS)


def items_csv(result: OneScale) -> str:
    """Every item (at one content version): difficulty, discrimination, each group's answers and difficulty."""
    rows = [i.as_json() | {"model": result.model, "split": result.split} for i in result.items]
    return csv_text(rows, ITEM_SCALE_COLUMNS)


RESULT_JSONL_FIELDS = ("item_id", "item_version", "sample_index", "messages", "raw_output", "shown_order",
                       "answer_index", "answer_label", "parse_status", "is_correct", "answer_first", "free_answer",
                       "key_information", "keyinfo", "tokens_in", "tokens_out", "latency_s", "attempts", "cached",
                       "error")


def results_jsonl(rows: Iterable[dict], *, run_id: int) -> Iterator[str]:
    """One JSON object per result row (``rows`` are ``values()`` dicts with RESULT_JSONL_FIELDS,
    ``item__external_id`` and ``item__content_version``): with the item's content version now (``current_version``)
    and ``stale`` (the row was asked at another content version)."""
    for row in rows:
        record = {"run": run_id, "external_id": row.get("item__external_id")}
        record.update({k: row[k] for k in RESULT_JSONL_FIELDS})
        current = row.get("item__content_version")
        record["current_version"] = current
        record["stale"] = current is not None and row["item_version"] != current
        yield json.dumps(record, ensure_ascii=False) + "\n"


#: What ``superseded_jsonl`` reads of each row of ``selectors.superseded_list`` (``values()``).
SUPERSEDED_JSONL_FIELDS = ("id", "result_id", "item_id", "external_id", "sample_index", "item_version",
                           "current_version", "is_correct", "superseded_at", "superseded_by_name", "row")


def superseded_jsonl(rows: Iterable[dict], *, run_id: int) -> Iterator[str]:
    """One JSON object per row a refresh superseded: which row it was (``result_id``, the one judge labels name as
    ``result:<id>``; the item, the sample, the content version it answered), the item's content version now, when
    and by whom (``superseded_by``: a username, null from the command line) it was superseded, and the old row
    whole (``row``: every field as it was, those of results.jsonl among them). Each (item, sample)'s oldest
    first: with the current row (results.jsonl) last, they are the history of that row."""
    for row in rows:
        yield json.dumps({
            "run": run_id, "superseded_id": row["id"], "result_id": row["result_id"], "item_id": row["item_id"],
            "external_id": row["external_id"], "sample_index": row["sample_index"],
            "item_version": row["item_version"], "current_version": row["current_version"],
            "is_correct": row["is_correct"], "superseded_at": row["superseded_at"].isoformat(),
            "superseded_by": row["superseded_by_name"], "row": row["row"],
        }, ensure_ascii=False) + "\n"
