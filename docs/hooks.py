"""MkDocs hook for the project's documentation: writes the configuration reference.

The page docs/configuration.md holds the prose and one marker line; the reference that
replaces it is made from the config's dataclasses at build time (generator.config.reference), so
every key, type, default, range and description is the code's own.
"""

from __future__ import annotations

from typing import Any

from generator.config.reference import MARKER, reference_markdown
from generator.prompts.kinds import BUILTIN_KINDS


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Put the generated reference where the configuration page has the marker."""
    if MARKER in markdown:
        return markdown.replace(MARKER, reference_markdown(BUILTIN_KINDS))
    return markdown
