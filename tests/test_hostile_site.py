"""Hostile text from arXiv and from the model stays text in every file of the built site.

Liveness is judged by html5lib (the HTML5 parsing algorithm) through generator.publish.inert, whose
own rules are pinned by tests/test_inert.py, and by Chromium in the browser test.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import html5lib
import markdown
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from generator.archive.history import History
from generator.cli import cli
from generator.edition.render import make_environment, render_edition, write_pages
from generator.publish.inert import check_site
from generator.publish.site import build_site
from generator.text.safe_text import clean
from tests.browser import launch_chromium
from tests.conftest import ROOT, write_config
from tests.edition_fixture import one_paper_edition
from tests.feeds import Entry, atom_feed
from tests.htmlcheck import live_problems
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import Answer, SglangServer, default_responder

EDITION = "2026-12-02"
TITLE = "Attention </title><script>window.__pwned=1</script>"
HEADING = "## Findings { id='x\"autofocus onfocus=window.__pwned=2//' }"
BIDI = "evil\u202egnp.exe"
# TeX whose \\text{} once came out of latex2mathml as a live tag, swallowing the rest of the page.
TEX_SCRIPT = "$\\text{<script>}$"
TEX_SVG = "$\\text{<svg/onload=window.__pwned=5>}$"
# The first section is long enough to fold on a phone (edition/fold.py), so folding runs too.
ANSWER = (f"{HEADING}\n\n{'A long section of words. ' * 30}\n\n"
          f"Paper 1 says so.\x00 Beep\x07 and \x1b[31mred\x1b[0m; {BIDI}.\n"
          "A line\r\nwith CRLF. <img src=x onerror=window.__pwned=3> "
          "[x](javascript:window.__pwned=4) [y](&#106;avascript:alert(1))\n\n"
          f"Math with markup: {TEX_SCRIPT} and {TEX_SVG} and $\\mathrm{{<style>}}$ here.\n\n"
          "## Second {: onclick=alert(1) }\n\n<svg onload=alert(1)>\n\n"
          "The answer ends here: LAST-WORDS-OF-THE-ANSWER.\n")
# What a server may put into structured answers: JSON escapes for a lone surrogate, a NUL and
# a bidi override, and TeX with markup.
JSON_NOISE = "\\ud800\\u0000\\u202e" + TEX_SVG.replace("\\", "\\\\")


def build(config: Path, edition: str = EDITION) -> Result:
    return CliRunner().invoke(cli, ["build", "--config", str(config), "--edition", edition])


def hostile_responder(body: dict[str, Any]) -> Answer:
    answer = default_responder(body)
    if answer.content.startswith("{"):
        return Answer(answer.content.replace('"tldr": "', f'"tldr": "{JSON_NOISE}', 1),
                      answer.reasoning)
    return Answer(ANSWER, answer.reasoning)


ENTRIES = [
    Entry("2612.00001v1", TITLE, summary="An abstract with <script>alert(1)</script> & $x<y$.",
          authors=("Mallory <img src=x onerror=alert(1)>", "Ada \u202eLovelace")),
    Entry("quant-ph/0201082v1", "The real old-style paper", summary="The real abstract."),
    Entry("quant-ph_0201082v1", "An impostor", summary="The impostor's abstract."),
    Entry("../../x", "A path", summary="Climbs out."),
    Entry('2612.00002v1"onmouseover=alert(1)', "A quote in the id"),
    Entry("\uff12\uff16\uff11\uff12.00009v1", "Fullwidth digits in the id"),
    Entry("2612.00003v1", "Fine: a < b & \"quotes\" and 日本語", summary="Plain."),
    Entry("2612.00004v1", f"Fast decoding {TEX_SCRIPT} for LLMs",
          summary=f"An abstract with {TEX_SVG} in it, and then the END-OF-ABSTRACT.",
          authors=("Eve $\\text{<style>}$ Hacker", "Trudy Last")),
    Entry("2612.00005v1", "The paper after the hostile one", summary="Still here."),
]


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory, fixtures: Path) -> Iterator[Path]:
    """One build over hostile arXiv entries and hostile answers, shared by the module's tests
    (each reads the site, none changes it)."""
    arxiv_server, sglang_server = ArxivServer(fixtures).start(), SglangServer().start()
    try:
        arxiv_server.state.feed_override = atom_feed(ENTRIES)
        sglang_server.state.responder = hostile_responder
        config = write_config(tmp_path_factory.mktemp("hostile") / "ws", arxiv_server,
                              sglang_server, max_papers=10, structured=True)
        result = build(config)
        assert result.exit_code == 0, result.output
        yield config.parent
    finally:
        arxiv_server.stop()
        sglang_server.stop()


def _site_files(site: Path) -> list[Path]:
    return [p for p in site.rglob("*") if p.is_file()]


def test_hostile_titles_ids_and_answers_leave_nothing_live(hostile_site: Path) -> None:
    site = hostile_site / "site"
    assert check_site(site) == []
    paper = site / "editions" / EDITION / "papers" / "2612.00001v1.html"
    document = html5lib.parse(paper.read_bytes(), treebuilder="etree", namespaceHTMLElements=False)
    # The title reads as the title, escaped once: in the tab and in the header.
    assert document.findtext("head/title", "").startswith(TITLE)
    scripts = [s for s in document.iter("script") if "__pwned" in "".join(s.itertext())]
    assert scripts == []
    assert not [e for e in document.iter() if any(a.startswith("on") for a in e.attrib)]


def test_the_heading_attribute_trick_sets_no_id_or_handler(hostile_site: Path) -> None:
    page = hostile_site / "site" / "editions" / EDITION / "research-map.html"
    document = html5lib.parse(page.read_bytes(), treebuilder="etree", namespaceHTMLElements=False)
    for element in document.iter():
        assert not any(name.startswith("on") or name == "autofocus" for name in element.attrib)
        assert '"' not in element.get("id", "")
    assert "Findings { id=" in "".join(document.find("body").itertext())


def test_control_and_bidi_characters_never_reach_a_file(hostile_site: Path) -> None:
    # The structured answers carried "\\ud800\\u0000\\u202e" as JSON escapes: decoded, they
    # once crashed every cache write (a lone surrogate) and put NUL into the cache.
    written = [_site_files(hostile_site / folder) for folder in ("site_src", "site", ".cache")]
    assert written[2], "the cache is where the test expects it"
    for path in [p for files in written for p in files]:
        if path.suffix in (".md", ".html", ".xml", ".json", ".js"):
            text = path.read_text(encoding="utf-8")
            assert "\x00" not in text and "\x07" not in text and "\x1b" not in text, path
            assert "\u202e" not in text, path
    feed = ElementTree.parse(hostile_site / "site" / "feed.xml")  # well-formed
    assert feed.getroot().tag.endswith("feed")


def test_ids_outside_arxivs_grammar_get_no_page(hostile_site: Path) -> None:
    papers = hostile_site / "site_src" / "editions" / EDITION / "papers"
    assert sorted(p.name for p in papers.iterdir()) == [
        "2612.00001v1.md", "2612.00003v1.md", "2612.00004v1.md", "2612.00005v1.md",
        "quant-ph_0201082v1.md"]
    assert "The real old-style paper" in (papers / "quant-ph_0201082v1.md").read_text()
    assert not list(hostile_site.rglob(".*.md")) and not (hostile_site / "x.md").exists()
    record = json.loads((hostile_site / "site_src" / "editions" / EDITION / "edition.json")
                        .read_text())
    assert [p["arxiv_id"] for p in record["papers"]] == [
        "2612.00001v1", "quant-ph/0201082v1", "2612.00003v1", "2612.00004v1", "2612.00005v1"]


def _shown(page: Path) -> str:
    document = html5lib.parse(page.read_bytes(), treebuilder="etree", namespaceHTMLElements=False)
    return " ".join("".join(document.find("body").itertext()).split())


def test_tex_with_markup_erases_nothing_after_it(hostile_site: Path) -> None:
    # `$\\text{<script>}$` in a title once ended the home page at "Fast decoding"; in an answer
    # it took the rest of the answer and its evidence line with it.
    site = hostile_site / "site"
    home = _shown(site / "index.html")
    assert "Fast decoding" in home and "for LLMs" in home
    assert "The paper after the hostile one" in home
    paper = _shown(site / "editions" / EDITION / "papers" / "2612.00004v1.html")
    assert "END-OF-ABSTRACT" in paper and "Trudy Last" in paper
    assert "<svg/onload=window.__pwned=5>" in paper  # shown as the text it is
    answer = _shown(site / "editions" / EDITION / "research-map.html")
    assert "<script>" in answer and "LAST-WORDS-OF-THE-ANSWER" in answer


def test_the_markdown_in_site_src_is_inert_on_its_own(hostile_site: Path) -> None:
    # What `mkdocs serve` without our plugin, another engine or a reader of the repository sees.
    assert len(list((hostile_site / "site_src").rglob("*.md"))) > 10
    _assert_markdown_inert(hostile_site / "site_src")


def _assert_markdown_inert(docs: Path) -> None:
    """Every page in `docs`, converted by plain Python-Markdown (no sanitizer), is inert."""
    extensions = ["tables", "attr_list", "admonition", "pymdownx.superfences", "md_in_html"]
    for page in docs.rglob("*.md"):
        converted = markdown.markdown(page.read_text(encoding="utf-8").split("\n---\n", 1)[-1],
                                      extensions=extensions)
        assert live_problems(converted) == [], page


def test_plain_text_with_markup_characters_reads_right(hostile_site: Path) -> None:
    page = hostile_site / "site" / "editions" / EDITION / "papers" / "2612.00003v1.html"
    document = html5lib.parse(page.read_bytes(), treebuilder="etree", namespaceHTMLElements=False)
    title = 'Fine: a < b & "quotes" and 日本語'
    assert document.findtext("head/title", "").startswith(title)
    assert title in [("".join(h.itertext())).strip(" ¶") for h in document.iter("h1")]
    index = json.loads((hostile_site / "site" / "search" / "search_index.json").read_text())
    titles = [html5lib.parseFragment(d["title"], treebuilder="etree") for d in index["docs"]]
    assert title in ["".join(t.itertext()) for t in titles]  # escaped once, not twice


def test_a_mkdocs_yml_without_the_sanitizer_still_gives_an_inert_site(
        workspace: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    text = (ROOT / "mkdocs.yml").read_text().replace("  - digest-sanitize\n", "")
    (workspace.parent / "mkdocs.yml").write_text(text)
    arxiv_server.state.feed_override = atom_feed(ENTRIES)
    sglang_server.state.responder = hostile_responder
    result = build(workspace)
    assert result.exit_code == 0, result.output
    assert check_site(workspace.parent / "site") == []


def test_a_theme_override_that_prints_text_raw_is_refused(
        workspace: Path, arxiv_server: ArxivServer, sglang_server: SglangServer) -> None:
    ws = workspace.parent
    arxiv_server.state.feed_override = atom_feed(ENTRIES[:1])
    assert build(workspace).exit_code == 0
    before = (ws / "site" / "index.html").read_bytes()
    overrides = ws / "overrides"
    overrides.mkdir()
    # A careless override: the page title, unescaped (what a raw H1 title used to do).
    (overrides / "main.html").write_text(
        '{% extends "base.html" %}{% block htmltitle %}<title>'
        '{{ page.title | striptags }}</title>{% endblock %}')
    text = (ROOT / "mkdocs.yml").read_text().replace(
        "  name: material\n", "  name: material\n  custom_dir: overrides\n")
    (ws / "mkdocs.yml").write_text(text)
    result = CliRunner().invoke(cli, ["site", "--config", str(workspace)])
    assert result.exit_code == 1, result.output
    assert "2612.00001v1.html: <script>" in result.output
    assert (ws / "site" / "index.html").read_bytes() == before  # the old site stays
    assert not [p for p in ws.iterdir() if p.name.startswith(".site.")]


def test_no_script_from_the_hostile_paper_runs_in_a_browser(hostile_site: Path) -> None:
    with launch_chromium() as browser:
        page = browser.new_page()
        for name in ("papers/2612.00001v1.html", "research-map.html"):
            page.goto((hostile_site / "site" / "editions" / EDITION / name).as_uri())
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned === undefined"), name
        assert page.title().startswith("Findings") or "Research map" in page.title()


# The whole build, MkDocs included, over generated hostile text ---------------------------------

NASTY = st.sampled_from([
    "</title><script>window.__pwned=1</script>", "<img src=x onerror=alert(1)>",
    "<iframe src=//evil>", "[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))",
    "[x](java\tscript:alert(1))", "[x](&#106;avascript:alert(1))", "[x](vbscript:msgbox(1))",
    "[x](data:text/html,<script>alert(1)</script>)", "<a href='javascript:alert(1)'>a</a>",
    "{ id='x\"autofocus onfocus=alert(1)//' }", "{: onclick=alert(1) }", "\n## H { #x .y }\n",
    "<svg onload=alert(1)>", "<object data=x>", "<form action=//evil><button>go</button></form>",
    "<base href=//evil/>", "<meta http-equiv=refresh content='0;url=javascript:alert(1)'>",
    "<style>@import url(//evil)</style>", "<p style=\"background:url(//evil)\">",
    "<math><mi xlink:href=javascript:alert(1)>x</mi></math>", "$x<y$", "$$\\frac{a}{b}$$",
    "\x00", "\x07\x1b[31m", "\u202e\u2066", "\r\n", "&amp;lt;script&amp;gt;", "```", "`",
    "<!--", "-->", "\n\n    ", "![i](x onerror=alert(1))", "[r]: javascript:alert(1)", "\\",
    "| a | b |", "\n# H\n", "{{ 7*7 }}", "{% raw %}", "'\"", "&", "<", "日本語",
    # TeX whose text commands carry markup: latex2mathml copies \\text{} content as it is.
    "$\\text{<script>}$", "$\\text{<style>}$", "$\\mathrm{<svg/onload=alert(1)>}$",
    "$\\text{</p><title>}$", "$$\\text{<textarea>}$$", "$\\text{&lt;script&gt;}$",
    "\\(\\textbf{<plaintext>}\\)",
])
TEXT = st.lists(st.one_of(NASTY, st.text(max_size=12)), min_size=1, max_size=6).map("".join)


# Each example is a whole MkDocs build: few in the suite (raise DIGEST_HOSTILE_BUILDS to search
# harder), and no shrinking, which would take minutes of builds.
@settings(max_examples=int(os.environ.get("DIGEST_HOSTILE_BUILDS", "6")), deadline=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(title=TEXT, authors=TEXT, abstract=TEXT, answer=TEXT, plugin=st.booleans())
def test_no_generated_hostile_text_is_live_anywhere_in_the_built_site(
        tmp_path_factory: pytest.TempPathFactory, title: str, authors: str, abstract: str,
        answer: str, plugin: bool) -> None:
    ws = tmp_path_factory.mktemp("ws")
    yml = (ROOT / "mkdocs.yml").read_text()
    if not plugin:  # the guarantee holds without the sanitizer plugin too
        yml = yml.replace("  - digest-sanitize\n", "")
    (ws / "mkdocs.yml").write_text(yml)
    # Whatever comes before them, the words after the hostile text must reach the reader.
    edition = one_paper_edition(title, (authors, "B. Author"), f"{abstract} ENDMARKA",
                                f"{answer}\n\nENDMARKB", question=abstract)
    rendered = render_edition(make_environment(ROOT), edition, [],
                              site_url="https://example.org/digest/")
    write_pages(ws / "site_src", rendered)
    build_site(ws / "mkdocs.yml", ws / "site_src", ws / "site", "Digest",
               fallback_yml=ROOT / "mkdocs.yml", history=History.load(ws / "site_src"))
    site = ws / "site"
    assert check_site(site) == []
    _assert_markdown_inert(ws / "site_src")
    for path in site.rglob("*"):
        if path.suffix in (".html", ".xml", ".json"):
            text = path.read_text(encoding="utf-8")
            assert not set(text) & set("\x00\x07\x1b\u202e\u2066"), path
    ElementTree.parse(site / "feed.xml")
    ElementTree.parse(site / "sitemap.xml")
    paper_page = site / "editions" / EDITION / "papers" / "2501.00001v1.html"
    assert "ENDMARKA" in _shown(paper_page)
    for name in ("research-map", "deep-dive-1", "thinking"):
        assert "ENDMARKB" in _shown(site / "editions" / EDITION / f"{name}.html"), name
    page = html5lib.parse(paper_page.read_bytes(), treebuilder="etree",
                          namespaceHTMLElements=False)
    shown = " ".join(clean(title).split())
    if shown and "$" not in shown and "\\" not in shown:  # TeX is typeset, so not compared
        assert page.findtext("head/title", "").startswith(shown)
