"""The judge's prompt templates, kept as files under evaluation/judge_templates/ (no Django inside).

Each template is a text with ``{placeholders}`` (literal braces doubled). Its hash is
stored on every label it produced, so a label always says which prompt it answered.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

TEMPLATES_DIR = Path(__file__).resolve().parent / "judge_templates"
#: Bump when the way a judge prompt is assembled or read changes (the template texts are hashed themselves).
ASSEMBLY_VERSION = "1"


def template_names() -> list[str]:
    return sorted(path.stem for path in TEMPLATES_DIR.glob("*.txt"))


@functools.cache
def template_text(name: str) -> str:
    path = TEMPLATES_DIR / f"{name}.txt"
    if not name or "/" in name or not path.is_file():
        raise ValueError(f"unknown judge template {name!r}; choose from {', '.join(template_names())}")
    return path.read_text(encoding="utf-8").rstrip("\n")


def render(name: str, **values: str) -> str:
    """Fill a template's ``{placeholders}`` (values inserted verbatim)."""
    return template_text(name).format_map(values)


def template_hash(name: str) -> str:
    """A short content hash of a template (12 hex digits), salted with the assembly version."""
    digest = hashlib.sha256(f"judge:{ASSEMBLY_VERSION}\0{name}\0".encode())
    digest.update(template_text(name).encode())
    return digest.hexdigest()[:12]
