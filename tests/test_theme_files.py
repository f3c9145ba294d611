"""The theme's static files listed once a process (generator/publish/theme_files.py): the same
files as MkDocs lists, and a file added to the workspace's own theme folder still found."""

from __future__ import annotations

from pathlib import Path

from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files

from generator.publish.theme_files import list_installed_once
from tests.conftest import ROOT


def _theme_files(config: MkDocsConfig) -> list[str]:
    files = Files([])
    files.add_files_from_theme(config.theme.get_env(), config)
    return sorted(f.src_uri for f in files)


def test_the_listing_kept_is_the_listing_mkdocs_makes_and_follows_custom_dir(
        tmp_path: Path) -> None:
    docs, custom = tmp_path / "docs", tmp_path / "overrides"
    docs.mkdir()
    custom.mkdir()
    (docs / "index.md").write_text("# x\n")
    config = load_config(str(ROOT / "mkdocs.yml"), docs_dir=str(docs),
                         site_dir=str(tmp_path / "site"),
                         theme={"name": "material", "custom_dir": str(custom)})
    plain = _theme_files(config)
    assert "assets/javascripts/bundle." in " ".join(plain)  # Material's own assets are listed
    list_installed_once(config.theme)
    assert _theme_files(config) == plain
    (custom / "extra.css").write_text("a {}\n")  # added while `digest serve` runs
    assert _theme_files(config) == sorted([*plain, "extra.css"])
