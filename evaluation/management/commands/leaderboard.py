"""`python manage.py leaderboard --split SPLIT [--reference METHOD@ENDPOINT] [--pairwise holm|bh]
[--format table|json|csv|latex] [--out FILE]`: the leaderboard (paper Table 4) of a split, as on the page; with
--pairwise, every pair of its cells (and humans against each) instead, with that correction."""
from __future__ import annotations

import json
from pathlib import Path

from django import forms
from django.core.management.base import BaseCommand, CommandError

from evaluation.exports import tables as table_exports
from evaluation.forms.runs import parse_item_ids
from evaluation.models import OptionOrder
from evaluation.selectors.leaderboard import leaderboard
from evaluation.selectors.pairwise import pairwise_table
from evaluation.statistics.paired import CORRECTIONS
from evaluation.statistics.quality_checks import FLAG_KINDS
from foundation.error_mapping import REFUSED, error_text


def flag_kinds(value: str) -> tuple[str, ...]:
    """--exclude-flagged's value: "all" (the flag alone) is every kind; else comma-separated kinds."""
    if value == "all":
        return tuple(FLAG_KINDS)
    return tuple(k.strip() for k in value.split(",") if k.strip())

WRITERS = {
    "table": table_exports.leaderboard_text,
    "json": table_exports.leaderboard_json,
    "csv": table_exports.leaderboard_csv,
    "latex": table_exports.leaderboard_latex,
}


def _pairwise_text(table, o) -> str:
    result = pairwise_table(table, correction=o["pairwise"])
    if o["format"] == "csv":
        return table_exports.pairwise_csv(result)
    if o["format"] == "latex":
        return table_exports.pairwise_latex(result, scope=table.scope)
    if o["format"] == "json":
        return json.dumps(result.as_json() | {"scope": table.scope}, indent=2)
    lines = [f"Every pair: {table.scope}; {result.correction_label}, * = corrected p < {result.alpha}"]
    for t in result.tests:
        adjusted = "--" if t.p_adjusted is None else f"{t.p_adjusted:.4g}" + ("*" if t.significant else "")
        lines.append(f"{t.a[:36]:<36} {t.b[:36]:<36} n={t.n:<5} {t.a_better:>4}/{t.b_better:<4} {adjusted}")
    return "\n".join(lines) + "\n"


class Command(BaseCommand):
    help = ("The leaderboard of a split (the latest finished run of each method on each endpoint): accuracy with "
            "its Wilson interval, KeyInfo, n, the first-option baseline and, against --reference, the discordant "
            "pairs, the exact McNemar p and its Holm correction.")

    def add_arguments(self, parser):
        parser.add_argument("--split", default="", help="The split (required unless --runs is given)")
        parser.add_argument("--runs", default="", help="Comma-separated run ids instead: their common items")
        parser.add_argument("--option-order", choices=OptionOrder.values, default=OptionOrder.ORIGINAL)
        parser.add_argument("--common", action="store_true", help="Only the items common to every cell")
        parser.add_argument("--reference", default="", help="METHOD@ENDPOINT of the reference cell")
        parser.add_argument("--exclude-flagged", nargs="?", const="all", default="", metavar="KINDS",
                            help="Leave out the items the data-quality report flags: every kind, or the "
                                 f"comma-separated kinds given ({', '.join(FLAG_KINDS)})")
        parser.add_argument("--pairwise", choices=list(CORRECTIONS), default="",
                            help="Every pair of cells instead (exact McNemar; humans by item sign-flip), corrected "
                                 "by holm (family-wise) or bh (Benjamini-Hochberg, false discovery rate)")
        parser.add_argument("--format", choices=sorted(WRITERS), default="table")
        parser.add_argument("--out", help="Write to this file instead of standard output")

    def handle(self, *args, **o):
        try:
            run_ids = parse_item_ids(o["runs"])
        except forms.ValidationError as exc:
            raise CommandError(f"--runs: {' '.join(exc.messages)}") from exc
        if not o["split"] and not run_ids:
            raise CommandError("give --split (or --runs): a table over several item sets would compare unlike things")
        try:
            table = leaderboard(split=o["split"], run_ids=run_ids, option_order=o["option_order"],
                                common=o["common"], reference=o["reference"],
                                exclude=flag_kinds(o["exclude_flagged"]))
        except REFUSED as exc:
            raise CommandError(error_text(exc)) from exc
        text = WRITERS[o["format"]](table) if not o["pairwise"] else _pairwise_text(table, o)
        if o["out"]:
            Path(o["out"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {len(table.cells)} cells to {o['out']}")
        else:
            self.stdout.write(text, ending="")
        if table.excluded_kinds:
            self.stderr.write(f"{table.excluded_items} flagged item(s) excluded ({', '.join(table.excluded_kinds)})")
