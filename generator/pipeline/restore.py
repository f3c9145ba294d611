"""Editions the branch lacks, brought back before a build (`digest workflow restore`).

When the workflow's commit-back could not push (publish/commit_back.py), the edition was
still published and its records kept as an artifact; the next run starts from a checkout
without it. Before it builds, this puts back every edition that the artifact (a folder) or the
deployed site (which serves each edition's record beside its pages) holds and the branch
lacks, and renders its pages from that record: the next site, and the next commit, have it.

Only editions newer than the newest the branch has come back, and none `digest remove` took
off (it names them in site_src/.removed-editions, committed): an edition missing from the
branch for those reasons was taken off on purpose, not lost by a push.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

from .. import store
from ..archive.history import RECORD_MAX_BYTES, History
from ..archive.public import PublicRecordError, record_of_public
from ..archive.record import EditionRecord, RecordFormatError, record_text
from ..config import Config
from ..edition.failed_pages import PagesFailed
from ..errors import UsageError
from ..store import Docs
from ..store.cache import Cache, atomic_write_bytes
from ..store.jsonfile import JSONFileError, parse_json, read_bounded
from . import EDITION_RE
from .render import render_stage

log = logging.getLogger(__name__)

# Fetches a URL's bytes (None: not there); the CLI passes one over `requests`.
Get = Callable[[str], bytes | None]
# A sitemap's addresses, each read once (linear, however the file is made: no address runs
# past a "<"), none longer than any address of a page of ours.
_SITEMAP_LOC = re.compile(r"<loc>([^<]{0,2048})</loc>")
# The editions asked of the site, the newest first: more missing than this is no failed push
# but a branch that lost its history, and each is a request.
SITE_CANDIDATES = 8


@dataclass(frozen=True)
class Found:
    """An edition's record from somewhere other than the branch."""

    edition: str
    record: bytes  # edition.json's bytes, as they were published
    folder: Path | None  # its whole folder (pages too), when the source is a folder
    source: str  # where it came from, in words


@dataclass(frozen=True)
class Restored:
    edition: str
    source: str
    # Its pages that could not be made (each says so on the site; the next build makes them
    # again): a warning, never the restore's failure, which would stop every later week.
    failed_pages: tuple[str, ...] = ()


def found_in_folder(folder: Path) -> list[Found]:
    """Every edition record under `folder` (an artifact as it was downloaded: any depth)."""
    found = []
    for path in sorted(folder.rglob(store.RECORD)) if folder.is_dir() else []:
        try:  # a regular file in the folder, bounded: never a FIFO waited on or a link out
            data = read_bounded(path, RECORD_MAX_BYTES, root=folder)
        except (FileNotFoundError, JSONFileError) as err:
            log.warning("%s cannot be read (%s): not restored", path, err)
            continue
        edition = _edition_of(data, str(path))
        if edition:
            found.append(Found(edition, data, path.parent, str(path.parent)))
    return found


def found_on_site(site_url: str, get: Get, newer_than: str = "") -> list[Found]:
    """Every edition record the deployed site at `site_url` serves, by its sitemap (only those
    named after `newer_than`: one request a candidate, not one an edition of the archive)."""
    base = site_url if site_url.endswith("/") else site_url + "/"
    sitemap = get(urljoin(base, "sitemap.xml"))
    if sitemap is None:
        log.warning("%ssitemap.xml could not be read: no edition restored from the site", base)
        return []
    names = sorted({name for loc in _SITEMAP_LOC.findall(sitemap.decode("utf-8", "replace"))
                    if EDITION_RE.fullmatch(name := _edition_in(loc)) and name > newer_than})
    if len(names) > SITE_CANDIDATES:
        log.warning("the site's sitemap names %d editions newer than the branch's newest; only "
                    "the newest %d are read (%s to %s): the others are not restored from the "
                    "site", len(names), SITE_CANDIDATES, names[-SITE_CANDIDATES],
                    names[-1])
        names = names[-SITE_CANDIDATES:]
    found = []
    for name in names:
        url = urljoin(base, store.record(name))
        data = get(url)
        record = _public_record(data, url) if data is not None else None
        if record is not None and record.edition == name:
            # The site serves the public form of the record (archive/public.py): the record
            # it holds is what the branch keeps.
            found.append(Found(name, record_text(record).encode(), None, url))
    return found


def _edition_in(loc: str) -> str:
    """The edition a page's address is of: the folder after the first `editions/` ("" where
    there is none)."""
    parts = loc.split("/")
    for at, part in enumerate(parts[:-2]):
        if part == store.EDITIONS and at and parts[at + 1]:
            return parts[at + 1]
    return ""


def _public_record(data: bytes, source: str) -> EditionRecord | None:
    """The record a site's public edition.json holds (None where it is none this version
    reads)."""
    try:
        return record_of_public(parse_json(data, source, max_bytes=RECORD_MAX_BYTES),
                                source)
    except (ValueError, JSONFileError, PublicRecordError) as err:
        log.warning("%s is not a public record this version reads (%s): not restored",
                    source, err)
        return None


def _edition_of(data: bytes, source: str) -> str:
    """The edition a record is of ("" where it is none this version reads)."""
    try:
        record = EditionRecord.from_json(parse_json(data, source, max_bytes=RECORD_MAX_BYTES),
                                         source)
    except (ValueError, JSONFileError, RecordFormatError) as err:
        log.warning("%s is not a record this version reads (%s): not restored", source, err)
        return ""
    return record.edition if EDITION_RE.fullmatch(record.edition) else ""


def newest_edition(config: Config) -> str:
    """The newest edition the branch has ("" when none)."""
    return max(Docs(config.docs_dir).edition_names(), default="")


def missing(config: Config, candidates: Iterable[Found]) -> list[Found]:
    """The candidates the branch lacks and newer than its newest edition, one per edition
    (the first source that has it), oldest first."""
    docs = Docs(config.docs_dir)
    have, removed = docs.edition_names(), docs.removed()
    newest = newest_edition(config)
    chosen: dict[str, Found] = {}
    for found in candidates:
        if found.edition not in have | removed and found.edition > newest:
            chosen.setdefault(found.edition, found)
    return [chosen[name] for name in sorted(chosen)]


def restore(config: Config, cache: Cache, candidates: Iterable[Found]) -> list[Restored]:
    """Put back what `missing` chooses and render each edition's pages from its record.

    The caller holds the workspace lock."""
    chosen = missing(config, candidates)
    docs = Docs(config.docs_dir)
    for found in chosen:
        target = docs.edition_folder(found.edition)
        if found.folder is not None:
            # The artifact's own files only: a link in it is not followed out of it.
            shutil.copytree(found.folder, target, dirs_exist_ok=True,
                            ignore=lambda folder, names: [
                                n for n in names if (Path(folder) / n).is_symlink()])
        atomic_write_bytes(docs.record_path(found.edition), found.record)
        log.info("restored edition %s from %s", found.edition, found.source)
    history = History.load(config.docs_dir)
    failed: dict[str, tuple[str, ...]] = {}
    for found in chosen:
        try:
            record = render_stage(config, cache, found.edition, history=history)
        except UsageError as err:
            log.warning("%s; its record is restored, its pages are not", err)
            continue
        except PagesFailed as err:  # the rest of its pages are written: go on
            log.warning("%s", err)
            failed[found.edition] = tuple(f.path for f in err.failed)
            record = err.record
        if record is not None:
            history = history.with_record(record)
    return [Restored(f.edition, f.source, failed.get(f.edition, ())) for f in chosen]
