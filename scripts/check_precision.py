"""How often each clue-graph check fires on the real DetectBench items, before and after a change.

    .venv/bin/python scripts/check_precision.py                  # share of items per check, before / after
    .venv/bin/python scripts/check_precision.py --sample dangling_reference --n 30 --seed 1
                                                                 # 30 flagged items to judge by hand

"Before" is ``annotation/clue_graph.py`` as it was at ``--before`` (a git revision,
by default the last one in which the checks were one module), loaded from git
without touching the working tree; "after" is the ``annotation.clue_graph``
package of the working tree. Pure: no Django, no database.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: The last revision with the single-module checks (before the text module and the package).
BEFORE = "02e3906"


def _data_file(split: str) -> Path:
    if os.environ.get("DETECTBENCH_DATA"):
        return Path(os.environ["DETECTBENCH_DATA"]) / f"{split}.jsonl"
    for base in (REPO.parent / "shared" / "detectbench" / "v1.3", Path("/work/shared/detectbench/v1.3")):
        if (base / f"{split}.jsonl").exists():
            return base / f"{split}.jsonl"
    sys.exit("DetectBench data not found: set DETECTBENCH_DATA to the folder holding test.jsonl")


def _new_checks() -> types.ModuleType:
    """The annotation.clue_graph package of this checkout."""
    sys.path.insert(0, str(REPO))
    from annotation import clue_graph

    return clue_graph


def _old_checks(revision: str) -> types.ModuleType:
    source = subprocess.run(["git", "show", f"{revision}:annotation/clue_graph.py"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("clue_graph_before")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:annotation/clue_graph.py", "exec"), module.__dict__)
    return module


def flags(module, records: list[dict]) -> dict[int, list]:
    """{item id: its issues} under one version of the checks."""
    out = {}
    for record in records:
        graph = module.parse_clue_graph(record["clue_graph"]["evidence"], record["clue_graph"]["multi_hop_reasoning"])
        out[record["id"]] = module.check_graph(graph, record["context"])
    return out


def shares(issues_by_item: dict[int, list]) -> Counter:
    """Items with at least one issue of each kind."""
    counted: Counter = Counter()
    for issues in issues_by_item.values():
        counted.update({str(issue.kind) for issue in issues})
    return counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="test")
    parser.add_argument("--before", default=BEFORE, help="git revision of the old checks (default %(default)s)")
    parser.add_argument("--sample", metavar="KIND", help="print flagged items of this kind (after) to judge")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    with _data_file(args.split).open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    clue_graph = _new_checks()
    after = flags(clue_graph, records)
    if args.sample:
        _print_sample(records, after, args.sample, args.n, args.seed)
        return
    before = shares(flags(_old_checks(args.before), records))
    now = shares(after)
    n = len(records)
    print(f"{args.split}: {n} items; items flagged by each check, before ({args.before}) and after (working tree)")
    print(f"{'check':<20}{'before':>16}{'after':>16}")
    for kind in clue_graph.ISSUE_KINDS:
        if before[kind] or now[kind]:
            print(f"{kind:<20}{before[kind]:>7} {before[kind] / n:>7.1%}{now[kind]:>7} {now[kind] / n:>7.1%}")


def _print_sample(records: list[dict], after: dict[int, list], kind: str, n: int, seed: int) -> None:
    by_id = {record["id"]: record for record in records}
    flagged = sorted(item for item, issues in after.items() if any(issue.kind == kind for issue in issues))
    chosen = sorted(random.Random(seed).sample(flagged, min(n, len(flagged))))
    print(f"{len(flagged)} items flagged {kind}; {len(chosen)} drawn with seed {seed}")
    for item in chosen:
        record = by_id[item]
        print(f"\n=== item {item}")
        for issue in after[item]:
            if issue.kind == kind:
                print(f"  [{issue.section} line {issue.line_no}] {issue.message}")
        print("  evidence:\n    " + record["clue_graph"]["evidence"].replace("\n", "\n    "))
        print("  reasoning:\n    " + record["clue_graph"]["multi_hop_reasoning"].replace("\n", "\n    "))


if __name__ == "__main__":
    main()
