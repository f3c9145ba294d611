"""What the stages need of the outside world, as protocols: the seam `Services` is made of.

The real clients (`ArxivSource`, `PdfDownloader`, `ChatClient`, `ServerProbe`) satisfy them, and
so do the in-process doubles the stage tests build (as pypa/build injects its runner and llm
its mock model): a stage never knows which it was given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .completions import Completion, PromptRequest
from .papers import Paper, Window


@dataclass(frozen=True)
class ServedModel:
    """A model a server says it serves, with its context length where it states one."""

    id: str
    max_model_len: int | None


@dataclass(frozen=True)
class RouterWorker:
    """One worker behind a router: its URL as the router lists it, whether the router finds it
    healthy, its own /server_info as read from here (None: not read, because it is unhealthy,
    cannot be reached from this machine, or is past the few that are read), the limits the
    router lists for it (`labels`: smg's; None where it lists none) and the requests the router
    has in flight on it (`load`, where it counts them)."""

    url: str
    healthy: bool
    info: Mapping[str, Any] | None = None
    labels: Mapping[str, Any] | None = None
    load: int | None = None

    @property
    def settings(self) -> Mapping[str, Any] | None:
        """What is known of its settings: its own /server_info, with the limits the router
        lists for it where it lists them; None where neither is known."""
        if self.info is None and self.labels is None:
            return None
        return {**(self.info or {}), **(self.labels or {})}


@dataclass(frozen=True)
class Fleet:
    """A router (smg, or the older sglang-router) and the workers it lists at /workers."""

    workers: tuple[RouterWorker, ...]
    kind: str = ""  # router.ROUTERS: "smg", "sglang-router"; "" where it did not show which
    version: str = ""  # as the router says it ("smg-1.13.0"); "" where it does not

    @property
    def healthy(self) -> tuple[RouterWorker, ...]:
        return tuple(w for w in self.workers if w.healthy)

    @property
    def unseen(self) -> tuple[RouterWorker, ...]:
        """Healthy workers whose limits are known neither from the router nor from here."""
        return tuple(w for w in self.healthy if w.settings is None)


class StreamEvents:
    """Callbacks from a streamed completion; the defaults do nothing."""

    def first_token(self) -> None:
        """The prompt's prefill is done (its prefix is now in the server's cache)."""

    def progress(self, pieces: int) -> None:
        """`pieces` chunks of text have arrived so far."""


class PaperSearch(Protocol):
    """arXiv's search: the newest papers of a query, or a whole window of them."""

    def search(self, query: str, max_papers: int, max_abstract_chars: int) -> list[Paper]: ...

    def search_window(self, query: str, limit: int, max_abstract_chars: int,
                      page_size: int = ...) -> Window: ...

    def lookup(self, base_ids: Sequence[str], max_abstract_chars: int) -> list[Paper]:
        """The latest version of each paper (ids without version), 100 ids a request."""
        ...


class PdfSource(Protocol):
    """Downloads one PDF (spaced as arXiv asks); PdfTextError when it cannot."""

    def download(self, url: str) -> bytes: ...


class ChatModel(Protocol):
    """One model on one OpenAI-compatible server."""

    model: str
    base_url: str  # as it may be shown: no credentials

    def complete(self, request: PromptRequest, events: StreamEvents | None = None, *,
                 retry: bool = True) -> Completion: ...

    def check_ready(self) -> None: ...


class ServerFacts(Protocol):
    """What a server says about itself beyond the chat API (SGLang's extras, where it has them)."""

    def models(self) -> list[ServedModel]: ...

    def server_info(self) -> dict[str, Any] | None:
        """Its limits: SGLang's /server_info, or behind a router the workers' together
        (synthesis/router.py); None where none are stated."""
        ...

    def fleet(self) -> Fleet | None:
        """The workers behind a router; None where the server is no router."""
        ...

    def load(self) -> int | None:
        """Requests in flight on the server (behind a router: on its whole fleet), where it
        reports them; None where it does not."""
        ...

    # The tokenizer endpoint family that answered (server.TOKENIZERS), once one has.
    tokenizer: str | None

    def tokenize(self, model: str, texts: list[str]) -> list[int] | None: ...

    def context_length(self, model: str, info: dict[str, Any] | None
                       ) -> tuple[int | None, str]: ...

    def slots(self) -> int | None: ...

    def wait_ready(self, timeout: float,
                   on_progress: Callable[[float, str], None] | None = None) -> bool: ...
