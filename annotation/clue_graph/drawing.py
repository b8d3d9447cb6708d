"""Lay out a clue graph in layers and draw it as SVG (pure Python, no Django).

Nodes: one per clue (its text and implication), one per distinct step conclusion,
and a dashed node for a step input that refers to nothing known. Which node a
step input refers to is decided by :mod:`.nodes`, as for the checks. Edges go
from a step's inputs to its conclusion. A clue sits in layer 0; a conclusion one
layer right of its deepest input. The last step's conclusion is marked as final.
"""
from __future__ import annotations

import re
import textwrap
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape

from annotation.clue_graph.data import ClueGraph
from annotation.clue_graph.nodes import clue_node_id, link_steps
from annotation.text import node_key

NODE_WIDTH = 290
COLUMN_GAP = 80
ROW_GAP = 16
LINE_HEIGHT = 20
CHARS_PER_LINE = 32
MAX_LINES = 4
PADDING = 10


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
    #: The node of each step's conclusion (evidence steps, then reasoning steps).
    step_targets: list[str] = field(default_factory=list)

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)


def draw_graph(graph: ClueGraph, *, unanchored: Iterable[int] = (), fuzzy: Iterable[int] = ()) -> DrawnGraph:
    """Nodes, edges and positions of a parsed graph (evidence steps, then reasoning steps).

    Each step input is drawn from the nodes :func:`.nodes.link_steps` resolved it to
    (the checks use the same resolution), or from a dashed node when it refers to
    nothing: such an input is exactly what the checks report as a dangling reference.
    ``unanchored`` / ``fuzzy``: indexes of clues to mark.
    """
    unanchored, fuzzy = set(unanchored), set(fuzzy)
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    for clue in graph.clues:
        node_id = clue_node_id(clue.index)
        state = "unanchored" if clue.index in unanchored else "fuzzy" if clue.index in fuzzy else "anchored"
        nodes[node_id] = Node(node_id, "clue", f"{clue.index + 1}. {clue.text}", clue.implication, 0,
                              classes=["clue", state])
    dangling: dict[str, str] = {}  # the same unknown text twice is one dashed node
    links = link_steps(graph)
    for link in links:
        sources: list[str] = []
        for given, found in zip(link.step.inputs, link.sources):
            if found is None:
                key = node_key(given)
                if key not in dangling:
                    dangling[key] = f"d{len(dangling) + 1}"
                    nodes[dangling[key]] = Node(dangling[key], "dangling", given, "not a clue or an earlier conclusion",
                                                0, classes=["dangling"])
                found = (dangling[key],)
            sources.extend(s for s in found if s not in sources)
        if link.target not in nodes:
            nodes[link.target] = Node(link.target, "conclusion", link.step.output or "(no conclusion)", "", 0,
                                      classes=["conclusion"])
        target = nodes[link.target]
        target.layer = max(target.layer, 1 + max((nodes[s].layer for s in sources), default=0))
        for source in sources:
            edge = Edge(source, link.target)
            if edge not in edges:
                edges.append(edge)
    if links:
        nodes[links[-1].target].classes.append("final")
    drawn = _place(list(nodes.values()), edges)
    drawn.step_targets = [link.target for link in links]
    return drawn


def _lines(node: Node) -> list[str]:
    """The node's label in lines of at most CHARS_PER_LINE columns: a Chinese (wide) character takes two, as it
    does in the box (wrapped by characters, 32 of them ran out of their box)."""
    wide = any(unicodedata.east_asian_width(c) in "WF" for c in node.label)
    wrapped = (_wrap_wide(node.label, CHARS_PER_LINE) if wide else textwrap.wrap(node.label, CHARS_PER_LINE)) or [""]
    if len(wrapped) > MAX_LINES:
        wrapped = wrapped[:MAX_LINES]
        wrapped[-1] = _cut(wrapped[-1], CHARS_PER_LINE - 1) + "…"
    return wrapped


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cut(text: str, columns: int) -> str:
    """The longest start of `text` within `columns`."""
    used = 0
    for i, c in enumerate(text):
        used += _columns(c)
        if used > columns:
            return text[:i]
    return text


def _wrap_wide(text: str, columns: int) -> list[str]:
    """Greedy lines of at most `columns` columns, broken at spaces where there are any, else between characters."""
    lines, line = [], ""
    for word in re.findall(r"\S+\s*", text):
        if line and _columns((line + word).rstrip()) > columns:
            lines.append(line.rstrip())
            line = ""
        while _columns((line + word).rstrip()) > columns:  # a run wider than a line (Chinese has no spaces)
            head = _cut(line + word, columns)
            lines.append(head.rstrip())
            word, line = (line + word)[len(head):], ""
        line += word
    if line.strip():
        lines.append(line.rstrip())
    return lines


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
    """The graph as an <svg> element to put into a page (text escaped).

    Its look comes from the page's stylesheet (annotation/static/annotation/workflow.css, the
    ``.clue-graph-svg`` rules), not from a style element inside it: the site's Content-Security-Policy
    allows no inline styles.
    """
    by_id = {n.id: n for n in graph.nodes}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="clue-graph-svg" role="img" '
        f'width="{graph.width:.0f}" height="{graph.height:.0f}" viewBox="0 0 {graph.width:.0f} {graph.height:.0f}" '
        f'data-nodes="{len(graph.nodes)}" data-edges="{len(graph.edges)}">',
        f"<title>{escape(title)}</title>",
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
        "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#5f6b7a\"/></marker></defs>",
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
        parts.append(f'<g class="node {" ".join(node.classes)}" id="node-{node.id}" data-node="{node.id}" translate="no">'
                     f"<title>{escape(tooltip)}</title>"
                     f'<rect x="{node.x:.0f}" y="{node.y:.0f}" width="{node.width:.0f}" height="{node.height:.0f}"/>')
        for k, line in enumerate(_lines(node)):
            parts.append(f'<text x="{node.x + PADDING:.0f}" y="{node.y + PADDING + (k + 1) * LINE_HEIGHT - 5:.0f}">'
                         f"{escape(line)}</text>")
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
