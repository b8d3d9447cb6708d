"""The catalogs in locale/ are complete and compiled, and the pages of every role read in Chinese.

The .mo files are committed (nothing compiles them at install or test time): regenerate with
`manage.py makemessages -l zh_Hans -l en --ignore studies/locale ...` (see README, Translations), translate,
then `msgfmt --check-format -o django.mo django.po`; the first test fails when a .mo is stale.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_DIR

LOCALE = REPO_DIR / "locale"
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%%|%[sd]")
TRANSLATE_TAG = re.compile(r"""\{%\s*(?:translate|trans)\s+"([^"]+)"(?:\s+context\s+"([^"]+)")?\s*(?:noop\s*)?%\}""")
#: `{{ _("literal") }}`: how the Jinja2 templates (studies/page_templates.py) translate; Django's templates read it too.
UNDERSCORE_CALL = re.compile(r"""\b_\(\s*(?:"([^"\\]+)"|'([^'\\]+)')\s*\)""")


def _template_dirs() -> list[Path]:
    """Every folder of ours with templates: the project's, each app's Django templates and Jinja2 templates. (An
    engine's own list is no guide: with template_partials' loaders the Django engine names only its DIRS.)"""
    return sorted(folder for folder in [REPO_DIR / "templates", *REPO_DIR.glob("*/templates"), *REPO_DIR.glob("*/jinja2")]
                  if folder.is_dir() and ".venv" not in folder.parts)


def _entries(po: Path) -> list[dict]:
    """msgid / msgid_plural / msgstr[...] / flags of a .po file (enough of the format for these checks)."""
    entries, current, key = [], None, None

    def unquote(text: str) -> str:
        return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text.strip()[1:-1])

    for line in po.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip():
            if current and "id" in current:
                entries.append(current)
            current, key = None, None
            continue
        current = current or {"flags": "", "strs": {}, "ctx": None}
        if line.startswith("#,"):
            current["flags"] += line
        elif line.startswith("#"):
            continue
        elif line.startswith("msgctxt "):
            key, current["ctx"] = "ctx", unquote(line[8:])
        elif line.startswith("msgid_plural "):
            key, current["plural"] = "plural", unquote(line[13:])
        elif line.startswith("msgid "):
            key, current["id"] = "id", unquote(line[6:])
        elif line.startswith("msgstr"):
            index = int(line[7:line.index("]")]) if line.startswith("msgstr[") else 0
            key = ("str", index)
            current["strs"][index] = unquote(line.split(" ", 1)[1])
        elif line.startswith('"'):
            if isinstance(key, tuple):
                current["strs"][key[1]] += unquote(line)
            else:
                current[key] += unquote(line)
    return [e for e in entries if e["id"]]


@pytest.mark.parametrize("language", ["en", "zh_Hans"])
def test_committed_mo_files_are_compiled_from_the_po_files(language, tmp_path):
    msgfmt = shutil.which("msgfmt")
    assert msgfmt, "msgfmt (gettext) is needed to check the catalogs"
    po = LOCALE / language / "LC_MESSAGES" / "django.po"
    compiled = tmp_path / "django.mo"
    subprocess.run([msgfmt, "--check-format", "-o", str(compiled), str(po)], check=True, capture_output=True)
    committed = (LOCALE / language / "LC_MESSAGES" / "django.mo").read_bytes()
    assert compiled.read_bytes() == committed, f"locale/{language}: django.mo is stale; run msgfmt on django.po"


def test_every_chinese_string_is_translated_with_the_same_placeholders():
    entries = _entries(LOCALE / "zh_Hans" / "LC_MESSAGES" / "django.po")
    assert len(entries) > 700
    untranslated = [e["id"] for e in entries if not any(e["strs"].values()) or "fuzzy" in e["flags"]]
    assert not untranslated, f"{len(untranslated)} untranslated, e.g. {untranslated[:5]}"
    wrong = []
    for e in entries:
        wanted = {tuple(sorted(PLACEHOLDER.findall(e["id"]))), tuple(sorted(PLACEHOLDER.findall(e.get("plural", ""))))}
        for text in e["strs"].values():
            if tuple(sorted(PLACEHOLDER.findall(text))) not in wanted:
                wrong.append((e["id"], text))
    assert not wrong, f"placeholders differ: {wrong[:5]}"


def test_every_translate_tag_of_the_templates_is_in_the_catalog():
    """A string added to a template after the last makemessages would stay English in every language."""
    catalog = {(e["ctx"], e["id"]) for e in _entries(LOCALE / "zh_Hans" / "LC_MESSAGES" / "django.po")}
    missing, percent, jinja_strings = [], [], 0
    directories = _template_dirs()
    wanted = {"templates", "annotation/templates", "studies/templates", "evaluation/templates", "studies/jinja2"}
    assert wanted <= {str(folder.relative_to(REPO_DIR)) for folder in directories}, directories
    for directory in directories:
        for path in directory.rglob("*.html"):
            source = path.read_text(encoding="utf-8")
            found = [(m.group(1), m.group(2)) for m in TRANSLATE_TAG.finditer(source)]
            found += [(m.group(1) or m.group(2), None) for m in UNDERSCORE_CALL.finditer(source)]
            jinja_strings += len(found) if "jinja2" in path.parts else 0
            for text, context in found:
                if re.search(r"%(?!\()", text):
                    # {% translate %} looks such a string up with one % but the catalog has %%: use blocktranslate.
                    percent.append((path.relative_to(REPO_DIR), text))
                elif (context, text) not in catalog:
                    missing.append((str(path.relative_to(REPO_DIR)), text))
    assert jinja_strings > 20, "the Jinja2 templates' {{ _(...) }} strings were not found"
    assert not percent, f"use blocktranslate for strings with a percent sign: {percent}"
    assert not missing, f"run makemessages and translate: {missing[:10]}"


