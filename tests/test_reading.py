"""Reading the digest in a real browser: every page kind on a laptop and a phone, search, feed.

Two editions are built once, with answers written the way models write them (sections, a list
right under a line of text, a table, inline and display TeX, citations), with the settings
`digest init` writes (briefs, themes and evidence on). Screenshots of every page kind go to
$DIGEST_ARTIFACTS (CI keeps them), or to the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import html5lib
import pytest
from click.testing import CliRunner

from generator.cli import cli
from tests.browser import launch_chromium
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import SglangServer, realistic_responder

FIRST, LATEST = "2026-11-25", "2026-12-02"
ATOM = "{http://www.w3.org/2005/Atom}"
RAW_MATH = re.compile(r"\$[^\s$][^$\n]{0,200}\$|\\\(|\\\[")
PHONE, LAPTOP = (390, 844), (1366, 900)


def build(config: Path, edition: str, *extra: str) -> None:
    result = CliRunner().invoke(cli, [*extra, "--config", str(config), "--edition", edition]
                                if extra else ["build", "--config", str(config), "--edition",
                                               edition], catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def digest(tmp_path_factory: pytest.TempPathFactory, fixtures: Path) -> Iterator[Path]:
    """Two editions: four papers, then six (four seen before, two new)."""
    arxiv, sglang = ArxivServer(fixtures).start(), SglangServer().start()
    sglang.state.responder = realistic_responder
    try:
        config = write_config(tmp_path_factory.mktemp("reading") / "ws", arxiv, sglang,
                              structured=True, evidence=True, max_papers=4)
        build(config, FIRST)
        config.write_text(config.read_text().replace("max_papers = 4", "max_papers = 6"))
        build(config, LATEST)
        yield config.parent
    finally:
        arxiv.stop()
        sglang.stop()


def kinds(site: Path) -> dict[str, Path]:
    """One page of every kind, the older edition's overview last."""
    latest = site / "editions" / LATEST
    return {
        "home": site / "index.html", "overview": latest / "index.html",
        "research-map": latest / "research-map.html",
        "deep-dive": latest / "memory-management.html", "thinking": latest / "thinking.html",
        "paper": sorted((latest / "papers").glob("*.html"))[0],
        "paper-home": sorted((site / "papers").glob("*.html"))[0],
        "run-report": latest / "run-report.html", "older": site / "editions" / FIRST / "index.html",
    }


def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("DIGEST_ARTIFACTS") or tmp_path) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_every_page_kind_reads_on_a_laptop_and_a_phone(digest: Path, tmp_path: Path,
                                                       viewport: tuple[int, int]) -> None:
    shots = artifacts(tmp_path)
    width, height = viewport
    with launch_chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": height})
        for kind, path in kinds(digest / "site").items():
            page.goto(path.as_uri())
            page.screenshot(path=str(shots / f"{kind}-{width}.png"), full_page=True)
            where = f"{kind} at {width} px"
            # Nothing runs off the side of the screen, so the page never scrolls sideways.
            assert page.evaluate("document.documentElement.scrollWidth") <= width, where
            text = page.locator("article").inner_text()
            assert not RAW_MATH.findall(text), f"raw TeX on the {where}: {RAW_MATH.findall(text)}"
            assert LATEST in page.title() or kind in ("home", "paper-home", "older"), where
            for chart in page.locator(".digest-chart svg").all():
                labels = chart.locator("text").all()
                assert labels, f"a chart without labels on the {where}"
                for label in labels:
                    box = label.bounding_box()
                    assert box and box["height"] >= 10, f"a label under 10 px on the {where}"
                    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, where
        page.close()


def test_math_is_mathml_with_its_tex_kept(digest: Path) -> None:
    html = (digest / "site" / "editions" / LATEST / "research-map.html").read_text()
    assert '<annotation encoding="application/x-tex">O(m &#92;cdot t)</annotation>' in html \
        or '<annotation encoding="application/x-tex">O(m \\cdot t)</annotation>' in html
    assert 'display="block"' in html and "$O(" not in html


def test_a_list_right_under_a_line_of_text_is_a_list_on_the_page(digest: Path) -> None:
    html = (digest / "site" / "editions" / LATEST / "research-map.html").read_text()
    assert re.search(r"Key findings:</p>\s*<ul>", html)


