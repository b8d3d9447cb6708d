"""Server-side diffs of item content (pure Python: difflib and html escaping only)."""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from html import escape

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)


@dataclass(frozen=True)
class FieldDiff:
    field: str
    old: str
    new: str
    html: str  # the new text with <del>/<ins> marks, safe to insert into a page


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(f"{i + 1}. {v}" for i, v in enumerate(value))
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def inline_diff(old: str, new: str) -> str:
    """Word-level diff of two texts as HTML: deletions in <del>, insertions in <ins>."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        if op in ("delete", "replace"):
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return "".join(out)


def content_diff(old: dict, new: dict, fields=None) -> list[FieldDiff]:
    """The fields whose values differ between two content snapshots, with inline diffs."""
    names = fields or sorted(set(old) | set(new), key=lambda n: (n not in _ORDER, _ORDER.get(n, 0), n))
    diffs = []
    for name in names:
        before, after = _as_text(old.get(name)), _as_text(new.get(name))
        if before != after:
            diffs.append(FieldDiff(name, before, after, inline_diff(before, after)))
    return diffs


_ORDER = {name: i for i, name in enumerate(
    ("context", "question", "options", "answer_index", "evidence", "reasoning", "translations", "extra"))}


@dataclass(frozen=True)
class Merge:
    content: dict  # the fields merged
    taken: tuple[str, ...]  # fields (or "options N") only the others changed: their text now
    clashes: tuple[str, ...]  # fields (or "options N") both changed, differently: yours kept, to compare


def merge_three(base: dict, theirs: dict, mine: dict, fields: tuple[str, ...]) -> Merge:
    """A three-way merge of `mine` (an edit made from `base`) with `theirs` (the stored content, saved by others from
    `base` meanwhile): a field only they changed takes their value, one only I changed keeps mine, one we both
    changed differently keeps mine and is named a clash. Options of one length are merged option by option."""
    merged, taken, clashes = {}, [], []

    def pick(name: str, b, t, m):
        if m == b or m == t:
            if t != b and m != t:
                taken.append(name)
            return t
        if t != b:
            clashes.append(name)
        return m

    for name in fields:
        b, t, m = base.get(name), theirs.get(name), mine.get(name)
        if name == "options" and all(isinstance(x, list) for x in (b, t, m)) and len(b) == len(t) == len(m):
            merged[name] = [pick(f"options {i + 1}", *triple) for i, triple in enumerate(zip(b, t, m))]
        else:
            merged[name] = pick(name, b, t, m)
    return Merge(merged, tuple(taken), tuple(clashes))
