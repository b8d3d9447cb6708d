"""Lay out a clue graph in layers and draw it as SVG (pure Python, no Django).

Nodes: one per clue (its text and implication), one per distinct step conclusion,
and a dashed node for a step input that names nothing known. Edges go from a
step's inputs to its conclusion. A clue sits in layer 0; a conclusion one layer
right of its deepest input. The last step's conclusion is marked as final.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from html import escape
from typing import Iterable, Sequence

SAME_NODE_RATIO = 0.75
NODE_WIDTH = 210
COLUMN_GAP = 70
ROW_GAP = 14
LINE_HEIGHT = 14
CHARS_PER_LINE = 30
MAX_LINES = 3
PADDING = 8


@dataclass
class Node:
    id: str
    kind: str  # clue | conclusion | dangling
    label: str
    detail: str = ""
    layer: int = 0
    x: float = 0
    y: float = 0
    width: float = NODE_WIDTH
    height: float = 0
    classes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str


@dataclass
class DrawnGraph:
    nodes: list[Node]
    edges: list[Edge]
    width: float
    height: float

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)


def _norm(text: str) -> str:
    text = re.sub(r"\s+", " ", (text or "").lower().replace("“", '"').replace("”", '"').replace("’", "'"))
    return text.strip(" .,;:!?\"'")


class _Index:
    """Resolve a text to a node id: exact after normalisation, else the closest text above the ratio."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}

    def add(self, text: str, node_id: str) -> None:
        key = _norm(text)
        if key:
            self.keys.setdefault(key, node_id)

    def find(self, text: str) -> str | None:
        key = _norm(text)
        if not key:
            return None
        if key in self.keys:
            return self.keys[key]
        best, best_id = 0.0, None
        for known, node_id in self.keys.items():
            ratio = SequenceMatcher(None, key, known, autojunk=False).ratio()
            if ratio > best:
                best, best_id = ratio, node_id
        return best_id if best >= SAME_NODE_RATIO else None


def build_graph(
    clues: Sequence[tuple[str, str]],
    steps: Sequence[tuple[Sequence[str], str]],
    *,
    unanchored: Iterable[int] = (),
    fuzzy: Iterable[int] = (),
) -> DrawnGraph:
    """Nodes, edges and positions for clues [(text, implication)] and steps [(inputs, output)]."""
    unanchored, fuzzy = set(unanchored), set(fuzzy)
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    index = _Index()
    for i, (text, implication) in enumerate(clues):
        node_id = f"c{i + 1}"
        state = "unanchored" if i in unanchored else "fuzzy" if i in fuzzy else "anchored"
        nodes[node_id] = Node(node_id, "clue", f"{i + 1}. {text}", implication, 0, classes=["clue", state])
        index.add(text, node_id)
        index.add(implication, node_id)
    dangling = 0
    for number, (inputs, output) in enumerate(steps, 1):
        sources = []
        for given in inputs:
            source = index.find(given)
            if source is None:
                dangling += 1
                source = f"d{dangling}"
                nodes[source] = Node(source, "dangling", given, "not a clue or an earlier conclusion", 0,
                                     classes=["dangling"])
                index.add(given, source)
            sources.append(source)
        target = index.find(output) if output else None
        if target is None or target in sources or nodes[target].kind == "clue":
            target = f"s{number}"
            nodes[target] = Node(target, "conclusion", output or "(no conclusion)", "", 0, classes=["conclusion"])
            index.add(output, target)
        layer = 1 + max((nodes[s].layer for s in sources), default=0)
        nodes[target].layer = max(nodes[target].layer, layer)
        for source in sources:
            edge = Edge(source, target)
            if edge not in edges:
                edges.append(edge)
    if steps:
        final = index.find(steps[-1][1]) or f"s{len(steps)}"
        if final in nodes:
            nodes[final].classes.append("final")
    return _place(list(nodes.values()), edges)


def _lines(node: Node) -> list[str]:
    wrapped = textwrap.wrap(node.label, CHARS_PER_LINE) or [""]
    if len(wrapped) > MAX_LINES:
        wrapped = wrapped[:MAX_LINES]
        wrapped[-1] = wrapped[-1][: CHARS_PER_LINE - 1] + "…"
    return wrapped


def _place(nodes: list[Node], edges: list[Edge]) -> DrawnGraph:
    layers: dict[int, list[Node]] = {}
    for node in nodes:
        layers.setdefault(node.layer, []).append(node)
    height = 0.0
    for layer, members in layers.items():
        y = ROW_GAP
        for node in members:
            node.height = len(_lines(node)) * LINE_HEIGHT + 2 * PADDING
            node.x = ROW_GAP + layer * (NODE_WIDTH + COLUMN_GAP)
            node.y = y
            y += node.height + ROW_GAP
        height = max(height, y)
    width = ROW_GAP * 2 + (max(layers, default=0) + 1) * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP
    return DrawnGraph(nodes, edges, width, height)


def render_svg(graph: DrawnGraph, *, title: str = "Clue graph") -> str:
    """The graph as a standalone <svg> element (text escaped; styles inline so it works offline)."""
    by_id = {n.id: n for n in graph.nodes}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="clue-graph-svg" role="img" '
        f'width="{graph.width:.0f}" height="{graph.height:.0f}" viewBox="0 0 {graph.width:.0f} {graph.height:.0f}" '
        f'data-nodes="{len(graph.nodes)}" data-edges="{len(graph.edges)}">',
        f"<title>{escape(title)}</title>",
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
        "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#5f6b7a\"/></marker></defs>",
        "<style>.node rect{fill:#fff;stroke:#5f6b7a;rx:6}.clue.anchored rect{fill:#fff7cc}.clue.fuzzy rect{fill:#ffe3c4}"
        ".clue.unanchored rect{fill:#fbe3e1;stroke:#b3261e;stroke-dasharray:4 3}.dangling rect{stroke-dasharray:4 3;fill:#f3f3f3}"
        ".final rect{stroke:#1f7a3a;stroke-width:2.5}.node text{font:12px system-ui,sans-serif;fill:#1d2330}"
        ".edge{fill:none;stroke:#8a94a3;stroke-width:1.3}</style>",
    ]
    for edge in graph.edges:
        a, b = by_id[edge.source], by_id[edge.target]
        x1, y1 = a.x + a.width, a.y + a.height / 2
        x2, y2 = b.x, b.y + b.height / 2
        mid = (x1 + x2) / 2
        parts.append(f'<path class="edge" data-from="{a.id}" data-to="{b.id}" marker-end="url(#arrow)" '
                     f'd="M {x1:.0f} {y1:.0f} C {mid:.0f} {y1:.0f}, {mid:.0f} {y2:.0f}, {x2:.0f} {y2:.0f}"/>')
    for node in graph.nodes:
        tooltip = node.label + (f" → {node.detail}" if node.detail else "")
        parts.append(f'<g class="node {" ".join(node.classes)}" id="node-{node.id}" data-node="{node.id}">'
                     f"<title>{escape(tooltip)}</title>"
                     f'<rect x="{node.x:.0f}" y="{node.y:.0f}" width="{node.width:.0f}" height="{node.height:.0f}"/>')
        for k, line in enumerate(_lines(node)):
            parts.append(f'<text x="{node.x + PADDING:.0f}" y="{node.y + PADDING + (k + 1) * LINE_HEIGHT - 3:.0f}">'
                         f"{escape(line)}</text>")
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
