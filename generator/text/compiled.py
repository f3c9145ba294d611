"""Compiled Jinja templates kept for the life of the process.

Jinja compiles a template to Python the first time an Environment loads it, and every build
makes new Environments (ours for the pages, MkDocs' for the theme), so a process that builds
more than once (`digest serve`, `ask --publish` after a build, a test suite) compiled the same
templates again each time: a third of a small build's CPU. A bytecode cache keeps the
compiled code by template and file; Jinja checks each template's source against the checksum
it was compiled from, so an edited template is compiled again.
"""

from __future__ import annotations

import threading
from typing import Any

import jinja2


class CompiledTemplates(jinja2.BytecodeCache):
    """An in-memory bytecode cache (for_environment: one per kind of Environment, whose
    options shape the code)."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with self._lock:
            code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)  # reset by Jinja if the checksum differs

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = bucket.bytecode_to_string()
        with self._lock:
            self._code[bucket.key] = code

    def clear(self) -> None:
        with self._lock:
            self._code.clear()


_CACHES: dict[tuple[object, ...], CompiledTemplates] = {}
_CACHES_LOCK = threading.Lock()


def _passing(functions: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """What each filter or test is passed (the context, the eval context, the environment,
    or nothing): Jinja compiles that into the call."""
    # Set by jinja2.pass_context and its kin, read by Jinja's compiler.
    return tuple(sorted((name, str(getattr(f, "jinja_pass_arg", ""))) for name, f in
                        functions.items()))


def for_environment(env: jinja2.Environment) -> CompiledTemplates:
    """The cache for Environments whose options make the same code of the same source (the
    syntax, whitespace handling, extensions, finalize, autoescape, how each filter and test is
    called): ours and MkDocs' theme's never share one. Taken once its filters are in place."""
    signature = (env.block_start_string, env.block_end_string, env.variable_start_string,
                 env.variable_end_string, env.comment_start_string, env.comment_end_string,
                 env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks,
                 env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline,
                 tuple(sorted(env.extensions)), env.optimized, env.finalize is not None,
                 env.autoescape if isinstance(env.autoescape, bool) else "callable",
                 env.is_async, _passing(env.filters), _passing(env.tests))
    with _CACHES_LOCK:
        return _CACHES.setdefault(signature, CompiledTemplates())
