"""The on-disk cache that makes runs resumable: PDFs, extracted text, completions, stage records.

Every write goes to a temporary file in the same folder and is renamed into place, so a killed
run never leaves a half-written entry that a later run would read back.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..completions import Completion, PromptRequest
from ..errors import LockedError
from ..papers import FetchResult, FullText, paper_slug
from .codec import CodecError, from_data, to_data
from .jsonfile import JSONFileError, load_json

log = logging.getLogger(__name__)

# Bump when the meaning of a cached completion changes, so old entries are not reused.
_COMPLETION_FORMAT = 1


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()  # read once: os.umask can only be read by setting it


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True,
                       private: bool = False) -> None:
    """Write `data` to `path` so that readers see either the old file or the whole new one.

    `durable` syncs the file to disk before the rename; a caller that writes many files in a
    row may skip it and sync once at the end (`Cache.sync`): a crash in between can then leave
    a file empty, which a reader treats as missing, never as a wrong answer. `private` keeps
    the file to its owner (0600) and syncs the folder too, so that the rename itself survives
    a power loss (a record of what was done, such as what mail went out)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file 0600: give it the mode a plain open() would (0666 less the
        # umask), so that a web server running as another user can serve the pages.
        os.fchmod(fd, 0o600 if private else 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable or private:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
        if private:
            folder = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError) and err.filename is None:  # a failed write names no file
            raise OSError(err.errno, err.strerror, str(path)) from err
        raise


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def write_json(path: Path, data: Any, *, durable: bool = True) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                      durable=durable)


def read_json(path: Path) -> Any | None:
    """The parsed file, or None if it is missing or unreadable (then it is simply recomputed)."""
    try:  # the one reader of JSON files: bounded depth and size, finite numbers
        return load_json(path, missing=None)
    except JSONFileError as err:
        log.warning("ignoring unreadable cache entry: %s", err)
        return None


@functools.lru_cache(maxsize=2048)  # a build asks for each request's key several times
def completion_key(model: str, request: PromptRequest) -> str:
    """A digest of everything that determines the answer: model, messages and parameters."""
    if not request.messages:
        # Requests read back from a synthesis record carry no messages (the bundle is not
        # stored twice): a key made from one would silently miss the cache.
        raise ValueError(f"{request.name} was read from a record and has no messages to key")
    payload = {"format": _COMPLETION_FORMAT, "model": model, **request.payload}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


