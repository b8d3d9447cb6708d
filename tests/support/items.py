"""Load real DetectBench records into the test database."""
from __future__ import annotations

import io
from itertools import islice
from pathlib import Path

from annotation.services import item_import


def import_items(path: Path, *, split: str, limit: int | None = None) -> int:
    """Import the first `limit` records of a JSONL file (all when None); returns how many were created."""
    with open(path, "rb") as handle:
        lines = list(islice(handle, limit)) if limit else handle.readlines()
    report = item_import(stream=io.BytesIO(b"".join(lines)), file_name=Path(path).name, source="detectbench-v1.3",
                         split=split)
    return report.created


def import_text(text: str, *, file_name: str = "t.jsonl", source: str = "t", split: str = "dev", **kwargs):
    """Import JSONL given as a string (tests' records); returns the ImportReport."""
    return item_import(stream=io.BytesIO(text.encode("utf-8")), file_name=file_name, source=source, split=split,
                       **kwargs)
