"""annotation.clue_graph.checks: every issue kind on a small example."""
from __future__ import annotations

import pytest

from annotation.clue_graph import ISSUE_KINDS, Issue, IssueKind, check_graph, parse_clue_graph
from annotation.clue_graph.checks import answer_issue, reaches_answer

from .test_anchor import CONTEXT


def kinds(issues):
    return [issue.kind for issue in issues]


def test_dangling_reference():
    graph = parse_clue_graph(
        "The door was locked -> The killer had a key",
        "the killer had a key. + The gardener lied -> The gardener did it",
    )
    issues = [i for i in check_graph(graph, "The door was locked.") if i.kind == "dangling_reference"]
    # Case and final punctuation are tolerated; the unknown input is reported once.
    assert len(issues) == 1 and "The gardener lied" in issues[0].message and issues[0].line_no == 1


def test_fuzzy_reference_tolerates_small_paraphrases_but_not_other_numbers():
    graph = parse_clue_graph(
        "Many horses -> There are two possible gender combinations for the children\nx -> 1984 is not a multiple of 9",
        "Two possible gender combinations for the children -> 1/3\n6984 is a multiple of 9 -> answer",
    )
    dangling = [i for i in check_graph(graph, "") if i.kind == "dangling_reference"]
    assert [i.line_no for i in dangling] == [2]


def test_repeated_and_redundant_steps():
    graph = parse_clue_graph(
        "A fact -> Bob lied\nC fact -> Dan hid",
        "Bob lied + Dan hid -> Eve\nBob lied + Dan hid -> Eve\nDan hid + Bob lied -> Eve\nBob lied -> Eve\nEve -> answer",
    )
    found = kinds(check_graph(graph, "A fact. C fact."))
    assert "dangling_reference" not in found
    assert found.count("repeated_step") == 2  # input order does not matter
    assert found.count("redundant_step") == 1
    assert "unused_clue" not in found and "no_conclusion" not in found


def test_unused_clue_and_no_conclusion():
    graph = parse_clue_graph("A fact -> B\nC fact -> D", "B -> E")
    issues = check_graph(graph, "A fact. C fact.")
    unused = [i for i in issues if i.kind == "unused_clue"]
    assert [(i.clue_index, i.line_no) for i in unused] == [(1, 2)]
    assert kinds(check_graph(parse_clue_graph("A fact -> B", "Therefore B."), "A fact."))[-1] == "no_conclusion"
    assert "no_conclusion" in kinds(check_graph(parse_clue_graph("A fact -> B", "B ->"), "A fact."))


def test_unanchored_and_fuzzy_clues():
    graph = parse_clue_graph(
        "a crumpled train timetable -> x\nThe wax of the lantern dripped down sideways -> y\nThe weather in Paris -> z",
        "x + y + z -> answer",
    )
    issues = check_graph(graph, CONTEXT)
    assert [(i.kind, i.clue_index) for i in issues if i.kind in ("fuzzy_clue", "unanchored_clue")] == [
        ("fuzzy_clue", 1), ("unanchored_clue", 2),
    ]
    assert all(i.kind in ISSUE_KINDS for i in issues)


def test_every_issue_is_of_a_declared_kind():
    assert ISSUE_KINDS == tuple(kind.value for kind in IssueKind) and "no_answer" in ISSUE_KINDS
    assert Issue("dangling_reference", "m").kind is IssueKind.DANGLING_REFERENCE
    with pytest.raises(ValueError):
        Issue("looks_odd", "not a declared kind")


def test_reaching_the_answer():
    options = ["The gardener", "The butler", "The cook"]
    assert reaches_answer("Therefore the gardener did it", options, 0)
    assert not reaches_answer("the butler", options, 0)
    assert not reaches_answer("", options, 0)
    # Options that differ only in "no" / "only" or in a letter naming a person still tell apart.
    angels = ["There are two angels.", "There is only one angel.", "There are no angels."]
    assert reaches_answer("There are two angels", angels, 0)
    assert not reaches_answer("There are no angels", angels, 0)
    letters = ["B is the murderer", "C is the murderer", "D is the murderer"]
    assert reaches_answer("The murderer can only be D", letters, 2)
    assert answer_issue("the butler", options, 0, "The gardener").kind is IssueKind.NO_ANSWER
    assert answer_issue("the gardener", options, 0, "The gardener") is None


def test_an_unparsed_line_is_reported_only_when_it_says_something_the_graph_lacks():
    graph = parse_clue_graph(
        "100 soldiers lost -> food lasts 5 days\nAfter correlating these clues:\nfood lasts 5 days -> x=700",
        "After correlating the clues:\nfood lasts 5 days -> x=700\n"
        "Therefore, there are currently 700 soldiers.\n"      # the values of the last step
        "The final deduction follows from these conclusions.\n"  # talk about the reasoning
        "By correlating these clues:\n"                        # a header out of place
        "The cook hid the key in the flour.",                  # something new
    )
    assert [i.line_no for i in check_graph(graph, "") if i.kind == "unparsed_line"] == [6]
