"""A small client for an OpenAI-compatible chat server (SGLang first, any other second).

It hides where each server puts reasoning text and token counts, and turns transport and HTTP
errors into messages that name the server and say what to do.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

import openai
from openai import OpenAI

from .errors import LlmRequestError, ServerUnavailableError
from .models import Completion, PromptRequest, Usage
from .server import sglang_command

log = logging.getLogger(__name__)

_THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def split_reasoning(content: str, reasoning: str) -> tuple[str, str]:
    """Separate a `<think>` block that leaked into the answer; return (answer, reasoning)."""
    leaked = _THINK_RE.findall(content)
    if leaked:
        content = _THINK_RE.sub("", content)
        reasoning = reasoning or "\n\n".join(part.strip() for part in leaked)
    elif "</think>" in content:
        # Some templates open the think block in the prompt, so only the closing tag comes back.
        head, _, content = content.partition("</think>")
        reasoning = reasoning or head.strip()
    return content.strip(), reasoning.strip()


def error_message(err: openai.APIStatusError) -> str:
    """The server's own message: SGLang's flat body, OpenAI's nested one, or the raw text."""
    body = err.body
    if isinstance(body, dict):
        nested = body.get("error")
        if isinstance(nested, dict) and nested.get("message"):
            return str(nested["message"])
        if body.get("message"):
            return str(body["message"])
        if isinstance(nested, str):
            return nested
    return err.message


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
    ) -> None:
        self.base_url = base_url
        self.model = model
        self._client = OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    def served_models(self) -> list[str]:
        """The ids of the models the server serves; ServerUnavailableError if it does not answer."""
        try:
            page = self._client.with_options(timeout=15.0, max_retries=1).models.list()
        except openai.APIConnectionError as err:
            raise ServerUnavailableError(
                f"the LLM server at {self.base_url} did not answer ({_cause(err)}).\n"
                f"Start SGLang with:\n  {sglang_command(self.model, self.base_url)}\n"
                "or point [llm] base_url in config.toml at a running OpenAI-compatible server."
            ) from err
        except openai.APIStatusError as err:
            raise ServerUnavailableError(
                f"the LLM server at {self.base_url} answered HTTP {err.status_code} to "
                f"GET /models: {error_message(err)}"
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

    def complete(self, request: PromptRequest) -> Completion:
        """Run one request; LlmRequestError if the server fails or returns no answer."""
        extra_body: dict[str, Any] = json.loads(request.extra_body_json)
        started = time.perf_counter()
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": m.role, "content": m.content} for m in request.messages],  # type: ignore[misc]
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                extra_body=extra_body or None,
            )
        except openai.APIStatusError as err:
            raise LlmRequestError(
                f"HTTP {err.status_code} from {self.base_url}: {error_message(err)}",
                status=err.status_code,
            ) from err
        except openai.APIConnectionError as err:
            raise LlmRequestError(f"no answer from {self.base_url} ({_cause(err)})") from err
        latency = time.perf_counter() - started
        if not response.choices:
            raise LlmRequestError(f"the server at {self.base_url} returned no choices")
        choice = response.choices[0]
        message = choice.message
        extra = message.model_extra or {}
        separate = str(extra.get("reasoning_content") or extra.get("reasoning") or "")
        content, reasoning = split_reasoning(message.content or "", separate)
        finish = choice.finish_reason or ""
        if not content and finish != "length":
            raise LlmRequestError(f"the server at {self.base_url} returned an empty answer")
        return Completion(
            name=request.name,
            model=response.model or self.model,
            content=content,
            reasoning=reasoning,
            finish_reason=finish,
            usage=_usage(response.usage),
            latency_s=round(latency, 3),
            reasoning_leaked=bool(reasoning) and not separate,
        )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    extra = usage.model_extra or {}
    cached = getattr(usage.prompt_tokens_details, "cached_tokens", None)
    reasoning = getattr(usage.completion_tokens_details, "reasoning_tokens", None)
    if reasoning is None and isinstance(extra.get("reasoning_tokens"), int):
        reasoning = extra["reasoning_tokens"]
    return Usage(
        prompt_tokens=usage.prompt_tokens or 0,
        completion_tokens=usage.completion_tokens or 0,
        cached_tokens=cached,
        reasoning_tokens=reasoning,
    )


def _cause(err: openai.APIConnectionError) -> str:
    if isinstance(err, openai.APITimeoutError):
        return "timed out"
    cause = err.__cause__
    return f"{type(cause).__name__}: {cause}" if cause else "connection failed"
