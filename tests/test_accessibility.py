"""Accessibility: axe-core (WCAG 2 A and AA) on every page kind, light and dark, laptop and phone.

The site is built with the settings `digest init` writes plus triage (two editions, the second
with nothing new) and served as GitHub Pages serves a project site (under /repo/, 404.html for
anything missing, DIGEST_SITE_URL set as the workflow sets it). axe-core comes with the
axe-playwright-python package and runs in the project's Chromium.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import cli
from tests.browser import launch_chromium
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import SglangServer, realistic_responder
from tests.test_publish import _PagesHandler, mock_env

FIRST, LATEST = "2026-11-25", "2026-12-02"
PHONE, LAPTOP = (390, 844), (1366, 900)
TRIAGE = ('\n[triage]\ninterests = ["fuzzing and testing tools", "program analysis"]\n'
          '\n[feedback]\ngithub_repo = "reader/digest"\n')  # the marks' links on every entry


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, fixtures: Path
           ) -> Iterator[tuple[str, Path]]:
    """The base URL of the two-edition site, served under /repo/, and its folder."""
    arxiv, sglang = ArxivServer(fixtures).start(), SglangServer().start()
    sglang.state.responder = realistic_responder
    folder = tmp_path_factory.mktemp("a11y") / "ws"
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_PagesHandler, directory=str(folder / "site")))
    base = f"http://127.0.0.1:{server.server_address[1]}/repo/"
    try:
        config = write_config(folder, arxiv, sglang, structured=True, evidence=True,
                              max_papers=4, extra="", continuity=True)
        config.write_text(config.read_text() + TRIAGE)
        with mock_env({"DIGEST_SITE_URL": base}):
            for edition in (FIRST, LATEST):
                result = CliRunner().invoke(cli, ["build", "--config", str(config),
                                                  "--edition", edition], catch_exceptions=False)
                assert result.exit_code == 0, result.output
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield base, folder / "site"
    finally:
        server.shutdown()
        arxiv.stop()
        sglang.stop()


def page_kinds(base: str, site: Path) -> dict[str, str]:
    latest = site / "editions" / LATEST
    paper = sorted((latest / "papers").glob("*.html"))[0].name
    paper_home = sorted((site / "papers").glob("*.html"))[0].name
    pages = {"home": "", "overview": f"editions/{LATEST}/",
             "research-map": f"editions/{LATEST}/research-map.html",
             "deep-dive": f"editions/{LATEST}/memory-management.html",
             "thinking": f"editions/{LATEST}/thinking.html",
             "paper": f"editions/{LATEST}/papers/{paper}", "paper-home": f"papers/{paper_home}",
             "run-report": f"editions/{LATEST}/run-report.html",
             "triage": f"editions/{LATEST}/triage.html", "older": f"editions/{FIRST}/",
             "since": f"editions/{LATEST}/since-last-edition.html",
             "theme": "themes/" + sorted((site / "themes").glob("*.html"))[0].name,
             "not-found": "editions/no/such/page/"}
    return {name: base + path for name, path in pages.items()}


def test_no_serious_or_critical_axe_violation_on_any_page_kind(served: tuple[str, Path]) -> None:
    """Every page kind in both palettes at both widths: one test, so that the two-edition
    site is built once (xdist would build a module fixture once per worker)."""
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    found: list[str] = []
    with launch_chromium() as browser:
        for scheme in ("light", "dark"):
            for viewport in (LAPTOP, PHONE):
                page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
                page.emulate_media(color_scheme=scheme)  # Material's palette follows it
                for name, url in page_kinds(*served).items():
                    where = f"{name} ({scheme}, {viewport[0]} px)"
                    found.extend(_check(page, axe, url, where, name, viewport))
                page.close()
    assert found == [], "\n".join(found)


def _check(page: Any, axe: Any, url: str, where: str, name: str,
           viewport: tuple[int, int]) -> list[str]:
    found: list[str] = []
    response = page.goto(url)
    assert response is not None and response.status == (
        404 if name == "not-found" else 200), url
    page.wait_for_load_state("load")
    results = axe.run(page, options={
        "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa"]},
        "resultTypes": ["violations"]})
    # Nothing inside the article wider than the screen (a table scrolling sideways inside
    # its box included).
    wide = page.evaluate("""() => [...document.querySelectorAll('article *')]
        .filter(e => e.getBoundingClientRect().right > innerWidth + 1)
        .map(e => e.tagName + '.' + e.className).slice(0, 3)""")
    if wide:
        found.append(f"{where}: wider than the screen: {wide}")
    if name == "overview" and viewport == LAPTOP:
        found.extend(_dense(page))
    for violation in results.response["violations"]:
        if violation["impact"] in ("serious", "critical"):
            nodes = [" ".join(map(str, n["target"])) + " " + n.get("failureSummary", "")[-160:]
                     for n in violation["nodes"][:3]]
            found.append(f"{where}: {violation['id']} ({violation['impact']}) at "
                         f"{'; '.join(nodes)}")
    return found


def _dense(page: Any) -> list[str]:
    """The overview on a laptop: what leads (the first pick, or where nothing is new to pick,
    the notice that says so) above the fold, the paper entries at most 160 px apart."""
    top, gaps = page.evaluate("""() => {
        const pick = document.querySelector('article ol li a[href*="papers/"]')
            || document.querySelector('article .admonition.info');
        const tops = [...document.querySelectorAll('h4.digest-entry')]
            .map(e => e.getBoundingClientRect().top + scrollY);
        return [pick ? pick.getBoundingClientRect().top + scrollY : null,
                tops.slice(1).map((t, i) => t - tops[i])];
    }""")
    problems = []
    if top is None or top > LAPTOP[1]:
        problems.append(f"overview: its lead starts at {top} px, below the fold")
    if not gaps or max(gaps) > 160:
        problems.append(f"overview: paper entries {gaps} px apart (at most 160)")
    return problems
