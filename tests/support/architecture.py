"""Reads the import graph of the apps from their source (ast), for the architecture test."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

#: Which app may import which: annotation is the bottom, studies and evaluation read it,
#: evaluation may read studies (analysis that joins human and model results), never the reverse.
FORBIDDEN = {
    "annotation": {"studies", "evaluation"},
    "studies": {"evaluation"},
}
DJANGO_ROOTS = {"django", "rest_framework", "drf_spectacular", "django_htmx", "celery"}


@dataclass(frozen=True)
class Violation:
    module: str
    line: int
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: imports {self.imported} ({self.rule})"


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, module: str) -> list[tuple[int, str]]:
    """Every module that `path` imports (at the top or inside functions), relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names if not node.module]
    return found


def source_files(root: Path, apps: tuple[str, ...]):
    for app in apps:
        for path in sorted((root / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def check(root: Path, *, apps: tuple[str, ...] = ("annotation", "studies", "evaluation"),
          pure: tuple[str, ...] = ()) -> list[Violation]:
    """Wrong-way imports between apps, and Django (or DRF, Celery) imported by a pure module."""
    violations = []
    for path in source_files(root, apps):
        module = module_name(root, path)
        app = module.split(".")[0]
        is_pure = any(module == p or module.startswith(p + ".") for p in pure)
        for line, imported in imports_of(path, module):
            top = imported.split(".")[0]
            if top in FORBIDDEN.get(app, set()):
                violations.append(Violation(module, line, imported, f"{app} must not import {top}"))
            if is_pure and top in DJANGO_ROOTS:
                violations.append(Violation(module, line, imported, "a pure module must not import Django"))
            if is_pure and top in apps and not any(imported == p or imported.startswith(p + ".") for p in pure):
                violations.append(Violation(module, line, imported, "a pure module imports only pure modules"))
    return violations
