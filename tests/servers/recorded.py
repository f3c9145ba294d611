"""What real servers sent, from the recordings in tests/fixtures/servers/ (read its README).

The test server (sglang.py) answers our prompts with our responders, but where a real server's
answer has a shape of its own (an error body, a refusal, the end of a cut stream) it uses the
recorded bytes: a double shaped by documentation once passed while the real server failed on
every structured prompt.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("DIGEST_FIXTURES", ROOT / "tests" / "fixtures"))
SERVERS = {"llama-cpp-python": "llama-cpp-python-0.3.36", "llama-server": "llama-server-b10359",
           "litellm": "litellm-1.108.7-over-llama-cpp-python"}


@functools.cache
def exchange(kind: str, prefix: str) -> dict[str, Any]:
    """The recorded exchange of server `kind` whose file name starts with `prefix`."""
    folder = FIXTURES / "servers" / SERVERS[kind]
    found = sorted(folder.glob(f"{prefix}*.json"))
    if not found:
        raise FileNotFoundError(f"no recording {prefix}*.json in {folder} (set DIGEST_FIXTURES)")
    path = found[0]
    return dict(json.loads(path.read_text(encoding="utf-8")))


def body(kind: str, prefix: str) -> tuple[int, bytes]:
    """The status and exact body bytes of a recorded non-streamed answer."""
    response = exchange(kind, prefix)["response"]
    return int(response["status"]), str(response["body"]["text"]).encode("utf-8")


def format_refusal(kind: str) -> tuple[int, bytes]:
    """How the server refuses `response_format: json_schema` (a 500 with a validation error,
    a traceback frame and the route, in a JSON body)."""
    return body(kind, "03a_")


_NUMBERS_RE = re.compile(r"maximum context length is \d+ tokens\. However, you requested \d+ "
                         r"tokens \(\d+ in the messages, \d+ in the completion\)")


def context_refusal(kind: str, context: int, prompt: int, max_tokens: int) -> tuple[int, bytes]:
    """The recorded 400 for a prompt over the context, with this request's numbers."""
    status, raw = body(kind, "07a_")
    said = (f"maximum context length is {context} tokens. However, you requested "
            f"{prompt + max_tokens} tokens ({prompt} in the messages, {max_tokens} in the "
            "completion)")
    data = json.loads(raw)
    data["error"]["message"] = _NUMBERS_RE.sub(said, data["error"]["message"])
    return status, json.dumps(data, separators=(",", ":")).encode()


def stream_events(kind: str, prefix: str) -> list[str]:
    """The `data:` payloads of a recorded stream, in order."""
    reads = exchange(kind, prefix)["response"]["reads"]
    text = "".join(read["text"] for read in reads)
    return [block[len("data: "):] for block in text.split("\n\n") if block.startswith("data: ")]


def cut_ending(kind: str) -> list[str]:
    """What the server sends after the last token of a stream its one slot interrupted:
    llama-cpp-python `[DONE]` with no finish reason; LiteLLM a made-up `stop`, then `[DONE]`."""
    events = stream_events(kind, "06b_two_streams_second_after_1s_max200_a_")
    ending: list[str] = []
    for event in reversed(events):
        if event != "[DONE]" and '"content"' in event:
            break
        ending.insert(0, event)
    return ending
