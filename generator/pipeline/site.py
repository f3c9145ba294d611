"""The site stage: the static site built from the edition's pages with MkDocs, and the
workspace skeleton a new digest starts from."""

from __future__ import annotations

import logging
from pathlib import Path

from ..config import Config
from ..edition.history import History
from ..edition.render import default_template_dir
from ..publish.site import build_site  # imports MkDocs only when a site is built

log = logging.getLogger(__name__)


def skeleton_dir() -> Path:
    """The default config.toml and mkdocs.yml of a new workspace."""
    packaged = default_template_dir().parent / "skeleton"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2]


def site_stage(config: Config, *, only_if_changed: bool = False,
               history: History | None = None) -> Path:
    """Build the site; with `only_if_changed`, not when it was built from these very inputs."""
    build_site(config.mkdocs_yml, config.docs_dir, config.site_dir, config.digest.title,
               fallback_yml=skeleton_dir() / "mkdocs.yml", only_if_changed=only_if_changed,
               history=history, site_url=config.digest.site_url)
    return config.site_dir
