"""Exceptions whose messages are written for the person running `digest`.

Library code raises these; only the CLI turns them into a red line and an exit code.
"""

from __future__ import annotations

from .text.urls import redact_text


class DigestError(Exception):
    """Base class: a problem the user can act on. ``str(err)`` is the user-facing message.

    The message may end up in a page, a record or the log, so URLs in it are shown without
    credentials, query strings or fragments.
    """

    exit_code = 1

    def __str__(self) -> str:
        return redact_text(super().__str__())


class ConfigError(DigestError):
    """config.toml is unreadable or invalid; carries one line per problem."""

    exit_code = 2

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{path}: {len(problems)} problem(s) in the configuration:\n{lines}")


class UsageError(DigestError):
    """The command line asks for something impossible (bad edition name, missing stage output)."""

    exit_code = 2


class ArxivError(DigestError):
    """The arXiv API could not be queried."""


class ServerUnavailableError(DigestError):
    """The LLM server did not answer, so nothing was sent or written."""


class ServerNotAnsweringError(ServerUnavailableError):
    """Nothing answers at the server's URL (as opposed to a server that answers wrongly)."""


class LlmRequestError(DigestError):
    """One completion failed; the edition reports it and goes on.

    ``str(err)`` is our summary (status, kind of failure, server), the only text published
    about it; `detail` is what the server said, redacted, for the local log and for code that
    reads a cause from it (a context refusal's numbers, a refused response_format)."""

    def __init__(self, message: str, *, status: int | None = None, detail: str = "",
                 overload: bool = False) -> None:
        self.status = status
        self.detail = detail
        # A sign the server has more than it can hold (429, 503, a connection closed without
        # a response, a stream cut), judged from the response, never from a message's words:
        # sent again once fewer are in flight.
        self.overload = overload
        super().__init__(message)


class TriageError(DigestError):
    """The triage could score no paper of the window; the edition was not made."""


class PdfTextError(DigestError):
    """A PDF could not be downloaded or its text extracted; the paper keeps its abstract."""


class SiteBuildError(DigestError):
    """MkDocs failed; the previously published site is left as it was."""


class LockedError(DigestError):
    """Another digest run holds the workspace lock."""


class InvalidPaperId(DigestError):
    """An id that is not an arXiv id: it would name files, so it is refused."""

    def __init__(self, arxiv_id: str) -> None:
        self.arxiv_id = arxiv_id
        super().__init__(f"{arxiv_id[:200]!r} is not an arXiv id (like 2401.01234v2 or "
                         "quant-ph/0201082v1); the paper was left out")


class UnsafeSiteError(SiteBuildError):
    """The built site holds live markup that came from untrusted text; it was not published."""