class Cache:
    """Files under one workspace's cache folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # Each edition's fetch record, read once while its file stays the same (a run's stages
        # all ask for it): by the file's size and time of change.
        self._fetched: dict[str, tuple[tuple[int, int], FetchResult]] = {}

    # PDFs and their text are keyed by arXiv id with version: a new version is a new file.
    def pdf_path(self, arxiv_id: str) -> Path:
        return self.root / "pdf" / f"{paper_slug(arxiv_id)}.pdf"

    def get_pdf(self, arxiv_id: str) -> bytes | None:
        try:
            return self.pdf_path(arxiv_id).read_bytes()
        except FileNotFoundError:
            return None

    def put_pdf(self, arxiv_id: str, data: bytes) -> None:
        atomic_write_bytes(self.pdf_path(arxiv_id), data)

    def _text_path(self, arxiv_id: str, max_chars: int) -> Path:
        return self.root / "text" / f"{paper_slug(arxiv_id)}.{max_chars}.json"

    def get_text(self, arxiv_id: str, max_chars: int) -> FullText | None:
        data = read_json(self._text_path(arxiv_id, max_chars))
        try:
            return from_data(FullText, data) if isinstance(data, dict) else None
        except CodecError as err:
            log.warning("ignoring a malformed cached text of %s: %s", arxiv_id, err)
            return None

    def put_text(self, arxiv_id: str, max_chars: int, text: FullText) -> None:
        write_json(self._text_path(arxiv_id, max_chars), to_data(text))

    def _completion_path(self, key: str) -> Path:
        return self.root / "completions" / key[:2] / f"{key}.json"

    def get_completion(self, key: str) -> Completion | None:
        data = read_json(self._completion_path(key))
        if not isinstance(data, dict):
            return None
        try:
            completion = replace(from_data(Completion, data), from_cache=True)
        except CodecError as err:
            log.warning("ignoring malformed cached completion %s: %s", key, err)
            return None
        # An answer with no text (kept by a version that took a cut for one) is asked again.
        return completion if completion.content.strip() else None

    def put_completion(self, key: str, completion: Completion) -> None:
        if not completion.ok:
            raise ValueError("failed completions are never cached: a rerun must retry them")
        # One sync for a whole batch (`sync`), not one per answer.
        write_json(self._completion_path(key), to_data(completion), durable=False)

    def sync(self) -> None:
        """Flush what the batch wrote to disk (one call, where each answer once cost one)."""
        os.sync()

    # Stage records: what `fetch` found for an edition, so later stages and reruns reuse it.
    def _fetch_path(self, edition: str) -> Path:
        return self.root / "editions" / edition / "fetch.json"

    def get_fetch(self, edition: str) -> FetchResult | None:
        path = self._fetch_path(edition)
        try:
            stat = path.stat()
        except OSError:
            return None
        stamp = (stat.st_size, stat.st_mtime_ns)
        known = self._fetched.get(edition)
        if known and known[0] == stamp:
            return known[1]
        data = read_json(path)
        if not isinstance(data, dict):
            return None
        try:
            result = from_data(FetchResult, data)
        except CodecError as err:
            log.warning("ignoring a malformed fetch record of %s: %s", edition, err)
            return None
        self._fetched[edition] = (stamp, result)
        return result

    def put_fetch(self, edition: str, result: FetchResult) -> None:
        path = self._fetch_path(edition)
        write_json(path, to_data(result))
        stat = path.stat()
        self._fetched[edition] = ((stat.st_size, stat.st_mtime_ns), result)

    def _removed_path(self, edition: str) -> Path:
        return self.root / "editions" / edition / "removed"

    def mark_removed(self, edition: str, removed: bool = True) -> None:
        """`digest remove` keeps the cache but `render --all` must not bring the edition back."""
        path = self._removed_path(edition)
        if removed:
            atomic_write_text(path, "removed with `digest remove`; `digest build` brings it back\n")
        else:
            path.unlink(missing_ok=True)

    def is_removed(self, edition: str) -> bool:
        return self._removed_path(edition).is_file()

    def stage_records(self, edition: str) -> list[Path]:
        """What the fetch and synthesis stages recorded for an edition (what a render reads)."""
        return [self._fetch_path(edition), self.plan_path(edition), self.synthesis_path(edition)]

    def rendered_path(self, edition: str) -> Path:
        """The fingerprint of what the edition's last render read (see pipeline.render.render_inputs)."""
        return self.root / "editions" / edition / "rendered.txt"

    @property
    def servers_path(self) -> Path:
        """What each LLM server was found to do (synthesis/capabilities.py)."""
        return self.root / "servers.json"

    def plan_path(self, edition: str) -> Path:
        return self.root / "editions" / edition / "plan.json"

    def editions_with(self, record: str) -> set[str]:
        """The editions that have `record` ("fetch", "synthesis" or "plan") in the cache."""
        return {p.parent.name for p in (self.root / "editions").glob(f"*/{record}.json")}

    @property
    def library_path(self) -> Path:
        """The titles and abstracts of the reader's library papers, as arXiv gave them
        (pipeline/library.py): each id is asked for once."""
        return self.root / "library-lookup.json"

    @property
    def rate_limit_path(self) -> Path:
        """The time of the last request to each rate-limited host (see RateLimiter)."""
        return self.root / "arxiv-last-request.json"

    def synthesis_path(self, edition: str) -> Path:
        return self.root / "editions" / edition / "synthesis.json"

    @contextlib.contextmanager
    def lock(self, *, shared: bool = False) -> Iterator[None]:
        """Hold the workspace lock for a run; a second run at once is refused, not interleaved.
        `shared`: a run that only reads the archive and the cache's finished work (`digest
        ask`; its cache entries are written atomically), held beside others of its kind and
        never beside a run that writes."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / "digest.lock"
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle.fileno(),
                            (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except OSError as err:
                if err.errno in (errno.EAGAIN, errno.EACCES):
                    raise LockedError(
                        f"another digest run is using this workspace (lock: {path}); "
                        "wait for it to finish and run again"
                    ) from err
                raise
            try:
                if not shared:  # the one holder: its process id, for whoever wonders
                    handle.seek(0)
                    handle.truncate()
                    handle.write(f"{os.getpid()}\n")
                    handle.flush()
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    @contextlib.contextmanager
    def questions_lock(self) -> Iterator[None]:
        """Held (waited for, not refused) while a question is published: questions answered
        side by side write the list of questions and the feed one after another."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "questions.lock", "a+") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
