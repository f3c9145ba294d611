"""Search on demand: a page loads the search index only once the reader starts a search.

The index grows with every edition; templates/assets/javascripts/lazy-search.js holds back
Material's request for it (search_index.json over http, the offline plugin's search_index.js
from file://) until the reader focuses, clicks or types into search, or opens a page from a
search result (?h=, highlighting). One edition is built once and opened in Chromium, served as
GitHub Pages serves a project site and from file://.

Absence is judged after the network has been idle (playwright's networkidle): Material asks
for the index while it starts, with its worker script. The control case (the same page with
the script emptied, as the site was before) shows that this wait sees the request when there
is one.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import launch_chromium
from tests.conftest import write_config
from tests.servers.arxiv import ArxivServer
from tests.servers.sglang import SglangServer
from tests.test_publish import _PagesHandler, build

EDITION = "2026-12-02"
PHONE, LAPTOP = (390, 844), (1366, 900)
QUERY = "[data-md-component=search-query]"
RESULT = ".md-search-result__item"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, fixtures: Path
           ) -> Iterator[tuple[str, Path]]:
    """The base URL of a one-edition site served under /repo/, and its folder."""
    arxiv, sglang = ArxivServer(fixtures).start(), SglangServer().start()
    folder = tmp_path_factory.mktemp("lazy") / "ws"
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_PagesHandler, directory=str(folder / "site")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        build(write_config(folder, arxiv, sglang), EDITION)
        yield f"http://127.0.0.1:{server.server_address[1]}/repo/", folder / "site"
    finally:
        server.shutdown()
        server.server_close()
        arxiv.stop()
        sglang.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module's tests (each opens its own pages)."""
    with launch_chromium() as chromium:
        yield chromium


def _is_index(url: str) -> bool:
    return url.split("?")[0].endswith(("/search/search_index.json", "/search/search_index.js"))


def _open(browser: Any, url: str, viewport: tuple[int, int] = LAPTOP, *,
          lazy: bool = True) -> tuple[Any, list[str]]:
    """A fresh page at `url` once the network is idle, and the list of the URLs it requested
    (growing as the page asks for more). Without `lazy`, lazy-search.js is served empty."""
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    if not lazy:
        page.route("**/lazy-search.js",
                   lambda route: route.fulfill(body="", content_type="text/javascript"))
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(url, wait_until="networkidle")
    return page, requested


def _index_requested_by(page: Any, action: Any) -> None:
    with page.expect_request(lambda request: _is_index(request.url), timeout=15_000):
        action()


def _search_finds(page: Any, words: str) -> None:
    # Typed key by key, as a reader does (Material searches on key events).
    page.locator(QUERY).press_sequentially(words)
    page.wait_for_selector(RESULT, timeout=30_000)
    assert page.locator(RESULT).count() >= 1


def test_over_http_the_index_loads_when_the_reader_starts_a_search(
        served: tuple[str, Path], browser: Any) -> None:
    base, _ = served
    # The control: without the script the index is requested on load, and the wait sees it.
    page, before = _open(browser, base, lazy=False)
    assert [url for url in before if _is_index(url)] == [base + "search/search_index.json"]
    page.close()

    page, requested = _open(browser, base)
    assert any("/workers/search." in url for url in requested)  # Material's search started
    assert not [url for url in requested if _is_index(url)]
    # Everything else is requested as before, but the sitemap: Material fetches it for the
    # feed's <link rel=alternate>, taking it for a translation (it grows with the archive too).
    assert base + "sitemap.xml" in before and base + "sitemap.xml" not in requested
    assert sorted(requested) == sorted(url for url in before
                                       if not _is_index(url) and not url.endswith("sitemap.xml"))
    _index_requested_by(page, lambda: page.locator(QUERY).click())
    _search_finds(page, "Fuzzing")
    assert len([url for url in requested if _is_index(url)]) == 1
    page.close()

    # Material's keyboard shortcut, on another page of the site.
    page, requested = _open(browser, base + f"editions/{EDITION}/index.html")
    assert not [url for url in requested if _is_index(url)]
    _index_requested_by(page, lambda: page.keyboard.press("/"))
    _search_finds(page, "Testing")
    page.close()

    # On a phone, search opens from the header's button.
    page, requested = _open(browser, base, PHONE)
    assert not [url for url in requested if _is_index(url)]
    _index_requested_by(page, lambda: page.locator('label.md-header__button[for="__search"]')
                        .click())
    _search_finds(page, "Fuzzing")
    page.close()


def test_a_page_opened_from_a_search_result_loads_the_index_and_highlights(
        served: tuple[str, Path], browser: Any) -> None:
    base, site = served
    for url in (base + "index.html?h=fuzzing", (site / "index.html").as_uri() + "?h=fuzzing"):
        page = browser.new_page()
        with page.expect_request(lambda request: _is_index(request.url), timeout=15_000):
            page.goto(url)
        page.wait_for_selector("article mark[data-md-highlight]", timeout=30_000)
        assert page.locator("article mark[data-md-highlight]").first.inner_text().lower() \
            == "fuzzing"
        page.close()


def test_from_file_the_index_script_loads_when_the_reader_starts_a_search(
        served: tuple[str, Path], browser: Any) -> None:
    _, site = served
    page, requested = _open(browser, (site / "index.html").as_uri())
    assert any(url.endswith("/lazy-search.js") for url in requested)
    assert any("/workers/search." in url for url in requested)
    assert not [url for url in requested if _is_index(url)]
    assert page.evaluate("typeof __index") == "undefined"
    _index_requested_by(page, lambda: page.locator(QUERY).focus())
    _search_finds(page, "Fuzzing")
    assert [url.rsplit("/", 2)[-2:] for url in requested if _is_index(url)] == [
        ["search", "search_index.js"]]
    page.close()
