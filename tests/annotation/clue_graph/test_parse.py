"""annotation.clue_graph.parse and .render: the record texts to a graph and back."""
from __future__ import annotations

import pytest

from annotation.clue_graph import (
    ISSUE_KINDS,
    Clue,
    ClueGraph,
    Step,
    check_graph,
    gold_key_information,
    parse_clue_graph,
    render_evidence,
    render_reasoning,
)


def kinds(issues):
    return [issue.kind for issue in issues]


def test_simple_evidence_and_reasoning():
    graph = parse_clue_graph(
        "The door was locked -> The killer had a key\nThe dog did not bark -> The killer was known to the dog",
        "After correlating the clues:\nThe killer had a key + The killer was known to the dog -> The butler did it",
    )
    assert graph.clues == (
        Clue(0, "The door was locked", "The killer had a key", 1),
        Clue(1, "The dog did not bark", "The killer was known to the dog", 2),
    )
    assert graph.steps == (
        Step(("The killer had a key", "The killer was known to the dog"), "The butler did it", 2),
    )
    assert graph.reasoning_header == "After correlating the clues:"
    assert graph.evidence_header is None
    assert graph.unparsed_lines == ()
    assert gold_key_information(
        "The door was locked -> The killer had a key\nThe dog did not bark -> The killer was known to the dog"
    ) == ["The door was locked", "The dog did not bark"]


def test_numbered_lines_keep_their_prefix_and_round_trip():
    evidence = "1. The victim recorded before dying -> She knew\n2) A click -> The recorder was stopped\n(3) No damage -> Unaware"
    graph = parse_clue_graph(evidence, "")
    assert [c.text for c in graph.clues] == ["The victim recorded before dying", "A click", "No damage"]
    assert [c.prefix for c in graph.clues] == ["1. ", "2) ", "(3) "]
    assert gold_key_information(evidence) == ["The victim recorded before dying", "A click", "No damage"]
    assert render_evidence(graph.clues) == evidence
    assert render_evidence(graph.clues, numbering=False).splitlines()[0] == "The victim recorded before dying -> She knew"
    assert render_evidence(graph.clues, numbering=True).splitlines()[2] == "3. No damage -> Unaware"


def test_numbers_that_are_not_numbering_stay_in_the_text():
    graph = parse_clue_graph("31 teams participating -> 30 must be eliminated\n2.5 minutes -> 150 seconds", "")
    assert [c.text for c in graph.clues] == ["31 teams participating", "2.5 minutes"]
    assert all(c.prefix == "" for c in graph.clues)


def test_evidence_header_separates_key_information_from_combined_lines():
    evidence = (
        "The sideways drip of the lantern wax -> The lantern burned while the hut tilted\n"
        "The lock fills every six hours -> Only one filling\n"
        "After correlating these clues:\n"
        "The lantern burned while the hut tilted + Only one filling -> The hut tilted at 9 PM\n"
        "The hut tilted at 9 PM -> This is when the murderer struck"
    )
    graph = parse_clue_graph(evidence, "")
    assert len(graph.clues) == 2
    assert graph.evidence_header == "After correlating these clues:"
    assert [s.output for s in graph.evidence_steps] == ["The hut tilted at 9 PM", "This is when the murderer struck"]
    assert gold_key_information(evidence) == ["The sideways drip of the lantern wax", "The lock fills every six hours"]
    assert render_evidence(graph.clues, graph.evidence_header, graph.evidence_steps) == evidence
    # Only the primary lines when no steps are passed.
    assert render_evidence(graph.clues) == "\n".join(evidence.splitlines()[:2])


def test_reasoning_that_restates_the_clues_under_a_second_header_round_trips():
    reasoning = (
        "From the clues provided in the context:\n"
        "A clue -> An implication\n"
        "After correlating the clues:\n"
        "An implication + Another fact -> answer"
    )
    graph = parse_clue_graph("A clue -> An implication\nB -> Another fact", reasoning)
    assert graph.reasoning_header == "From the clues provided in the context:"
    assert [s.header for s in graph.steps] == [None, "After correlating the clues:"]
    assert render_reasoning(graph.steps, graph.reasoning_header) == reasoning
    # The restatement is not a redundant step.
    assert "redundant_step" not in kinds(check_graph(graph, "A clue. B."))


