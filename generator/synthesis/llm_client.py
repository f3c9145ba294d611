"""A small client for an OpenAI-compatible chat server (SGLang first, any other second).

It hides where each server puts reasoning text and token counts, and turns transport and HTTP
errors into messages that name the server and say what to do.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a request is made: `import openai` alone takes about a second
    import openai

from ..completions import Completion, PromptRequest, Usage
from ..deadline import STALLED, Watch, Watchdog
from ..errors import LlmRequestError, ServerNotAnsweringError, ServerUnavailableError
from ..kinds import CONTINUE
from ..ports import StreamEvents
from ..text.safe_text import clean
from ..text.urls import redact_secrets, redact_url
from .answer_parts import split_reasoning, usage_of
from .cuts import no_answer
from .planning import context_from_error
from .server_errors import (
    OVERLOAD_STATUSES,
    body_text,
    connection_cause,
    context_full,
    describe,
    detail,
    dropped,
    transport_words,
)

log = logging.getLogger(__name__)

MODELS_DEADLINE_S = 15.0  # GET /models, its whole answer


class ChatClient:
    """Chat completions against one model on one server."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str,
        *,
        timeout: float = 600.0,
        max_retries: int = 2,
        stream: bool = True,
        stall: float = 120.0,
        thinking_off: Mapping[str, Any] | None = None,
    ) -> None:
        self.base_url = redact_url(base_url)  # for messages; the client alone has the real one
        self.model = model
        self.stream = stream
        self.max_retries = max_retries
        self._url, self._api_key = base_url, api_key
        self._timeout, self._retries, self._stall = timeout, max_retries, stall
        self._watchdog = Watchdog()  # bounds each streamed answer as a whole
        self._logged: set[str] = set()  # server messages already logged (once each)
        # Sent with every request that does not think (its own body wins): no server or
        # gateway default decides it. Dropped for good if the server refuses it (a hosted API
        # that knows no such field).
        self.thinking_off: dict[str, Any] = dict(thinking_off or {})

    @cached_property
    def _client(self) -> openai.OpenAI:
        """The openai client, made on first use: a rebuild that sends nothing never imports it."""
        import openai

        return openai.OpenAI(base_url=self._url, api_key=self._api_key, timeout=self._timeout,
                             max_retries=self._retries)

    @cached_property
    def _client_once(self) -> openai.OpenAI:
        """The same client without its own retries (`complete(retry=False)`)."""
        return self._client.with_options(max_retries=0)

    def served_models(self) -> list[str]:
        """The ids of the models the server serves; ServerUnavailableError if it does not answer."""
        import httpx2
        import openai

        client = self._client.with_options(timeout=MODELS_DEADLINE_S, max_retries=1)
        watch: Watch | None = None
        try:
            # Read whole within the deadline: a server that trickles its answer keeps each
            # read short, never the whole (deadline.py).
            with client.models.with_streaming_response.list() as response:
                watch = self._watchdog.watch(MODELS_DEADLINE_S, response=response.http_response)
                try:
                    page = response.parse()
                finally:
                    watch.release()
        except openai.APIConnectionError as err:
            raise ServerNotAnsweringError(
                f"the LLM server at {self.base_url} did not answer ({connection_cause(err)})."
            ) from err
        except httpx2.HTTPError as err:  # the answer's body, cut at the deadline or dropped
            said = (f"no whole answer within {MODELS_DEADLINE_S:g} s" if watch and watch.fired
                    else type(err).__name__)
            raise ServerNotAnsweringError(
                f"the LLM server at {self.base_url} did not answer GET /models ({said})."
            ) from err
        except openai.APIStatusError as err:
            said = self._said(err)
            raise ServerUnavailableError(
                f"the LLM server at {self.base_url} answered HTTP {err.status_code} to "
                f"GET /models: {describe(err.status_code, said)}"
            ) from err
        return [m.id for m in page.data]

    def check_ready(self) -> None:
        """Fail before any work if the server is down or does not serve the configured model."""
        models = self.served_models()
        if models and self.model not in models:
            raise ServerUnavailableError(
                f"the LLM server at {self.base_url} does not serve the model {self.model!r}; "
                f"it serves: {', '.join(models)}. Set [llm] model in config.toml."
            )

    def complete(self, request: PromptRequest, events: StreamEvents | None = None, *,
                 retry: bool = True) -> Completion:
        """Run one request; LlmRequestError if the server fails or returns no answer.

        Streamed (the default), so that the time to first token is known, progress can be shown
        and a caller can release requests that wait for this one's prefill (`events`). With
        `retry` false, a sign of overload is raised at once, not retried at the same width:
        the caller narrows first (a one-slot server cuts every retry sent beside another).
        """
        retries = self.max_retries if retry else 0
        for attempt in range(retries + 1):
            try:
                return self._complete_once(request, events or StreamEvents(), retry)
            except IncompleteAnswerError as err:
                if attempt == retries:
                    raise
                log.warning("%s; asking again (%d of %d)", err, attempt + 1, retries)
            except LlmRequestError as err:
                if not self._switch_refused(request, err):
                    raise
                return self.complete(request, events, retry=retry)  # once: the switch is gone
        raise AssertionError("unreachable")

    def _switch_refused(self, request: PromptRequest, err: LlmRequestError) -> bool:
        """Whether `err` is the server refusing the thinking-off switch we added (a 400 that
        names one of its fields); it is then dropped for every later request."""
        if request.thinking or not self.thinking_off or err.status != 400:
            return False
        if not any(key in (err.detail or "") for key in self.thinking_off):
            return False
        log.warning("%s refuses %s; requests go without a thinking switch, so the server "
                    "decides (set [llm] no_thinking_extra_body to how it turns thinking off)",
                    self.base_url, ", ".join(sorted(self.thinking_off)))
        self.thinking_off = {}
        return True

    def _complete_once(self, request: PromptRequest, events: StreamEvents,
                       retry: bool) -> Completion:
        import openai

        started, opened = time.perf_counter(), time.monotonic()
        client = self._client if retry else self._client_once
        try:
            if self.stream:
                answer = self._streamed(client, request, started, opened, events)
                if not answer.begun:
                    # No answer begun in a streamed 200: llama-cpp-python refuses a prompt over
                    # its context so (no event, then the connection closes), and LiteLLM passes
                    # that on as a lone `stop`. Unstreamed, the same request gets the server's
                    # reason (a 400 naming the context), or the answer. (A stream cut after
                    # its role chunk is a cut, and is judged as one.)
                    log.info("an empty stream from %s for %s; asking once without streaming",
                             self.base_url, request.name)
                    answer = self._whole(client, request)
            else:
                answer = self._whole(client, request)
        except openai.APIStatusError as err:
            said = self._said(err)
            raise LlmRequestError(
                f"HTTP {err.status_code} from {self.base_url}: {describe(err.status_code, said)}",
                status=err.status_code, detail=said,
                overload=err.status_code in OVERLOAD_STATUSES) from err
        except openai.APIConnectionError as err:
            raise LlmRequestError(f"no answer from {self.base_url} ({connection_cause(err)})",
                                  overload=dropped(err)) from err
        except openai.APIError as err:
            # An error event inside a streamed 200 (llama-cpp-python refuses a too-long prompt
            # this way): read as the refusal it is, a context one included, not a cut stream.
            said = detail(err.message)
            log.warning("the server at %s refused a request in its stream: %s", self.base_url,
                        said[:600])
            if context_full(said):
                raise LlmRequestError(
                    f"the server at {self.base_url} ran out of context while answering (the "
                    "requests in flight share its cache, or the answer outgrew one slot's "
                    "context: fewer at a time, a larger context, or a smaller answer budget)",
                    status=500, detail=said, overload=True) from err
            status = 400 if context_from_error(said) else 500
            raise LlmRequestError(
                f"the server at {self.base_url} refused the request in its stream: "
                f"{describe(status, said)}", status=status, detail=said) from err
        latency = time.perf_counter() - started
        if not answer.finish_reason:
            # A stream that just stops (no finish reason, no [DONE]) is a cut answer, not a
            # short one: it must never be cached as if it were whole.
            raise IncompleteAnswerError(
                f"the answer from {self.base_url} stopped after {len(answer.content):,} "
                "characters without a finish reason (the connection ended early)",
                overload=True)
        # Model output is untrusted text: no control or bidi-override characters go further.
        # A model may repeat a key it saw in a prompt or an error: answers are kept and shown.
        content, reasoning = split_reasoning(redact_secrets(clean(answer.content)),
                                             redact_secrets(clean(answer.reasoning)))
        # A continuation may have nothing to add (the answer it continues was whole where it
        # stopped): an empty `stop` without reasoning is its answer, kept and cached like any
        # other, never a failure asked again on every run.
        nothing_more = (request.kind == CONTINUE and answer.finish_reason == "stop"
                        and not reasoning)
        if not content and not nothing_more:
            # Never an answer, whatever the server called its end: reasoning and a `stop` is a
            # stream cut before its answer (sent again, fewer at a time); a spent budget fails.
            said, cut = no_answer(self.base_url, request, reasoning, answer.finish_reason)
            if cut:
                raise IncompleteAnswerError(said, overload=True)
            raise LlmRequestError(said)
        return Completion(
            name=request.name,
            model=answer.model or self.model,
            content=content,
            reasoning=reasoning,
            finish_reason=answer.finish_reason,
            usage=answer.usage,
            latency_s=round(latency, 3),
            ttft_s=None if answer.ttft is None else round(answer.ttft, 3),
            reasoning_leaked=bool(reasoning) and not answer.reasoning,
        )

    def _said(self, err: openai.APIStatusError) -> str:
        """What the server said, for the log (once per distinct text) and the error's detail."""
        said = detail(body_text(err.body, err.message))
        if said not in self._logged:
            self._logged.add(said)
            log.warning("%s answered HTTP %s: %s", self.base_url, err.status_code, said[:600])
        return said

    def _create(self, client: openai.OpenAI, request: PromptRequest, stream: bool) -> Any:
        """POST /chat/completions through the openai client (its retries, errors and stream
        parsing), with the body as we built it: `chat.completions.create` would walk every
        message through its type transform first, which costs more CPU than the request's one
        JSON encoding and changes nothing for plain dicts of strings."""
        import openai
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            **json.loads(request.extra_body_json),  # thinking switches, response_format
            # A request that does not think says so last: a body it inherited (a continuation
            # of a thinking answer, with a server's own top-level switch) cannot turn it on.
            **({} if request.thinking else self.thinking_off),
        }
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        return client.post("/chat/completions", cast_to=ChatCompletion, body=body,
                           stream=stream, stream_cls=openai.Stream[ChatCompletionChunk])

    def _whole(self, client: openai.OpenAI, request: PromptRequest) -> _Answer:
        response = self._create(client, request, stream=False)
        if not response.choices:
            raise LlmRequestError(f"the server at {self.base_url} returned no choices")
        choice = response.choices[0]
        extra = choice.message.model_extra or {}
        return _Answer(
            content=choice.message.content or "",
            reasoning=str(extra.get("reasoning_content") or extra.get("reasoning") or ""),
            finish_reason=choice.finish_reason or "",
            usage=usage_of(response.usage),
            model=response.model,
            ttft=None,
        )

    def _streamed(self, client: openai.OpenAI, request: PromptRequest, started: float,
                  opened: float, events: StreamEvents) -> _Answer:
        import openai

        stream = self._create(client, request, stream=True)
        content: list[str] = []
        reasoning: list[str] = []
        finish, model, usage, ttft, pieces, begun, cut = "", "", Usage(), None, 0, False, False
        watch = self._watchdog.watch(self._timeout, stall_s=self._stall, started=opened,
                                     response=stream.response)
        try:
            for chunk in stream:
                model = chunk.model or model
                if chunk.usage is not None:
                    usage = usage_of(chunk.usage)
                watch.check(time.monotonic())
                if watch.fired:
                    cut = True
                    break
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta
                extra = delta.model_extra or {}
                text = delta.content or ""
                thought = str(extra.get("reasoning_content") or extra.get("reasoning") or "")
                begun = begun or bool(delta.role or text or thought)
                if (text or thought) and ttft is None:
                    ttft = time.perf_counter() - started
                    events.first_token()
                if text or thought:
                    pieces += 1
                    watch.token()
                    events.progress(pieces)
                content.append(text)
                reasoning.append(thought)
                finish = choice.finish_reason or finish
        except Exception as err:  # the transport's own errors when a stream breaks off
            if watch.fired:
                raise self._cut(watch, content, reasoning) from err
            if isinstance(err, openai.APIError):
                raise
            log.info("a stream from %s broke off: %r", self.base_url, err)
            raise LlmRequestError(f"the answer from {self.base_url} broke off midway "
                                  f"({transport_words(err)})", overload=True) from err
        finally:
            watch.release()  # before the connection can go back to the pool
            stream.close()
        if cut or (watch.fired and not finish):  # cut, not one that ended as it fired
            raise self._cut(watch, content, reasoning)
        return _Answer("".join(content), "".join(reasoning), finish, usage, model, ttft,
                       begun)

    def _cut(self, watch: Watch, content: list[str], reasoning: list[str]) -> LlmRequestError:
        """The error for a stream the watchdog cut: a stall is a sign of overload (a server
        that stopped generating for this request), a deadline is not."""
        got = sum(map(len, content)) + sum(map(len, reasoning))
        if watch.fired == STALLED:
            return LlmRequestError(
                f"the answer from {self.base_url} stalled: no new token for {watch.stall_s:g} s "
                f"([llm] stall_seconds); it was cut after {got:,} characters", overload=True)
        return LlmRequestError(
            f"the answer from {self.base_url} was not complete within [llm] timeout_seconds "
            f"({self._timeout:g} s); it was cut after {got:,} characters")


class IncompleteAnswerError(LlmRequestError):
    """The server ended the answer without saying why: it is asked again, never cached."""


@dataclass(frozen=True)
class _Answer:
    content: str
    reasoning: str
    finish_reason: str
    usage: Usage
    model: str
    ttft: float | None
    begun: bool = True  # a stream that began an answer (a role or text delta), not empty
