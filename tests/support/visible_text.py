"""The text a person sees on a page: text nodes and the attributes read out or shown (title, placeholder,
aria-label, alt, value of buttons), without scripts, styles, hidden inputs, the values of fields (an input's value,
a textarea's text) and whatever is marked as data
(`translate="no"`, the HTML attribute for content that is not to be translated: stories, names, ids, codes)."""
from __future__ import annotations

import re
from html.parser import HTMLParser

SHOWN_ATTRIBUTES = ("title", "placeholder", "aria-label", "alt")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
#: Three English words in a row: an interface phrase (a single word may be a name, a unit or a code).
ENGLISH_PHRASE = re.compile(r"\b[A-Za-z][a-z]+(?:[ \u00a0\-'’][A-Za-z][a-z]*){2,}\b")
#: A quotation inside a sentence ("clue 2 matches ...: 'the butler'", “the answer”): the data it quotes.
QUOTED = re.compile(r"“[^”]*”|「[^」]*」|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])")


class _Visible(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, hidden from the check)
        self.found: list[str] = []

    def _hidden(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        hidden = self._hidden() or tag in ("script", "style", "template", "svg", "code", "pre") \
            or attrs.get("translate") == "no" or (tag == "input" and attrs.get("type") == "hidden")
        if not hidden:
            for name in SHOWN_ATTRIBUTES:
                if attrs.get(name):
                    self.found.append(attrs[name])
            if tag == "input" and attrs.get("type") in ("submit", "button") and attrs.get("value"):
                self.found.append(attrs["value"])
        if tag not in _VOID:  # a textarea's text is what is being edited: a value, like an input's
            self.stack.append((tag, hidden or tag == "textarea"))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self.stack:
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if not self._hidden() and data.strip():
            self.found.append(data.strip())


def visible_texts(html: str) -> list[str]:
    parser = _Visible()
    parser.feed(html)
    return parser.found


def english_phrases(html: str) -> list[str]:
    """Every English phrase (three words or more) a person sees on the page, outside what is marked as data."""
    return [m.group(0) for text in visible_texts(html) for m in ENGLISH_PHRASE.finditer(QUOTED.sub(" ", text))]
