"""A rebuild skips the render only where every page the last render wrote is still there as
it wrote it: a page deleted since (from site_src/ and site/ alike) is written again, not left
for MkDocs to fail on."""

from __future__ import annotations

from pathlib import Path

from generator.archive.history import History
from generator.archive.record import EditionRecord
from generator.config import load_config
from generator.pipeline.fetch import fetch_stage
from generator.pipeline.render import render_stage
from generator.pipeline.synthesize import synthesize_stage
from generator.prompts.kinds import BUILTIN_KINDS
from tests.doubles import MockModel, services
from tests.edition_fixture import EDITION, PAPERS


def test_a_page_deleted_since_the_last_render_is_rendered_again(tmp_path: Path) -> None:
    path = tmp_path / "ws" / "config.toml"
    path.parent.mkdir()
    path.write_text('[arxiv]\nquery = "testing"\nmax_papers = 3\nfull_text_papers = 0\n')
    config = load_config(path, registry=BUILTIN_KINDS)
    run = services(config.cache_dir, list(PAPERS), {}, MockModel())
    fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    synthesize_stage(config, run, EDITION, history=History.load(config.docs_dir))

    def render(only_if_changed: bool) -> EditionRecord | None:
        history = History.load(config.docs_dir, remaking=(EDITION,))
        return render_stage(config, run.cache, EDITION, history=history,
                            only_if_changed=only_if_changed)

    assert render(False) is not None
    assert render(True) is None  # nothing changed: skipped
    page = config.docs_dir / "editions" / EDITION / "research-map.md"
    text = page.read_text()
    page.unlink()  # from site_src/ (and the site/ a build made from it)
    assert render(True) is not None
    assert page.read_text() == text
    assert render(True) is None
