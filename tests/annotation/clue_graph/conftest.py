"""The real DetectBench records, read once for the clue-graph tests."""
from __future__ import annotations

import json

import pytest

from annotation.clue_graph import check_graph, parse_clue_graph


@pytest.fixture(scope="session")
def records(detectbench_dir) -> dict[str, list[dict]]:
    """{"test": [...], "train": [...]}: every record of the v1.3 files that exist."""
    out = {}
    for split in ("test", "train"):
        path = detectbench_dir / f"{split}.jsonl"
        if path.exists():
            with path.open(encoding="utf-8") as handle:
                out[split] = [json.loads(line) for line in handle if line.strip()]
    return out


@pytest.fixture(scope="session")
def checked_test_items(records) -> list[tuple[dict, object, list]]:
    """(record, parsed graph, issues) for every test item, computed once."""
    out = []
    for record in records["test"]:
        graph = parse_clue_graph(record["clue_graph"]["evidence"], record["clue_graph"]["multi_hop_reasoning"])
        out.append((record, graph, check_graph(graph, record["context"])))
    return out
