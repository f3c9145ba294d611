"""Make the documentation's screenshots of an edition's home page, on a laptop and a phone.

    python docs/screenshots.py          # writes docs/images/edition-laptop.png and -phone.png

Offline, as the tests build editions: a workspace made by `digest init` (the query and title it
writes: LLM inference), one edition of seven real LLM-inference papers (their arXiv metadata,
docs/sample_edition.py) answered by a scripted model whose every citing sentence comes with a
quote from the cited paper's abstract, checked and judged as a real build checks them; the site
built as `digest site` builds it, and its home page opened in Chromium (tests/browser.py) at
1366 and 390 px wide, at twice the pixels (a phone's screen), then made smaller to keep each
file under about 200 KB. Run it after a change to how the site looks, look at the two images,
and commit them.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sample_edition import responder  # noqa: E402  (beside this file)
from sample_papers import SAMPLES  # noqa: E402

from generator import pipeline  # noqa: E402
from generator.archive.history import History  # noqa: E402
from generator.cli import init  # noqa: E402
from generator.config import load_config  # noqa: E402
from generator.pipeline.site import site_stage  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from tests.browser import launch_chromium  # noqa: E402
from tests.doubles import MockModel, services  # noqa: E402

IMAGES = ROOT / "docs" / "images"
# (file, viewport width and height in CSS px, device pixels per CSS px): a common laptop, and
# a phone as the reading tests use it, at the 2x of a phone's screen so that it reads as one.
SHOTS = (("edition-laptop.png", 1366, 860, 1), ("edition-phone.png", 390, 780, 2))


EDITION = "2024-03-11"  # the Monday after the newest of the sample papers


def build_site(workspace: Path) -> Path:
    """A workspace's site with one edition of the sample papers (abstracts only: no PDFs)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        init.callback(workspace)  # type: ignore[misc]
    toml = workspace / "config.toml"
    toml.write_text(toml.read_text().replace("full_text_papers = 5", "full_text_papers = 0"))
    config = load_config(toml, registry=BUILTIN_KINDS)
    papers = [sample.paper() for sample in SAMPLES]
    pipeline.run(config, services(config.cache_dir, papers, {}, MockModel(responder)), EDITION)
    return site_stage(config, history=History.load(config.docs_dir))


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, launch_chromium(missing=sys.exit) as browser:
        site = build_site(Path(folder) / "ws")
        for file, width, height, scale in SHOTS:
            page = browser.new_page(viewport={"width": width, "height": height},
                                    device_scale_factor=scale, color_scheme="light")
            page.goto((site / "index.html").as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=str(IMAGES / file))
            page.close()
            print(f"{IMAGES / file}: {(IMAGES / file).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
