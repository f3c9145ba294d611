"""Reading a file the user (or a checkout) put in the workspace: as a regular file, bounded.

`Path.read_bytes()` trusts the path: a FIFO blocks it for ever, `/dev/zero` is read until
memory runs out, and `st_size` (0 for both) says nothing. So every file the digest reads from
the user (config.toml, the library, marks and send records, edition records, templates) is
opened without blocking, checked by `fstat` on the open descriptor (what is read is what was
checked), refused unless it is a regular file, and read to at most its bound plus one byte.
A link that leads out of the workspace is refused by name: the workspace is what the user
handed the digest, and a checkout's symlink must not make it read (and publish) `~/.ssh`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import UsageError


class UserFileError(UsageError):
    """A file that is not one the digest reads (a FIFO, a device, a folder, a link out of the
    workspace, or too large): the message names it and why."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, every link followed, lies within `root` (itself resolved)."""
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):  # elsewhere, or a loop of links
        return False
    return True


def check_link(path: Path, root: Path | None, shown: str) -> None:
    """Refuse `path` where it sits in `root` but a link takes it out (a path the user wrote
    outside the workspace is theirs to name)."""
    if root is None:
        return
    lexical = Path(os.path.abspath(path))
    if not inside_lexically(lexical, root):
        return
    if not inside(path, root):
        raise UserFileError(f"{shown} is a link to {path.resolve()}, outside the workspace "
                            f"{root}: the digest reads only files in the workspace; copy the "
                            "file in instead")


def inside_lexically(path: Path, root: Path) -> bool:
    try:
        path.relative_to(Path(os.path.abspath(root)))
    except ValueError:
        return False
    return True


def read_user_file(path: Path, max_bytes: int, *, root: Path | None = None,
                   shown: str = "") -> bytes:
    """The bytes of the regular file at `path`, at most `max_bytes` of them; UserFileError
    naming it (`shown`, else the path) where it is anything else, too large, unreadable or a
    link out of `root`. FileNotFoundError where it does not exist: the caller says what that
    means."""
    shown = shown or str(path)
    check_link(path, root, shown)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) |
                     getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise UserFileError(f"{shown} is a folder, not a file") from None
    except OSError as err:
        raise UserFileError(f"{shown} cannot be read ({err.strerror or err})") from err
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserFileError(f"{shown} is {_kind(mode)}, not a file the digest reads")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise UserFileError(f"{shown} cannot be read ({err.strerror or err})") from err
    finally:
        os.close(fd)
    if size > max_bytes:
        limit = f"{max_bytes // 2**20} MB" if max_bytes >= 2**20 else f"{max_bytes} bytes"
        raise UserFileError(f"{shown} is larger than {limit}")
    return b"".join(chunks)