#: The functions that mark a string for translation in Python (Django's, and foundation.words' own gettext).
GETTEXT_FUNCTIONS = {"gettext", "gettext_lazy", "gettext_noop", "_", "ngettext", "ngettext_lazy", "pgettext",
                     "pgettext_lazy", "npgettext", "npgettext_lazy"}


def test_every_string_the_python_code_translates_is_in_the_catalog():
    """Found by walking the syntax of every module of ours: each string literal given to a gettext function (with its
    context and plural) is in the Chinese catalog, so no message, refusal or label stays English there."""
    import ast

    catalog = {(e["ctx"], e["id"], e.get("plural")) for e in _entries(LOCALE / "zh_Hans" / "LC_MESSAGES" / "django.po")}
    found, missing = 0, []
    for package in ("foundation", "annotation", "studies", "evaluation", "detectbench_web"):
        for path in sorted((REPO_DIR / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                texts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if name not in GETTEXT_FUNCTIONS or not texts or not isinstance(node.args[0], ast.Constant):
                    continue
                context = texts.pop(0) if name.startswith(("pgettext", "npgettext")) else None
                if not texts:
                    continue
                plural = texts[1] if name.startswith(("ngettext", "npgettext")) and len(texts) > 1 else None
                found += 1
                if (context, texts[0], plural) not in catalog:
                    missing.append(f"{path.relative_to(REPO_DIR)}:{node.lineno}: {texts[0][:80]!r}")
    assert found > 500, f"only {found} translated strings found in the code"
    assert not missing, f"{len(missing)} not in the catalog (run makemessages and translate): {missing}"


@pytest.mark.django_db
def test_researcher_and_annotator_pages_read_in_chinese(client, researcher, annotator, django_user_model):
    """With the browser asking for Chinese, the evaluation, studies and annotation pages use the catalog."""
    client.force_login(researcher)
    headers = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
    pages = {
        "/evaluation/runs/": ["运行", "启动运行", "还没有运行。"],
        "/evaluation/leaderboard/": ["排行榜：方法 × 模型", "选择数据划分", "还没有完成的运行。"],
        "/evaluation/endpoints/": ["模型端点", "添加端点", "最大并发数", "使用论文表 9 的参数"],
        "/evaluation/runs/launch/": ["条目状态", "问题核验", "每个任务的条目数", "以逗号分隔的条目编号（可选）"],
        "/evaluation/quality/": ["数据质量", "请选择一个数据划分。"],
        "/evaluation/figures/": ["图表", "请选择一个数据划分：一张图从不混用不同的条目集合。"],
        "/evaluation/judge/": ["大模型评判", "启动评判运行"],
        "/studies/": ["人类研究", "还没有研究。"],
        "/studies/new/": ["新建研究", "每位参与者的题数", "时限（分钟）"],
        "/annotation/progress/": ["整理进度", "各阶段的条目"],
        "/": ["开放的研究", "没有开放的研究。"],
    }
    for path, phrases in pages.items():
        response = client.get(path, **headers)
        assert response.status_code == 200, (path, response.status_code)
        text = response.content.decode()
        for phrase in phrases:
            assert phrase in text, (path, phrase)
    client.force_login(annotator)
    queue = client.get("/annotation/queue/", **headers).content.decode()
    assert "工作队列" in queue and "暂时没有工作" in queue


def test_every_string_the_jinja2_templates_translate_is_one_makemessages_reads():
    """makemessages reads templates with Django's templatize: a `_("literal")` of a Jinja2 template that it does not
    see (spaces inside the parentheses, a form of Jinja2's own) would be left out of the catalog at its next run."""
    from django.utils.translation.template import templatize

    unseen, seen_any = [], 0
    for directory in _template_dirs():
        for path in directory.rglob("*.html"):
            if "jinja2" not in path.parts:
                continue
            source = path.read_text(encoding="utf-8")
            wanted = {m.group(1) or m.group(2) for m in UNDERSCORE_CALL.finditer(source)}
            read = {m.group(1) or m.group(2) for m in UNDERSCORE_CALL.finditer(templatize(source, origin=str(path)))}
            seen_any += len(read)
            unseen += [(str(path.relative_to(REPO_DIR)), text) for text in sorted(wanted - read)]
    assert seen_any > 20
    assert not unseen, f'write each as {{{{ _("...") }}}}, as makemessages reads it: {unseen}'