def test_arrow_inside_text_chains():
    graph = parse_clue_graph(
        "Each row describes the previous row -> No four identical numbers -> The number 4 never appears",
        "Shuffling rule + Pattern of positions -> Number of shuffles -> answer",
    )
    clue = graph.clues[0]
    assert clue.text == "Each row describes the previous row"
    assert clue.implication == "No four identical numbers -> The number 4 never appears"
    first, second = graph.steps
    assert first.inputs == ("Shuffling rule", "Pattern of positions") and first.output == "Number of shuffles"
    assert second.inputs == ("Number of shuffles",) and second.output == "answer" and second.continues
    assert first.line_no == second.line_no == 1
    assert render_reasoning(graph.steps, None) == "Shuffling rule + Pattern of positions -> Number of shuffles -> answer"


def test_plus_inside_a_formula_is_not_an_input_separator():
    graph = parse_clue_graph("", "x + y = z -> x + y = 144\n\"Two clues + and more\" -> done")
    assert graph.steps[0].inputs == ("x + y = z",)
    assert graph.steps[1].inputs == ('"Two clues + and more"',)
    wrapped = parse_clue_graph("", '"The diary was copied + The ink is blue -> The colours differ."')
    assert wrapped.steps[0].inputs == ('"The diary was copied', "The ink is blue")


def test_missing_arrow_is_an_unparsed_line():
    graph = parse_clue_graph(
        "A -> B\nThis line has no arrow\nC -> D",
        "After correlating the clues:\nB + D -> E\nTherefore, the answer is \"E\".",
    )
    assert [c.text for c in graph.clues] == ["A", "C"]
    assert graph.unparsed_lines == (
        ("evidence", 2, "This line has no arrow"),
        ("reasoning", 3, 'Therefore, the answer is "E".'),
    )
    # The free-text conclusion restates the last step's output: only the evidence line is a problem.
    issues = [i for i in check_graph(graph, "A. C.") if i.kind == "unparsed_line"]
    assert [i.line_no for i in issues] == [2]


def test_arrowless_evidence_falls_back_to_its_lines_for_key_information():
    evidence = "1. Each lamb bought a coat of a different colour.\n2. The speaking lamb bought a white coat."
    assert parse_clue_graph(evidence, "").clues == ()
    assert gold_key_information(evidence) == [
        "Each lamb bought a coat of a different colour.",
        "The speaking lamb bought a white coat.",
    ]


@pytest.mark.parametrize("evidence, reasoning", [("", ""), (None, None), ("\n\n  \n", "   ")])
def test_empty_input(evidence, reasoning):
    graph = parse_clue_graph(evidence, reasoning)
    assert graph == ClueGraph((), (), None, None, ())
    assert gold_key_information(evidence) == []
    assert kinds(check_graph(graph, "")) == ["no_conclusion"]
    assert render_evidence([]) == "" and render_reasoning([], None) == ""


def test_blank_lines_and_crlf_keep_original_line_numbers():
    graph = parse_clue_graph("A -> B\r\n\r\nC -> D\r\n", "")
    assert [(c.text, c.line_no) for c in graph.clues] == [("A", 1), ("C", 3)]


def test_render_accepts_plain_tuples_and_uses_the_default_header():
    assert render_evidence([("A", "B"), ("C", "")]) == "A -> B\nC ->"
    assert render_reasoning([(("B", "D"), "E"), ("E", "answer")]) == (
        "After correlating the clues we get:\nB + D -> E\nE -> answer"
    )


def test_every_real_record_parses_checks_and_round_trips(records):
    round_trips = 0
    for _split, rows in records.items():
        for record in rows:
            evidence = record["clue_graph"]["evidence"]
            reasoning = record["clue_graph"]["multi_hop_reasoning"]
            graph = parse_clue_graph(evidence, reasoning)
            for issue in check_graph(graph, record["context"]):
                assert issue.kind in ISSUE_KINDS
            gold = gold_key_information(evidence)
            assert gold == [c.text for c in graph.clues] or not graph.clues
            sections = {section for section, _, _ in graph.unparsed_lines}
            if "evidence" not in sections:
                assert render_evidence(graph.clues, graph.evidence_header, graph.evidence_steps) == evidence
                round_trips += 1
            if "reasoning" not in sections:
                assert render_reasoning(graph.steps, graph.reasoning_header) == reasoning
    print(f"\nevidence texts re-rendered byte-identically: {round_trips}")
    assert round_trips > 1400
