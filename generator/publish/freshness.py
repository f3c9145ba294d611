"""Whether the published site is already what a build would make, without importing MkDocs.

`digest build` skips the MkDocs step when nothing it reads has changed since the last build
(a rebuild of an unchanged edition writes byte-identical Markdown). `digest site` always
builds: it is how a changed theme override or plugin reaches the site.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

import yaml

from .. import __version__
from ..store.fingerprint import Fingerprint

SITE_MARKER = ".digest-site"  # left in every site `digest site` builds
_PACKAGES = ("mkdocs", "mkdocs-material", "pymdown-extensions")


def fingerprint(docs_dir: Path, config_file: Path, site_name: str,
                known: Mapping[Path, bytes] | None = None) -> str:
    """A digest of everything a site build reads: the Markdown, mkdocs.yml and every file it
    names (the theme's custom_dir, hooks, an INHERIT base), versions. `known`: the digests of
    files the run has read already (the editions' records), which are not read again."""
    digest = Fingerprint(__version__, site_name, *(_version(p) for p in _PACKAGES))
    inputs = [(docs_dir, p) for p in docs_dir.rglob("*") if p.is_file()]
    inputs += [(config_file.parent, p) for p in config_inputs(config_file)]
    for root, path in sorted(inputs, key=lambda item: (str(item[0]), str(item[1]))):
        digest.add_file(path, _relative(path, root), known)
    return digest.hexdigest()


def config_inputs(config_file: Path, _seen: frozenset[Path] = frozenset(),
                  _base: Path | None = None) -> list[Path]:
    """mkdocs.yml and the files it makes MkDocs read: the theme's `custom_dir` (every file),
    `hooks`, and an `INHERIT` base with what that names in turn. MkDocs merges a base into the
    config that inherits it, so every path resolves against the first config's folder."""
    if not config_file.is_file() or config_file.resolve() in _seen:
        return []
    files = [config_file]
    try:
        data = yaml.load(config_file.read_text(encoding="utf-8"), Loader=_TagBlindLoader)
    except (yaml.YAMLError, UnicodeDecodeError):  # MkDocs will say what is wrong with it
        return files
    if not isinstance(data, dict):
        return files
    base = _base or config_file.parent
    theme = data.get("theme")
    custom = theme.get("custom_dir") if isinstance(theme, dict) else None
    if isinstance(custom, str) and (base / custom).is_dir():
        files += [p for p in (base / custom).rglob("*") if p.is_file()]
    hooks = data.get("hooks")
    for hook in hooks if isinstance(hooks, list) else ():
        if isinstance(hook, str) and (base / hook).is_file():
            files.append(base / hook)
    inherit = data.get("INHERIT")
    if isinstance(inherit, str):
        files += config_inputs(config_file.parent / inherit, _seen | {config_file.resolve()},
                               base)
    return files


class _TagBlindLoader(yaml.SafeLoader):  # type: ignore[misc]
    """Reads mkdocs.yml's structure whatever tags it uses (`!ENV`, `!!python/name:`)."""


_TagBlindLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:  # a file outside the config's folder (an absolute custom_dir)
        return path.resolve().as_posix()


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
