"""Debian's Chromium driven by playwright, for the tests that open the built site."""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def _missing(reason: str) -> None:
    # CI installs Chromium (.ci/run); there a missing browser is a failure, never a skip.
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the browser tests")
    pytest.skip(reason)


_SHARED: dict[str, Any] = {}  # one browser a process: a launch costs a second of CPU


def _close_shared() -> None:
    browser, playwright = _SHARED.pop("browser", None), _SHARED.pop("playwright", None)
    try:
        if browser is not None:
            browser.close()
    finally:
        if playwright is not None:
            playwright.stop()


@contextmanager
def launch_chromium(missing: Callable[[str], None] = _missing) -> Iterator[Any]:
    """A headless Chromium browser; where there is none, `missing` says why (the tests skip,
    except in CI; a benchmark stops). One browser serves the whole process (launched on first
    use, closed at exit); what a caller opens in it (its pages' contexts) is closed on exit, so
    each caller starts with nothing of another's: no cookies, storage or emulated media."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        missing("Debian's chromium is not installed (.ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed")
    browser = _SHARED.get("browser")
    if browser is None or not browser.is_connected():
        _close_shared()
        _SHARED["playwright"] = sync_playwright().start()
        browser = _SHARED["browser"] = _SHARED["playwright"].chromium.launch(
            executable_path=path, args=FLAGS)
        if not _SHARED.get("registered"):
            atexit.register(_close_shared)
            _SHARED["registered"] = True
    before = set(browser.contexts)
    try:
        yield browser
    finally:
        for context in browser.contexts:
            if context not in before:
                context.close()
