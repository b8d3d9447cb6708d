"""What a person reads on a page: the visible text of an HTML response, whitespace collapsed."""
from __future__ import annotations

import re
from html.parser import HTMLParser

_HIDDEN = {"script", "style", "template", "head", "title"}
_BLOCKS = {"p", "div", "li", "td", "th", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "br", "ul", "ol",
           "table", "form", "label", "button", "option", "select", "textarea", "nav", "header", "main", "dt", "dd"}


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag in _BLOCKS or tag == "input":
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in _HIDDEN and self._hidden:
            self._hidden -= 1
        elif tag in _BLOCKS:
            self.parts.append(" ")

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)


def visible_text(response_or_html) -> str:
    """The page's text without tags, scripts or styles, every run of whitespace one space."""
    html = response_or_html if isinstance(response_or_html, str) else response_or_html.content.decode()
    parser = _TextParser()
    parser.feed(html)
    return re.sub(r"\s+", " ", "".join(parser.parts)).strip()
