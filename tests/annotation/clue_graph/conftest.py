"""The real DetectBench records, read once for the clue-graph tests."""
from __future__ import annotations

import json

import pytest


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
