"""Debian's Chromium driven by playwright, for the tests that open the built site."""

from __future__ import annotations

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


@contextmanager
def launch_chromium(missing: Callable[[str], None] = _missing) -> Iterator[Any]:
    """A headless Chromium browser (closed on exit); where there is none, `missing` says why
    (the tests skip, except in CI; a benchmark stops)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        missing("Debian's chromium is not installed (.ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()
