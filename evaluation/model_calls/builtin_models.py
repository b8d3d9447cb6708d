"""Built-in offline models (no Django, no network): they read the prompt like a model would.

Each reads the last ``### Context:`` and ``### Options:`` sections of the last user
message (the evaluated item: demonstrations come before it) and writes
``### Key Information: ... ### Answer: N``, the format every prompt asks for:

- ``first-option``: always the first option shown; quotes the context's first sentence;
- ``random``: a uniformly random option, seeded by (seed, sample, prompt): the same
  seed gives the same answers, another seed other answers;
- ``lexical``: the option sharing the most content words with the context (ties: the
  first), quoting the two context sentences that best overlap question + option.

Words, sentences and token counts come from ``annotation.text`` (words are the KeyInfo
tokens: Latin words and single CJK characters).
"""
from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence

from annotation.text import CONTRACTION_PIECES, STOPWORDS, rouge_tokens, token_count
from annotation.text import sentences as split_sentences

BUILTIN_MODELS = ("random", "first-option", "lexical")

_SECTION = re.compile(r"^###\s*(?P<name>[A-Za-z ]+?)\s*:?\s*$", re.MULTILINE)
_OPTION_LINE = re.compile(r"^\s*(?P<label>\d{1,2}|[A-Z])[.)]\s+(?P<text>.+?)\s*$")
#: The lexical reader's stop words differ from the project's (annotation.text.STOPWORDS) by these, so that its
#: answers stay what they were when it had its own list: it also ignores modal verbs and a few words every
#: question repeats ("how", "why", "one", "said"), and it still counts "while" and the pieces an apostrophe
#: leaves ("captain's" -> captain, s) as words.
READER_IGNORES = frozenset("can could how may might must one said should why will would".split())
READER_STOPWORDS = (STOPWORDS | READER_IGNORES) - CONTRACTION_PIECES - {"while"}


def _sections(text: str) -> dict[str, str]:
    """The last body of each ``### Name:`` section of a prompt."""
    found: dict[str, str] = {}
    matches = list(_SECTION.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end():end].strip()
        name = match.group("name").strip().lower()
        if name == "option":
            name = "options"
        found[name] = body
    return found


def read_prompt(messages: Sequence[dict]) -> tuple[str, str, list[tuple[str, str]]]:
    """(context, question, [(label, option text)]) of the evaluated item in a chat."""
    context = question = ""
    options: list[tuple[str, str]] = []
    for message in messages:
        if message.get("role") != "user":
            continue
        sections = _sections(message.get("content") or "")
        context = sections.get("context", context)
        question = sections.get("question", question)
        if "options" in sections:
            options = [
                (m.group("label"), m.group("text"))
                for m in map(_OPTION_LINE.match, sections["options"].splitlines()) if m
            ]
    return context, question, options


def _words(text: str) -> set[str]:
    return {word for word in rouge_tokens(text) if word not in READER_STOPWORDS}


def _format(key_information: str, label: str) -> str:
    return f"### Key Information:\n{key_information}\n\n### Answer:\n{label}"


def builtin_reply(name: str, messages: Sequence[dict], *, seed: int, sample_key: str = "0") -> str:
    """The output of built-in model ``name`` for a chat."""
    context, question, options = read_prompt(messages)
    sentences = split_sentences(context) or [context]
    if name == "first-option":
        return _format(sentences[0], options[0][0] if options else sentences[0])
    if name == "random":
        digest = hashlib.sha256(f"{seed}|{sample_key}|{context}|{question}|{options}".encode()).hexdigest()
        rng = random.Random(int(digest[:16], 16))
        if not options:
            return _format(rng.choice(sentences), rng.choice(sentences))
        return _format(rng.choice(sentences), rng.choice(options)[0])
    if name == "lexical":
        context_words = _words(context)
        if options:
            scores = [len(_words(text) & context_words) for _, text in options]
            best = scores.index(max(scores))
            label, chosen = options[best]
        else:
            label, chosen = "", ""
        target = _words(question) | _words(chosen)
        ranked = sorted(range(len(sentences)), key=lambda i: (-len(_words(sentences[i]) & target), i))
        quoted = "\n".join(sentences[i] for i in sorted(ranked[:2]))
        return _format(quoted, label or sentences[ranked[0]])
    raise ValueError(f"unknown built-in model {name!r}; choose from {', '.join(BUILTIN_MODELS)}")


def count_tokens(text: str) -> int:
    """A rough, offline token count for built-in models (annotation.text.token_count)."""
    return token_count(text)
