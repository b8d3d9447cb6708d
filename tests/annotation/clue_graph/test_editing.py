"""annotation.clue_graph.editing: editable rows, back to the official texts."""
from __future__ import annotations

import json

from annotation import clue_graph
from annotation.clue_graph.editing import editable_graph


def test_editable_graph_round_trip_keeps_clues_and_steps(detectbench_dir):
    for line in (detectbench_dir / "test.jsonl").read_text().splitlines():
        cg = json.loads(line)["clue_graph"]
        evidence, reasoning = editable_graph(cg["evidence"], cg["multi_hop_reasoning"]).texts()
        before = clue_graph.parse_clue_graph(cg["evidence"], cg["multi_hop_reasoning"])
        after = clue_graph.parse_clue_graph(evidence, reasoning)
        assert [(c.text, c.implication) for c in after.clues] == [(c.text, c.implication) for c in before.clues]
        assert [(s.inputs, s.output) for s in after.steps] == [(s.inputs, s.output) for s in before.steps]
        assert clue_graph.gold_key_information(evidence) == clue_graph.gold_key_information(cg["evidence"])
        # Numbered rows stay numbered (the "1. " is not dropped on save).
        for rows_before, rows_after in ((before.clues, after.clues), (before.steps, after.steps)):
            if rows_before and all(r.prefix for r in rows_before) and not before.unparsed_lines:
                assert [r.prefix for r in rows_after] == [r.prefix for r in rows_before]


def test_clue_fix_follows_into_steps():
    graph = editable_graph("old clue -> meaning", "After correlating the clues:\nold clue + meaning -> end")
    fixed = graph.with_clue_text(0, "new clue")
    assert fixed.clues == [("new clue", "meaning")] and fixed.steps[0].inputs == ["new clue", "meaning"]
    assert graph.clues == [("old clue", "meaning")]  # the original is untouched


def test_numbering_style_is_kept_and_rows_are_renumbered_after_edits():
    graph = editable_graph("1. boots -> garden\n2. key -> lock\n3. snow -> tracks",
                           "After correlating the clues:\n(1) garden + lock -> gardener\n(2) gardener -> The gardener")
    graph.clues.pop(1)
    graph.clues.append(("new clue", "new meaning"))
    evidence, reasoning = graph.texts()
    assert evidence.splitlines() == ["1. boots -> garden", "2. snow -> tracks", "3. new clue -> new meaning"]
    assert reasoning.splitlines()[1:] == ["(1) garden + lock -> gardener", "(2) gardener -> The gardener"]
    plain = editable_graph("boots -> garden", "After correlating the clues:\ngarden -> The gardener")
    assert plain.texts() == ("boots -> garden", "After correlating the clues:\ngarden -> The gardener")
