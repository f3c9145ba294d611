"""The theme's static files, listed once a process where the theme is an installed package
(and its templates compiled once a process, text/compiled.py).

Every MkDocs build lists every file of every theme folder and filters the names
(`Files.add_files_from_theme`): for Material that is 14,000 files, mostly icons, and a tenth of a
second of CPU a build. An installed theme's files do not change while the process runs, so its
filtered listing is kept; a folder of the workspace's own (`custom_dir`, or this package in a
source checkout) is listed each build, so a file added while `digest serve` runs is picked up.
"""

from __future__ import annotations

import functools
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2

from ..text import compiled

_LISTED: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}


@functools.cache
def _site_packages() -> frozenset[Path]:
    return frozenset(Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib"))


@functools.cache
def _installed(folder: str) -> bool:
    """Whether `folder` lies in this environment's installed packages (asked every build)."""
    return any(Path(folder).resolve().is_relative_to(root) for root in _site_packages())


def list_installed_once(theme: Any) -> None:
    """Make `theme` (MkDocs' Theme) hand out Environments whose filtered listing of the
    installed theme folders is made once a process (MkDocs asks it of every build)."""
    if getattr(theme, "_digest_listed_once", False):
        return
    make_env: Callable[[], jinja2.Environment] = theme.get_env

    def get_env() -> jinja2.Environment:
        env = make_env()
        # Compiled once a process too, from the first use (Material's search plugin renders
        # its translations at on_config); the reading plugin keys it again once the build's
        # plugins have added their filters (on_env).
        env.bytecode_cache = compiled.for_environment(env)
        plain = env.list_templates

        def list_templates(extensions: Any = None,
                           filter_func: Callable[[str], bool] | None = None) -> list[str]:
            if extensions is not None or filter_func is None:
                return plain(extensions, filter_func)
            # MkDocs' filter depends on the theme's static_templates (and constants).
            statics = tuple(sorted(theme.static_templates))
            names: set[str] = set()
            for folder in theme.dirs:
                listed = jinja2.FileSystemLoader(folder).list_templates
                if not _installed(folder):
                    names.update(n for n in listed() if filter_func(n))
                    continue
                key = (folder, statics)
                if key not in _LISTED:
                    _LISTED[key] = tuple(n for n in listed() if filter_func(n))
                names.update(_LISTED[key])
            return sorted(names)

        env.list_templates = list_templates  # type: ignore[method-assign]
        return env

    theme.get_env = get_env
    theme._digest_listed_once = True
