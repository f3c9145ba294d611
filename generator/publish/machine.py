"""The site's files for machines: each edition's public record as JSON, the index of editions,
llms.txt and the JSON Schema, written into the built site beside the HTML.

MkDocs copies the workspace's record files (`editions/<name>/edition.json`) into the site as
they are; those paths are written over here with the public form (archive/public.py), which
holds the record whole and adds what an agent reads first.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..archive.history import History
from ..archive.public import machine_files
from ..store.cache import atomic_write_text

log = logging.getLogger(__name__)


def write_machine_files(site_dir: Path, title: str, history: History, site_url: str = "") -> None:
    """Write the machine-readable files into `site_dir` (a site just built, not yet live)."""
    files = machine_files(title, history.records, site_url)
    for path, text in files.items():
        atomic_write_text(site_dir / path, text)
    log.info("%d machine-readable file(s) written beside the pages", len(files))
