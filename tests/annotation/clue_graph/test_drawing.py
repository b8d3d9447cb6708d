"""annotation.clue_graph.drawing: layers, edges and a well-formed, escaped SVG."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from annotation import clue_graph
from annotation.clue_graph.drawing import draw_graph, render_svg

EVIDENCE = "muddy boots by the desk -> someone came from the garden\nthe gardener had a key -> he could lock it"
REASONING = ("someone came from the garden + he could lock it -> the gardener was in the study\n"
             "the gardener was in the study -> The gardener")


def drawing(evidence, reasoning, **marks):
    return draw_graph(clue_graph.parse_clue_graph(evidence, reasoning), **marks)


def test_layout_puts_conclusions_right_of_their_inputs():
    graph = drawing(EVIDENCE, REASONING, unanchored=[1])
    assert [n.id for n in graph.nodes] == ["c1", "c2", "s1", "s2"]
    assert graph.node("s1").layer == 1 and graph.node("s2").layer == 2
    assert graph.node("s2").x > graph.node("s1").x > graph.node("c1").x
    assert {(e.source, e.target) for e in graph.edges} == {("c1", "s1"), ("c2", "s1"), ("s1", "s2")}
    assert "unanchored" in graph.node("c2").classes and "final" in graph.node("s2").classes


def test_unknown_inputs_become_dangling_nodes_and_svg_is_valid_xml():
    graph = drawing(EVIDENCE, "a <script> input -> x & y")
    svg = render_svg(graph, title="t")
    root = ET.fromstring(svg)  # well-formed, text escaped
    assert root.tag.endswith("svg") and root.get("data-nodes") == "4"
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert any(n.kind == "dangling" for n in graph.nodes)


def test_svg_for_every_real_test_record(detectbench_dir):
    for line in (detectbench_dir / "test.jsonl").read_text().splitlines()[:300]:
        record = json.loads(line)
        g = clue_graph.parse_clue_graph(record["clue_graph"]["evidence"], record["clue_graph"]["multi_hop_reasoning"])
        ET.fromstring(render_svg(draw_graph(g)))


def test_svg_escapes_angle_brackets_ampersands_and_quotes_in_every_text():
    nasty = 'He said "5 < 6" & \'left\' </text><script>alert(1)</script>'
    graph = drawing(f'{nasty} -> it means "A & B"', f'{nasty} -> <b>"done"</b> & over')
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

    from ..workflow_support import make_items

    (item,) = make_items(1, status=ItemStatus.CLUE_GRAPH)
    Item.objects.filter(pk=item.pk).update(
        evidence='<script>alert("x")</script> & "quoted" -> <img src=x onerror=alert(1)>',
        reasoning='After correlating the clues we get:\n<img src=x onerror=alert(1)> -> The gardener')
    page = annotator_client.get(reverse("annotation:clue_graph", args=[item.pk])).content.decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    svg = page[page.index("<svg"):page.index("</svg>") + 6]
    ET.fromstring(svg)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quoted&quot;" in svg


@pytest.mark.parametrize("label", ["管家的靴子上有泥，说明他去过花园，而花园门昨晚是锁着的，钥匙只在园丁那里。",
                                   "The butler's boots 管家的靴子上有泥 had mud on them after the rain stopped",
                                   "x" * 80, "short"])
def test_a_node_s_lines_fit_its_box_in_columns_a_chinese_character_taking_two(label):
    from annotation.clue_graph.drawing import CHARS_PER_LINE, MAX_LINES, Node, _columns, _lines

    lines = _lines(Node(id="c1", label=label, kind="clue"))
    assert 1 <= len(lines) <= MAX_LINES
    assert all(_columns(line) <= CHARS_PER_LINE for line in lines), [(_columns(x), x) for x in lines]
    shown = "".join(line.rstrip("…") for line in lines).replace(" ", "")
    assert label.replace(" ", "").startswith(shown)  # in order, nothing but the tail dropped
