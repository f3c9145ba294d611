"""The site stage: the static site built from the edition's pages with MkDocs, and the
workspace skeleton a new digest starts from."""

from __future__ import annotations

import logging
from pathlib import Path

from .. import store
from ..archive.feed import write_feed
from ..archive.history import History
from ..config import Config
from ..errors import UsageError
from ..publish.site import build_site  # imports MkDocs only when a site is built
from ..publish.workspace import skeleton_file

log = logging.getLogger(__name__)


def skeleton_dir() -> Path:
    """The folder of the default config.toml and mkdocs.yml of a new workspace (the wheel's
    skeleton, else the repository's root: its skeleton/ folder holds only the other files)."""
    return skeleton_file("mkdocs.yml").parent


def site_stage(config: Config, *, only_if_changed: bool = False, history: History) -> Path:
    """Build the site; with `only_if_changed`, not when it was built from these very inputs.
    Built on demand (`digest site`, `digest remove`), the feed is first made to follow the
    site's current address."""
    check_pages(config)
    if not only_if_changed:
        feed_at_address(config, history)
    build_site(config.mkdocs_yml, config.docs_dir, config.site_dir, config.digest.title,
               fallback_yml=skeleton_dir() / "mkdocs.yml", only_if_changed=only_if_changed,
               history=history, site_url=config.digest.site_url)
    return config.site_dir


def check_pages(config: Config) -> None:
    """UsageError where there are no pages to build a site from yet (a workspace just made by
    `digest init`): one line that says what to run, not MkDocs' complaint about docs_dir."""
    if not config.docs_dir.is_dir():
        raise UsageError(f"there are no pages to build a site from yet ({config.docs_dir} does "
                         "not exist): run `digest build` first, which fetches, synthesizes and "
                         "renders an edition, then builds the site")


def feed_at_address(config: Config, history: History) -> bool:
    """Write the feed again from the records where it differs from what they make at the
    current address: DIGEST_SITE_URL comes from the environment (a custom domain, a renamed
    repository), and a site built alone must not keep a feed that links the old one (a build
    renders it again itself: the address is in its fingerprint). Whether it was written."""
    if not (config.docs_dir / store.FEED).is_file():
        return False  # nothing rendered yet: the first build writes it
    if not write_feed(config.docs_dir, config.digest.title, config.digest.site_url, history):
        return False
    log.info("the feed was written again for the site's address %s",
             config.digest.site_url or "(none: relative links)")
    return True
