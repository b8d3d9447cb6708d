"""`python manage.py figure NAME --split SPLIT --out FILE.png|pdf|svg`: one of the dashboard's figures as a file."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.figures.data import FIGURES
from evaluation.figures.drawing import FORMATS, draw, render
from evaluation.management.commands.leaderboard import flag_kinds
from evaluation.models import OptionOrder
from evaluation.selectors import analysis
from evaluation.statistics.quality_checks import FLAG_KINDS
from foundation.error_mapping import REFUSED, error_text
from foundation.numerals import is_number


class Command(BaseCommand):
    help = "Draw a figure of the dashboard into a PNG, PDF or SVG file (or its numbers into a .json file)."

    def add_arguments(self, parser):
        parser.add_argument("name", choices=list(FIGURES), help="The figure, as named on the figures page")
        parser.add_argument("--split", required=True, help="The split whose runs it shows (never a mix)")
        parser.add_argument("--out", required=True, help="FILE.png, FILE.pdf, FILE.svg or FILE.json")
        parser.add_argument("--option-order", default=OptionOrder.ORIGINAL,
                            choices=[*OptionOrder.values, "any"], help="Runs with this option order (default original)")
        parser.add_argument("--exclude", default="", help=f"Comma-separated flags to exclude: {', '.join(FLAG_KINDS)}")
        parser.add_argument("--exclude-flagged", nargs="?", const="all", default="", metavar="KINDS",
                            help="Leave out every flagged item (or the comma-separated kinds given)")
        parser.add_argument("--runs", default="", help="Comma-separated run ids to show (default: the latest "
                                                         "finished run of each method and endpoint on the split)")

    def handle(self, *args, name, split, out, option_order, exclude, exclude_flagged, runs="", **options):
        path = Path(out)
        fmt = path.suffix.lower().lstrip(".")
        if fmt not in (*FORMATS, "json"):
            raise CommandError(f"--out must end in .png, .pdf, .svg or .json, not {path.name!r}")
        try:
            data = analysis.figure_data(name, split=split, option_order="" if option_order == "any" else option_order,
                                        exclude=[*flag_kinds(exclude_flagged),
                                                 *(k.strip() for k in exclude.split(",") if k.strip())],
                                        run_ids=_run_ids(runs))
        except REFUSED as exc:
            raise CommandError(error_text(exc)) from exc
        if fmt == "json":
            import json

            path.write_text(json.dumps({"figure": name, "split": split, **data.as_dict()}, indent=2))
        else:
            path.write_bytes(render(draw(data), fmt))
        r = getattr(data, "r", None)
        self.stdout.write(f"{name}: {path} ({data.note})" + (f"; Pearson r = {r:.4f}" if r is not None else ""))


def _run_ids(text: str) -> list[int]:
    parts = [p.strip().lstrip("#") for p in text.split(",") if p.strip()]
    if not all(is_number(p, most_digits=18) for p in parts):
        raise CommandError(f"--runs takes run ids separated by commas, not {text!r}")
    return [int(p) for p in parts]