def test_search_finds_a_paper_once_on_its_own_page(digest: Path) -> None:
    index = json.loads((digest / "site" / "search" / "search_index.json").read_text())
    locations = [d["location"] for d in index["docs"]]
    # The editions' copies of a paper page and every chart stay out of the index.
    assert not [loc for loc in locations if re.match(r"editions/[^/]+/papers/", loc)]
    assert not [d for d in index["docs"] if "Submission dates of the papers" in d["text"]]
    title = "Active Fuzzing for Testing and Securing Cyber-Physical Systems"  # in both editions
    with launch_chromium() as browser:
        page = browser.new_page(viewport={"width": LAPTOP[0], "height": LAPTOP[1]})
        page.goto((digest / "site" / "index.html").as_uri())
        page.locator("input.md-search__input").press_sequentially(title)
        page.wait_for_selector(".md-search-result__item", timeout=30_000)
        page.wait_for_timeout(300)  # results settle after the last key
        hits = page.locator(".md-search-result__item > a").evaluate_all(
            "links => links.map(a => a.getAttribute('href'))")
    # Other papers share its words; this paper is one hit (not one per edition), and the first.
    this_paper = [h for h in hits if "2005.14124" in h]
    assert len(this_paper) == 1 and re.search(r"/papers/2005\.14124\.html", this_paper[0])
    assert hits[0] == this_paper[0], hits


def test_the_paper_page_lists_its_editions_and_each_copy_its_neighbours(digest: Path) -> None:
    home = (digest / "site_src" / "papers" / "2005.14124.md").read_text()
    assert f"[Edition {LATEST}](../editions/{LATEST}/papers/2005.14124v2.md)" in home
    assert f"[Edition {FIRST}](../editions/{FIRST}/papers/2005.14124v2.md)" in home
    assert home.index(LATEST) < home.index(FIRST)
    copy = (digest / "site_src" / "editions" / LATEST / "papers" / "2005.14124v2.md").read_text()
    assert "search:\n  exclude: true" in copy
    assert "[this paper across editions](../../../papers/2005.14124.md)" in copy
    assert re.search(r"\[← 2\. .*\]\(\S+\.md\) · \[4\. .* →\]\(\S+\.md\)", copy)


def test_search_results_name_the_edition_of_every_edition_page(digest: Path) -> None:
    """The latest edition's pages are titled by the navigation ("Research map"); in search
    they say which week they are from, like the older ones."""
    index = json.loads((digest / "site" / "search" / "search_index.json").read_text())
    titles = {d["location"]: d["title"] for d in index["docs"]}
    assert titles[f"editions/{LATEST}/research-map.html"] == f"Research map · {LATEST}"
    assert titles[f"editions/{FIRST}/research-map.html"].endswith(FIRST)
    assert not [t for loc, t in titles.items() if loc.startswith("editions/") and "#" not in loc
                and loc.split("/")[1] not in t]


def test_an_older_edition_says_so_and_links_the_latest(digest: Path) -> None:
    older = (digest / "site" / "editions" / FIRST / "research-map.html").read_text()
    assert "An earlier edition" in older and f'href="../{LATEST}/index.html"' in older
    latest = (digest / "site" / "editions" / LATEST / "research-map.html").read_text()
    assert "An earlier edition" not in latest


def test_one_navigation_per_page(digest: Path) -> None:
    """No page repeats the edition's navigation inline; a synthesis page starts with content."""
    edition = digest / "site_src" / "editions" / LATEST
    for path in [*edition.glob("*.md"), *(edition / "papers").glob("*.md")]:
        text = path.read_text()
        assert "[Overview](" not in text, path  # the old inline navigation line
        top = text.split("\n# ", 1)[1].split("\n", 1)[1].lstrip()
        assert not top.startswith("<small>"), path  # no meta line before the content
    body = (edition / "research-map.md").read_text().split("# Research map\n", 1)[1].lstrip()
    # The answer first, nothing before it; its own top level is the page's H2 (issue 74).
    assert body.startswith("## Field overview")


