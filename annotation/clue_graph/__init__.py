"""Clue graphs of DetectBench records: parse, render, anchor, check, edit and draw them.

Pure Python (no Django), one module per concern:

- :mod:`.data`: :class:`Clue`, :class:`Step`, :class:`ClueGraph` and the official format's constants;
- :mod:`.parse` / :mod:`.render`: the two record texts to a graph and back (round trip);
- :mod:`.anchor`: where each clue is in the context (exact, else the best fuzzy span);
- :mod:`.nodes`: when two texts name the same node (used by the checks and the drawing alike);
- :mod:`.checks`: the issues of a graph, each of a declared :class:`IssueKind`;
- :mod:`.editing`: the graph as editable rows and the editor's operations;
- :mod:`.drawing`: layers and an SVG picture of the graph.

Text tokens, normalisation and stop words come from :mod:`annotation.text`.
"""
from annotation.clue_graph.anchor import ANCHOR_MIN_SCORE, Anchor, anchor_clues, locate_span
from annotation.clue_graph.checks import ISSUE_KINDS, Issue, IssueKind, check_graph
from annotation.clue_graph.data import ARROW, DEFAULT_EVIDENCE_HEADER, DEFAULT_REASONING_HEADER, Clue, ClueGraph, Step
from annotation.clue_graph.nodes import REFERENCE_MIN_SIMILARITY
from annotation.clue_graph.parse import gold_key_information, parse_clue_graph, parse_evidence, parse_reasoning
from annotation.clue_graph.render import render_evidence, render_reasoning

__all__ = [
    "ANCHOR_MIN_SCORE",
    "ARROW",
    "Anchor",
    "Clue",
    "ClueGraph",
    "DEFAULT_EVIDENCE_HEADER",
    "DEFAULT_REASONING_HEADER",
    "ISSUE_KINDS",
    "Issue",
    "IssueKind",
    "REFERENCE_MIN_SIMILARITY",
    "Step",
    "anchor_clues",
    "check_graph",
    "gold_key_information",
    "locate_span",
    "parse_clue_graph",
    "parse_evidence",
    "parse_reasoning",
    "render_evidence",
    "render_reasoning",
]
