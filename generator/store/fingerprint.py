"""One way to tell that what a step reads has not changed: a digest of its parts and files.

Three steps skip work when nothing they read changed: an edition's render
(`pipeline.render.render_inputs`), the site build (`publish.freshness.fingerprint`) and the
archive's index (`ask.index`). Each names what it reads; a file counts by its content's
SHA-256. A caller that has read a file already passes its digest (`known`): the run's
history reads each edition's record once and keeps the digest of the bytes it read, so no
record is opened twice in a build.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path


def file_digest(path: Path) -> bytes:
    """The SHA-256 of a file's content (FileNotFoundError where there is none)."""
    return hashlib.sha256(path.read_bytes()).digest()


def bytes_digest(data: bytes) -> bytes:
    """The same digest of content held in memory (a record just written, a file just read)."""
    return hashlib.sha256(data).digest()


class Fingerprint:
    """A running digest of named parts and files, in the order they are added."""

    def __init__(self, *parts: str) -> None:
        self._digest = hashlib.sha256()
        self.add(*parts)

    def add(self, *parts: str) -> None:
        for part in parts:
            self._digest.update(part.encode() + b"\0")

    def add_file(self, path: Path, name: str | None = None,
                 known: Mapping[Path, bytes] | None = None) -> None:
        """The file under `name` (its path unless given): its digest from `known` where that
        has it, else from the file; a missing file counts as missing."""
        self.add(str(path) if name is None else name)
        digest = known.get(path) if known else None
        if digest is None:
            try:
                digest = file_digest(path)
            except FileNotFoundError:
                digest = b"missing"
        self._digest.update(digest)

    def hexdigest(self) -> str:
        return self._digest.hexdigest()
