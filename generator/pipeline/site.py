"""The site stage: the static site built from the edition's pages with MkDocs, and the
workspace skeleton a new digest starts from."""

from __future__ import annotations

import logging
from pathlib import Path

from ..config import Config
from ..edition.history import History
from ..publish.site import build_site  # imports MkDocs only when a site is built
from ..publish.workspace import skeleton_file

log = logging.getLogger(__name__)


def skeleton_dir() -> Path:
    """The folder of the default config.toml and mkdocs.yml of a new workspace (the wheel's
    skeleton, else the repository's root: its skeleton/ folder holds only the other files)."""
    return skeleton_file("mkdocs.yml").parent


def site_stage(config: Config, *, only_if_changed: bool = False,
               history: History | None = None) -> Path:
    """Build the site; with `only_if_changed`, not when it was built from these very inputs."""
    build_site(config.mkdocs_yml, config.docs_dir, config.site_dir, config.digest.title,
               fallback_yml=skeleton_dir() / "mkdocs.yml", only_if_changed=only_if_changed,
               history=history, site_url=config.digest.site_url)
    return config.site_dir
