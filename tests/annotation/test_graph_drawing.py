"""Pure helpers: graph layout and SVG, editable graph round trip, diffs, option checks."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from annotation import clue_graph
from annotation.diffing import content_diff, inline_diff
from annotation.clue_graph.drawing import build_graph, render_svg
from annotation.clue_graph.editing import editable_graph
from annotation.item_checks import option_checks, reaches_answer

CLUES = [("muddy boots by the desk", "someone came from the garden"), ("the gardener had a key", "he could lock it")]
STEPS = [(["someone came from the garden", "he could lock it"], "the gardener was in the study"),
         (["the gardener was in the study"], "The gardener")]


def test_layout_puts_conclusions_right_of_their_inputs():
    graph = build_graph(CLUES, STEPS, unanchored=[1])
    assert [n.id for n in graph.nodes] == ["c1", "c2", "s1", "s2"]
    assert graph.node("s1").layer == 1 and graph.node("s2").layer == 2
    assert graph.node("s2").x > graph.node("s1").x > graph.node("c1").x
    assert {(e.source, e.target) for e in graph.edges} == {("c1", "s1"), ("c2", "s1"), ("s1", "s2")}
    assert "unanchored" in graph.node("c2").classes and "final" in graph.node("s2").classes


def test_unknown_inputs_become_dangling_nodes_and_svg_is_valid_xml():
    graph = build_graph(CLUES, [(["a <script> input"], "x & y")])
    svg = render_svg(graph, title="t")
    root = ET.fromstring(svg)  # well-formed, text escaped
    assert root.tag.endswith("svg") and root.get("data-nodes") == "4"
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert any(n.kind == "dangling" for n in graph.nodes)


def test_svg_for_every_real_test_record(detectbench_dir):
    for line in (detectbench_dir / "test.jsonl").read_text().splitlines()[:300]:
        record = json.loads(line)
        g = clue_graph.parse_clue_graph(record["clue_graph"]["evidence"], record["clue_graph"]["multi_hop_reasoning"])
        drawn = build_graph([(c.text, c.implication) for c in g.clues], [(s.inputs, s.output) for s in g.steps])
        ET.fromstring(render_svg(drawn))


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


def test_inline_diff_marks_words_and_escapes():
    assert inline_diff("the cat sat", "the dog sat") == "the <del>cat</del><ins>dog</ins> sat"
    assert "&lt;b&gt;" in inline_diff("", "<b>")
    diffs = content_diff({"question": "a", "options": ["x", "y"]}, {"question": "a", "options": ["x", "z"]})
    assert [d.field for d in diffs] == ["options"]


def test_option_checks_and_reaching_the_answer():
    assert option_checks(["a", "b"], 1) == []
    kinds = {c.kind for c in option_checks(["a", "A ", ""], 5)}
    assert kinds == {"duplicate_option", "empty_option", "no_correct_option"}
    options = ["The gardener", "The butler", "The cook"]
    assert reaches_answer("Therefore the gardener did it", options, 0)
    assert not reaches_answer("the butler", options, 0)
    assert not reaches_answer("", options, 0)


def test_svg_escapes_angle_brackets_ampersands_and_quotes_in_every_text():
    nasty = 'He said "5 < 6" & \'left\' </text><script>alert(1)</script>'
    graph = build_graph([(nasty, 'it means "A & B"')], [([nasty], '<b>"done"</b> & over')])
    svg = render_svg(graph, title='Item "x" <&>')
    assert "<script>" not in svg and "<b>" not in svg and '"done"' not in svg
    root = ET.fromstring(svg)  # still well-formed XML
    ns = {"s": "http://www.w3.org/2000/svg"}
    assert root.find("s:title", ns).text == 'Item "x" <&>'
    tooltips = [t.text for t in root.findall(".//s:g/s:title", ns)]
    assert "1. " + nasty + ' → it means "A & B"' in tooltips  # the text survives escaping unchanged
    drawn = "".join(t.text for t in root.findall(".//s:g[@id='node-c1']/s:text", ns))
    assert drawn.startswith('1. He said "5 < 6" &')


@pytest.mark.django_db
def test_clue_graph_page_escapes_clue_text_in_the_svg_and_the_editor(annotator_client):
    from django.urls import reverse

    from annotation.models import Item, ItemStatus

    from .workflow_support import make_items

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    Item.objects.filter(pk=item.pk).update(
        evidence='<script>alert("x")</script> & "quoted" -> <img src=x onerror=alert(1)>',
        reasoning='After correlating the clues we get:\n<img src=x onerror=alert(1)> -> The gardener')
    page = annotator_client.get(reverse("annotation:clue_graph", args=[item.pk])).content.decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    svg = page[page.index("<svg"):page.index("</svg>") + 6]
    ET.fromstring(svg)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quoted&quot;" in svg


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
