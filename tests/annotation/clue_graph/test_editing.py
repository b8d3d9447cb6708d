"""annotation.clue_graph.editing: editable rows, back to the official texts."""
from __future__ import annotations

import json

import pytest

from annotation import clue_graph
from annotation.clue_graph.editing import (
    EditableGraph,
    EditableStep,
    apply_action,
    editable_graph,
    editor_view,
    snap_span,
)


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


# --------------------------------------------------------------------------
# The editor's operations

CONTEXT = "The hut was cold. Mud lay on the boots, and the lantern had burned out.\nNobody came."


def test_snap_span_trims_spaces_and_trailing_punctuation():
    start = CONTEXT.index(" Mud")
    assert CONTEXT[slice(*snap_span(CONTEXT, start, CONTEXT.index(",") + 1))] == "Mud lay on the boots"
    assert snap_span(CONTEXT, -5, 3) == (0, 3)
    assert snap_span(CONTEXT, 10, 10**6)[1] == len(CONTEXT) - 1  # the final full stop is dropped


def test_apply_action_adds_removes_rows_and_fixes_a_clue_from_a_span():
    graph = editable_graph("mud on boots -> he was outside", "he was outside -> The gardener")
    graph, error = apply_action(graph, CONTEXT, {"action": "add_clue"})
    assert error is None and graph.clues[-1] == ("", "")
    graph, _ = apply_action(graph, CONTEXT, {"action": "remove_clue:1"})
    graph, _ = apply_action(graph, CONTEXT, {"action": "add_step"})
    assert len(graph.clues) == 1 and len(graph.steps) == 2
    graph, _ = apply_action(graph, CONTEXT, {"action": "remove_step:1"})
    start = CONTEXT.index("Mud")
    fixed, error = apply_action(graph, CONTEXT, {"action": f"fix:0:{start}:{CONTEXT.index(',') + 1}"})
    assert error is None and fixed.clues == [("Mud lay on the boots", "he was outside")]
    # A selection whose offsets drifted is found by its text.
    selected, error = apply_action(graph, CONTEXT, {"action": "select", "fix_clue": "0", "fix_start": "0",
                                                    "fix_end": "4", "fix_text": "the lantern had burned out"})
    assert error is None and selected.clues[0][0] == "the lantern had burned out"


@pytest.mark.parametrize("fields, message", [
    ({"action": "fix:0:x:3"}, "the span to use is not valid: pick the text again"),
    ({"action": "fix:7:0:3"}, "choose a clue first"),
    ({"action": "select", "fix_clue": "0", "fix_start": "0", "fix_end": "3", "fix_text": "zebra"},
     "the selected text is not part of the context"),
    ({"action": "fix:0:3:4"}, "empty selection"),
])
def test_apply_action_refuses_a_bad_span_and_keeps_the_graph(fields, message):
    graph = editable_graph("mud on boots -> he was outside", "")
    result, error = apply_action(graph, CONTEXT, fields)
    assert error == message and result.clues == [("mud on boots", "he was outside")]


def test_editor_view_rows_checks_and_drawing_agree():
    graph = editable_graph("Mud lay on the boots -> he was outside\nzebra quantum -> nothing",
                           "After correlating the clues:\nhe was outside + a ladder -> The cook")
    graph.clues.insert(1, ("", ""))  # an empty row being added: the drawing must still mark the right clue
    shown = editor_view(graph, context=CONTEXT, options=["The gardener", "The cook"], answer_index=0,
                        answer_text="The gardener")
    assert [row.state for row in shown.clue_rows] == ["exact", "unanchored", "unanchored"]
    assert shown.spans == [(CONTEXT.index("Mud"), CONTEXT.index(","), 0, True)]
    assert (shown.unanchored, shown.fuzzy) == (2, 0)
    assert [(i.kind, i.subject) for i in shown.issues if i.kind == "dangling_reference"] == [
        ("dangling_reference", "a ladder")]
    assert "no_answer" in [i.kind for i in shown.issues]
    assert not {"unanchored_clue", "fuzzy_clue"} & {i.kind for i in shown.issues}
    assert "unanchored" in shown.drawn.node("c2").classes and "anchored" in shown.drawn.node("c1").classes
    assert [n.label for n in shown.drawn.nodes if n.kind == "dangling"] == ["a ladder"]
    (step,) = shown.step_rows
    assert step.extra == "a ladder" and ("he was outside", "1 ⇒ he was outside", True) in step.options


def test_step_inputs_name_what_they_refer_to_like_the_checks():
    from annotation.clue_graph.editing import EditableGraph, EditableStep, step_input_references

    graph = EditableGraph(clues=[("Mud on his boots", "he was outside"), ("", ""),
                                 ("The door was locked", "no way in")],
                          steps=[EditableStep(["he was outside", "a ladder"], "he came in by the window"),
                                 EditableStep(["he came in by the window", "no way in"], "the gardener")])
    first, second = step_input_references(graph)
    assert [(i.text, i.refers_to, i.dangling) for i in first] == [("he was outside", "clue 1", False),
                                                                   ("a ladder", "", True)]
    # The empty clue row is left out when saving: "no way in" is still the third row, and S1 is the step above.
    assert [(i.refers_to, i.dangling) for i in second] == [("S1", False), ("clue 3", False)]
    shown = editor_view(graph, context="Mud on his boots. The door was locked.", options=["the gardener", "x"],
                        answer_index=0, answer_text="the gardener")
    assert [i.subject for i in shown.issues if i.kind == "dangling_reference"] == ["a ladder"]
    assert shown.step_rows[0].inputs == first


@pytest.mark.parametrize("action", ["remove_clue:²", "remove_step:①", "remove_clue:٣", "remove_clue:-1", "remove_step:"])
def test_a_row_number_that_is_not_ascii_digits_removes_nothing(action):
    graph = EditableGraph([("a clue", "a fact")], [EditableStep(["a fact"], "the answer")])
    changed, _ = apply_action(graph, "the context", {"action": action})
    assert changed.clues == [("a clue", "a fact")] and len(changed.steps) == 1
