"""Whether the published site is already what a build would make, without importing MkDocs.

`digest build` skips the MkDocs step when nothing it reads has changed since the last build
(a rebuild of an unchanged edition writes byte-identical Markdown). `digest site` always
builds: it is how a changed theme override or plugin reaches the site.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from .. import __version__

SITE_MARKER = ".digest-site"  # left in every site `digest site` builds
_PACKAGES = ("mkdocs", "mkdocs-material", "pymdown-extensions")


def fingerprint(docs_dir: Path, config_file: Path, site_name: str) -> str:
    """A digest of everything a site build reads: the Markdown, mkdocs.yml, versions."""
    digest = hashlib.sha256()
    for part in (__version__, site_name, *(_version(p) for p in _PACKAGES)):
        digest.update(part.encode() + b"\0")
    digest.update(config_file.read_bytes() if config_file.is_file() else b"")
    for path in sorted(p for p in docs_dir.rglob("*") if p.is_file()):
        digest.update(path.relative_to(docs_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "-"


def marker_text(digest: str) -> str:
    return ("Built by research-digest. `digest site` replaces this folder on every build.\n"
            f"fingerprint: {digest}\n")


def is_current(site_dir: Path, digest: str) -> bool:
    """Whether `site_dir` was built from exactly these inputs (and is whole)."""
    marker = site_dir / SITE_MARKER
    return (site_dir / "index.html").is_file() and marker.is_file() and (
        f"fingerprint: {digest}" in marker.read_text(encoding="utf-8", errors="replace"))
