"""One request to the server, answered whatever stands in the way: a prompt too long for the
context is cut to fit (an evidence check made in a smaller conversation), a JSON answer is
asked for in a way the server takes, an answer a proxy called whole although it was cut is
caught (cuts.py); what comes back whole is cached at once. The batch around it (stage.py)
decides when and how many at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from ..completions import UNFIT_CHECK, Completion, PromptRequest
from ..errors import LlmRequestError
from ..kinds import KindRegistry
from ..ports import ChatModel, StreamEvents
from ..store.cache import Cache, completion_key
from ..text.urls import redact_text
from .cuts import CUT, looks_cut, suspect_message
from .json_answers import StructuredFormats, ask_for_json
from .planning import Refusal, refusal_from_error

log = logging.getLogger(__name__)

# Rebuilds a request with a bundle that fits what the server's refusal says, or None if
# cutting cannot help.
Shrink = Callable[[PromptRequest, Refusal], PromptRequest | None]
MAX_CUTS = 3


def complete_one(client: ChatModel, cache: Cache, request: PromptRequest, key: str,
                 events: StreamEvents, shrink: Shrink | None, shrunk: int = 0, *,
                 formats: StructuredFormats | None = None, retry: bool = True,
                 cuts: bool | None, kinds: KindRegistry
                 ) -> tuple[Completion, PromptRequest]:
    """One request, and the request as last sent: if the server refuses it for its length,
    again with shorter excerpts (each cut sized by the server's own count, each smaller than
    the last, at most three).

    `cuts`: None, answers are taken as the server says they ended; False, a prose answer that
    stops mid-sentence far below its budget comes back as a sign of overload (to be sent again,
    fewer at a time); True (it was), it is kept, marked as cut, and not cached (cuts.py)."""
    spec = kinds[request.kind]
    schema = spec.schema
    try:
        if schema is not None:
            completion = ask_for_json(client, request, events, formats or StructuredFormats(),
                                      schema, retry=retry, cuts=cuts)
        else:
            completion = client.complete(request, events, retry=retry)
    except LlmRequestError as err:
        refusal = refusal_from_error(err.detail or str(err)) if err.status == 400 else None
        # A follow-up (an evidence check) is not rebuilt from the plan: it is not cut.
        cuttable = refusal and shrink and shrunk < MAX_CUTS and not spec.follows
        smaller = shrink(request, refusal) if cuttable and refusal and shrink else None
        if smaller is None and refusal and spec.alone and shrunk < MAX_CUTS:
            # A check continues its answer's conversation; where that does not fit, the same
            # check is made in a conversation of its own: the cited papers' text, the claims.
            smaller = spec.alone(request, refusal.context)
            if smaller is not None:
                log.info("%s: its answer's conversation does not fit a %d-token context; "
                         "checked in a smaller one", request.name, refusal.context)
                key = completion_key(client.model, smaller)
                cached = cache.get_completion(key)
                if cached is not None:  # a rerun: the smaller check was answered before
                    return renamed(cached, request.name), smaller
                return complete_one(client, cache, smaller, key, events, shrink, shrunk + 1,
                                    formats=formats, retry=retry, cuts=cuts, kinds=kinds)
        if smaller is None and refusal and spec.alone:
            # Where not even the cited papers' text and the claims fit, its claims are shown
            # as not checked: not a failed build.
            log.warning("%s: %s", request.name, UNFIT_CHECK)
            return Completion(name=request.name, model=client.model,
                              error=f"{UNFIT_CHECK} ({refusal.context:,} tokens)"), request
        if smaller is None:
            # The observer (the CLI's progress) and the edition report it; logged once, quietly.
            log.info("prompt %s failed: %s", request.name, err)
            return Completion(name=request.name, model=client.model,
                              error=redact_text(str(err)), overloaded=err.overload), request
        assert refusal is not None
        log.warning("prompt %s was too long for a %d-token context; retrying with shorter "
                    "excerpts", request.name, refusal.context)
        return complete_one(client, cache, smaller, completion_key(client.model, smaller),
                            events, shrink, shrunk + 1, formats=formats, retry=retry, cuts=cuts, kinds=kinds)
    if cuts is not None and looks_cut(request, completion, schema is not None):
        if not cuts:
            return Completion(name=request.name, model=client.model, overloaded=True,
                              error=suspect_message(client.base_url, request, completion)
                              ), request
        log.warning("%s still stops mid-sentence far below its budget: kept, marked as cut, "
                    "and not cached", request.name)
        return replace(completion, finish_reason=CUT), request
    cache.put_completion(key, completion)
    return completion, request


def renamed(completion: Completion, name: str) -> Completion:
    """A cached answer under this request's name: the same prompt text may be cached under
    another page name (a renamed deep dive)."""
    if completion.name == name:
        return completion
    return replace(completion, name=name, from_cache=True)
