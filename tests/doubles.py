"""In-process doubles for the `Services` seam: what the stage tests run the pipeline against.

They satisfy the protocols of `generator.ports`, as llm's mock model and build's injected
runner do for theirs: no socket, no thread of a server, so a stage test costs milliseconds. The
mock model answers as the SGLang-shaped test server does (the same responder functions, fed the
request as the server would see its body), and records every request it was asked.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.completions import Completion, PromptRequest, Usage
from generator.errors import LlmRequestError, PdfTextError
from generator.papers import Paper, Window
from generator.pipeline.services import Services
from generator.ports import Fleet, ServedModel, StreamEvents
from generator.store.cache import Cache
from tests.servers.sglang import Answer, Fault, default_responder

Responder = Callable[[dict[str, Any]], Answer | Fault]


@dataclass
class ScriptedArxiv:
    """arXiv's search over a fixed list of papers, newest first; records each query."""

    papers: list[Paper]
    queries: list[str] = field(default_factory=list)
    # The latest version of papers looked up by id, where it is not among `papers`.
    latest: dict[str, Paper] = field(default_factory=dict)
    lookups: list[tuple[str, ...]] = field(default_factory=list)  # each request's ids

    def search(self, query: str, max_papers: int, max_abstract_chars: int) -> list[Paper]:
        self.queries.append(query)
        return self.papers[:max_papers]

    def search_window(self, query: str, limit: int, max_abstract_chars: int,
                      page_size: int = 2000) -> Window:
        self.queries.append(query)
        return Window(tuple(self.papers[:limit]), len(self.papers), len(self.papers) > limit)

    def lookup(self, base_ids: Sequence[str], max_abstract_chars: int) -> list[Paper]:
        found = []
        for start in range(0, len(base_ids), 100):  # one request per 100 ids, as arXiv's
            batch = tuple(base_ids[start:start + 100])
            self.lookups.append(batch)
            known = {p.base_id: p for p in self.papers} | self.latest
            found += [known[i] for i in batch if i in known]
        return found


@dataclass
class PdfShelf:
    """PDFs by URL: bytes, or a reason the download fails; records each URL asked for."""

    pdfs: dict[str, bytes | str]
    asked: list[str] = field(default_factory=list)

    def download(self, url: str) -> bytes:
        self.asked.append(url)
        found = self.pdfs.get(url, "HTTP 404 from the test shelf")
        if isinstance(found, str):
            raise PdfTextError(found)
        return found


class MockModel:
    """A chat model answering in-process, as the SGLang-shaped server would."""

    model = "deepseek-ai/DeepSeek-V4-Flash"
    base_url = "http://mock.invalid/v1"

    def __init__(self, responder: Responder = default_responder) -> None:
        self.responder = responder
        self.asked: list[PromptRequest] = []
        self._lock = threading.Lock()

    def check_ready(self) -> None:
        """Always ready."""

    def complete(self, request: PromptRequest, events: StreamEvents | None = None, *,
                 retry: bool = True) -> Completion:
        with self._lock:
            self.asked.append(request)
        body = {"model": self.model, "max_tokens": request.max_tokens,
                "messages": [{"role": m.role, "content": m.content} for m in request.messages],
                **json.loads(request.extra_body_json)}
        answer = self.responder(body)
        if isinstance(answer, Fault):
            raise LlmRequestError(f"HTTP {answer.status} from {self.base_url}: {answer.message}",
                                  status=answer.status, detail=answer.message,
                                  overload=answer.status in (429, 502, 503, 504))
        if events is not None:
            events.first_token()
        prompt = sum(len(m.content) for m in request.messages) // 4
        return Completion(name=request.name, model=self.model, content=answer.content,
                          reasoning=answer.reasoning, finish_reason=answer.finish_reason,
                          usage=Usage(prompt, len(answer.content) // 4, None, None),
                          latency_s=0.01, ttft_s=0.005)

    def names(self) -> list[str]:
        return [r.name for r in self.asked]


class PlainServer:
    """A server with none of SGLang's extras: no limits, no tokenizer, no context length."""

    def models(self) -> list[ServedModel]:
        return [ServedModel(MockModel.model, None)]

    def server_info(self) -> dict[str, Any] | None:
        return None

    def fleet(self) -> Fleet | None:
        return None

    def load(self) -> int | None:
        return None

    tokenizer: str | None = None

    def tokenize(self, model: str, texts: list[str]) -> list[int] | None:
        return None

    def context_length(self, model: str, info: dict[str, Any] | None
                       ) -> tuple[int | None, str]:
        return None, ""

    def slots(self) -> int | None:
        return None

    def wait_ready(self, timeout: float,
                   on_progress: Callable[[float, str], None] | None = None) -> bool:
        return True


def services(folder: Path, papers: list[Paper], pdfs: dict[str, bytes | str],
             model: MockModel | None = None) -> Services:
    """Services of doubles over a cache in `folder`."""
    return Services(arxiv=ScriptedArxiv(papers), downloader=PdfShelf(pdfs),
                    chat=model or MockModel(), probe=PlainServer(), cache=Cache(folder))
