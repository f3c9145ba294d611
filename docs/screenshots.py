"""Make the documentation's screenshots of an edition's home page, on a laptop and a phone.

    python docs/screenshots.py          # writes docs/images/edition-laptop.png and -phone.png

Offline, as the tests build editions: a workspace made by `digest init`, one edition (ten papers)
of the recorded arXiv papers (tests/fixtures, through bench/scale.py) with answers from the
SGLang-shaped double, the site built as `digest site` builds it, and its home page opened in
Chromium (tests/browser.py) at 1366 and 390 px wide. Run it after a change to how the site
looks, and commit the two images.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import tempfile
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.scale import fixture_papers  # noqa: E402
from generator import pipeline  # noqa: E402
from generator.cli import init  # noqa: E402
from generator.config import load_config  # noqa: E402
from generator.pipeline.site import site_stage  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from tests.browser import launch_chromium  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.doubles import MockModel, services  # noqa: E402

IMAGES = ROOT / "docs" / "images"
# (file, viewport width, height): a common laptop, and a phone as the reading tests use.
SHOTS = (("edition-laptop.png", 1366, 860), ("edition-phone.png", 390, 844))


def build_site(workspace: Path, editions: int = 1) -> Path:
    """A workspace's site with `editions` weekly editions of the recorded papers."""
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # the fixtures' odd fonts
    with contextlib.redirect_stdout(io.StringIO()):
        init.callback(workspace)  # type: ignore[misc]
    config = load_config(workspace / "config.toml", registry=BUILTIN_KINDS)
    base = fixture_papers()
    pdfs = sorted((FIXTURES / "pdfs").glob("arxiv-*.pdf"))
    per = min(config.arxiv.max_papers, 10)
    day = date(2026, 11, 23)
    for e in range(editions):
        name = (day + timedelta(weeks=e)).isoformat()
        papers = [replace(base[(e * per + i) % len(base)], arxiv_id=f"26{11 + e:02d}.{i + 1:05d}v1")
                  for i in range(per)]
        shelf: dict[str, bytes | str] = {
            str(p.pdf_url): pdfs[i % len(pdfs)].read_bytes() for i, p in enumerate(papers)}
        pipeline.run(config, services(config.cache_dir, papers, shelf, MockModel()), name)
    return site_stage(config)


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, launch_chromium(missing=sys.exit) as browser:
        site = build_site(Path(folder) / "ws")
        for file, width, height in SHOTS:
            page = browser.new_page(viewport={"width": width, "height": height},
                                    color_scheme="light")
            page.goto((site / "index.html").as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=str(IMAGES / file))
            page.close()
            print(f"{IMAGES / file}: {(IMAGES / file).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