def test_thinking_answers_side_by_side_on_a_laptop_and_stacked_on_a_phone(digest: Path) -> None:
    path = digest / "site" / "editions" / LATEST / "thinking.html"
    with launch_chromium() as browser:
        for (width, height), side_by_side in ((LAPTOP, True), (PHONE, False)):
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(path.as_uri())
            off, on = (page.locator(".digest-side").nth(i).bounding_box() for i in (0, 1))
            assert off and on
            if side_by_side:
                assert abs(off["y"] - on["y"]) < 2 and on["x"] >= off["x"] + off["width"]
            else:
                assert on["y"] >= off["y"] + off["height"]
            page.close()


def test_charts_follow_both_palettes(digest: Path) -> None:
    path = digest / "site" / "editions" / LATEST / "run-report.html"
    with launch_chromium() as browser:
        for scheme in ("light", "dark"):
            page = browser.new_page(color_scheme=scheme)
            page.goto(path.as_uri())
            label, background = page.evaluate(
                "[getComputedStyle(document.querySelector('.digest-chart text')).fill,"
                " getComputedStyle(document.body).backgroundColor]")
            assert label != background
            swatch, bar = page.evaluate(
                "['.digest-chart g rect.digest-bar-reasoning',"
                " '.digest-chart g:not(:first-of-type) rect.digest-bar-reasoning']"
                ".map(s => getComputedStyle(document.querySelector(s)).fill)")
            assert swatch == bar  # the legend shows the colour the bars have
            page.close()


def test_every_page_links_the_feed_for_auto_discovery(digest: Path) -> None:
    for path in (digest / "site").rglob("*.html"):
        if path.name == "404.html":
            continue
        tree = html5lib.parse(path.read_bytes(), namespaceHTMLElements=False)
        links = [link for link in tree.iter("link")
                 if link.get("rel") == "alternate" and link.get("type") == "application/atom+xml"]
        assert len(links) == 1, path
        target = (path.parent / links[0].get("href", "")).resolve()
        assert target == (digest / "site" / "feed.xml").resolve(), path


def test_the_feed_has_stable_tag_ids_new_papers_and_math_as_text(digest: Path,
                                                                 tmp_path: Path) -> None:
    feed_path = digest / "site_src" / "feed.xml"
    root = ElementTree.parse(feed_path).getroot()
    entries = root.findall(f"{ATOM}entry")
    ids = [e.findtext(f"{ATOM}id") for e in entries]
    assert ids == [f"tag:research-digest.invalid,{LATEST}:/editions/{LATEST}",
                   f"tag:research-digest.invalid,{FIRST}:/editions/{FIRST}"]
    content = entries[0].findtext(f"{ATOM}content") or ""
    new = content.split("New in this edition", 1)[1].split("</ul>", 1)[0]
    assert new.count("<li>") == 2
    summary = entries[0].findtext(f"{ATOM}summary") or ""
    assert "O(m·t)" in summary and "$" not in summary
    stamps = [e.findtext(f"{ATOM}updated") for e in entries]
    # Rendering every edition again changes nothing a reader of the feed sees.
    config = digest / "config.toml"
    result = CliRunner().invoke(cli, ["render", "--all", "--config", str(config)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    again = ElementTree.parse(feed_path).getroot().findall(f"{ATOM}entry")
    assert [e.findtext(f"{ATOM}updated") for e in again] == stamps


def test_no_page_leaves_a_reader_with_a_bare_paper_number(digest: Path) -> None:
    """Synthesis pages, the home page, the overview and the feed read papers by name: "Paper
    N" survives only where it flags a number the bundle does not have, and every synthesis
    page ends with a numbered key of the papers it cites."""
    site = digest / "site"
    pages = kinds(site)
    for name in ("home", "overview", "research-map", "deep-dive", "thinking"):
        # Charts label their dots by number and title: not a reference to read.
        source = re.sub(r"<svg\b.*?</svg>", "", pages[name].read_text(), flags=re.DOTALL)
        tree = html5lib.parse(source, namespaceHTMLElements=False)
        article = tree.find(".//article")
        assert article is not None
        text = " ".join("".join(article.itertext()).split())
        bare = [m.group(0) for m in re.finditer(r"\bPapers? \d+(?! ⚠ not in this edition)",
                                                 text)]
        assert bare == [], name
        if name in ("research-map", "deep-dive", "thinking"):
            assert "Papers cited on this page" in text, name
    feed = (site / "feed.xml").read_text()
    assert not re.search(r"\bPapers? \d+", re.sub(r"<[^>]+>", " ", feed))
