"""Record llama.cpp's llama-server, byte-exact: the scripted exchanges of
tests/fixtures/servers/llama-server-b10359/ (its README), in the format of bench/recording.py.
The server is started and stopped here, with -np 1 and then -np 2.

    python bench/record_server.py --binary /tmp/llama/.../llama-server \\
        --model /tmp/llama/.../SmolLM2-135M-Instruct.Q4_1.gguf \\
        --out tests/fixtures/servers/llama-server-b10359

What a client (digest) sends is recorded by bench/recording_proxy.py.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

try:
    from bench.recording import send
except ModuleNotFoundError:  # run as a script from the repository's root
    from recording import send  # type: ignore

SCHEMA = {"type": "object", "properties": {"title": {"type": "string", "minLength": 1},
                                           "year": {"type": "integer"}},
          "required": ["title", "year"], "additionalProperties": False}
INVALID_SCHEMA = {"type": "object", "properties": {"title": {"type": "no-such-type"}}}
LONG = "The quick brown fox jumps over the lazy dog. " * 900  # about 9,000 tokens


def _chat(model: str, text: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}],
            "max_tokens": max_tokens, "temperature": 0.0, **extra}


class Recorder:
    def __init__(self, out: Path, server: str, base_url: str) -> None:
        self.out, self.server, self.base_url = out, server, base_url
        out.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, record: dict[str, Any]) -> dict[str, Any]:
        response = record["response"]
        end = "" if "stream_end" not in response else f"_{response['stream_end']}"
        stem = f"{name}__{response['status']}{end}"
        data = {"name": stem, "server": self.server, **record}
        (self.out / f"{stem}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False)
                                               + "\n", encoding="utf-8")
        print(f"{stem}: {response['status']} t_end={response['t_end']}", flush=True)
        return data

    def one(self, name: str, method: str, path: str, payload: Any = None,
            accept: str = "application/json") -> dict[str, Any]:
        return self.write(name, send(self.base_url, method, path, payload, accept))

    def together(self, name: str, payloads: list[tuple[str, dict[str, Any]]],
                 gap_s: float = 0.0) -> None:
        """Streams sent side by side (the second `gap_s` after the first), each recorded."""
        records: dict[str, dict[str, Any]] = {}

        def go(label: str, payload: dict[str, Any]) -> None:
            records[label] = send(self.base_url, "POST", "/v1/chat/completions", payload,
                                  "text/event-stream")

        threads = []
        for label, payload in payloads:
            thread = threading.Thread(target=go, args=(label, payload))
            thread.start()
            threads.append(thread)
            time.sleep(gap_s)
        for thread in threads:
            thread.join()
        for label, _ in payloads:
            self.write(f"{name}_{label}", records[label])


def launch(binary: str, model: str, port: int, args: list[str], log: Path
           ) -> tuple[subprocess.Popen[bytes], list[str]]:
    command = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), *args]
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    return process, command


def health_while_loading(recorder: Recorder, prefix: str) -> None:
    """Poll /health as fast as it answers: the first answer that is not 200 (loading), then
    the first 200."""
    loading = ready = None
    until = time.monotonic() + 120
    while ready is None and time.monotonic() < until:
        try:
            record = send(recorder.base_url, "GET", "/health", timeout=5)
        except OSError:
            time.sleep(0.002)
            continue
        if record["response"]["status"] == 200:
            ready = record
        elif loading is None:
            loading = record
    if loading is not None:
        recorder.write(f"{prefix}a_get_health_while_loading", loading)
    if ready is not None:
        recorder.write(f"{prefix}b_get_health_ready", ready)


def record_llama_server(args: argparse.Namespace) -> None:
    out = Path(args.out)
    base = f"http://127.0.0.1:{args.port}"
    common = ["-c", str(args.ctx), "-t", str(args.threads), "--no-repack"]
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    commands = []

    process, command = launch(args.binary, args.model, args.port, [*common, "-np", "1"],
                              logs / "np1.log")
    commands.append(command)
    recorder = Recorder(out, f"llama.cpp llama-server build {args.build} (-np 1, -c {args.ctx})",
                        base)
    try:
        health_while_loading(recorder, "01")
        models = send(base, "GET", "/v1/models")["response"]["json"]
        model = models["data"][0]["id"]
        recorder.one("02a_get_v1_models", "GET", "/v1/models")
        recorder.one("02b_get_props", "GET", "/props")
        recorder.one("02c_get_slots", "GET", "/slots")
        recorder.one("02d_get_server_info", "GET", "/server_info")
        recorder.one("02e_get_get_server_info", "GET", "/get_server_info")
        text = "Speculative decoding drafts tokens with a small model."
        # The tokenizer probes in the order the digest tries them (server.TOKENIZERS).
        recorder.one("03a_post_v1_tokenize_prompt_sglang", "POST", "/v1/tokenize",
                     {"model": model, "prompt": text, "add_special_tokens": False})
        recorder.one("03b_post_tokenize_prompt_vllm", "POST", "/tokenize",
                     {"model": model, "prompt": text, "add_special_tokens": False})
        recorder.one("03c_post_extras_tokenize_count_input", "POST", "/extras/tokenize/count",
                     {"model": model, "input": text})
        recorder.one("03d_post_tokenize_content_llamacpp", "POST", "/tokenize",
                     {"model": model, "content": text, "add_special": False})
        ask = "Name one paper about speculative decoding. Reply as JSON with title and year."
        schema = {"type": "json_schema", "json_schema": {"name": "paper", "strict": True,
                                                          "schema": SCHEMA}}
        recorder.one("04a_chat_response_format_json_schema_nonstream", "POST",
                     "/v1/chat/completions", _chat(model, ask, 64, response_format=schema))
        recorder.one("04b_chat_response_format_json_schema_stream", "POST",
                     "/v1/chat/completions", _chat(model, ask, 64, response_format=schema,
                                                   stream=True), "text/event-stream")
        invalid = {"type": "json_schema", "json_schema": {"name": "paper", "strict": True,
                                                           "schema": INVALID_SCHEMA}}
        recorder.one("04c_chat_response_format_invalid_schema_nonstream", "POST",
                     "/v1/chat/completions", _chat(model, ask, 64, response_format=invalid))
        recorder.one("04d_chat_response_format_invalid_schema_stream", "POST",
                     "/v1/chat/completions", _chat(model, ask, 64, response_format=invalid,
                                                   stream=True), "text/event-stream")
        recorder.one("04e_chat_response_format_json_object_with_schema_nonstream", "POST",
                     "/v1/chat/completions",
                     _chat(model, ask, 64, response_format={"type": "json_object",
                                                            "schema": SCHEMA}))
        over = f"{LONG}\nSummarise the text above."
        recorder.one("05a_chat_prompt_over_context_nonstream", "POST", "/v1/chat/completions",
                     _chat(model, over, 64))
        recorder.one("05b_chat_prompt_over_context_stream", "POST", "/v1/chat/completions",
                     _chat(model, over, 64, stream=True,
                           stream_options={"include_usage": True}), "text/event-stream")
        recorder.one("05c_chat_max_tokens_over_remaining_context_nonstream", "POST",
                     "/v1/chat/completions", _chat(model, "Say hello.", args.ctx))
        poem = "Write a short poem about the sea."
        recorder.one("06a_chat_stream_include_usage_max64", "POST", "/v1/chat/completions",
                     _chat(model, poem, 64, stream=True, stream_options={"include_usage": True}),
                     "text/event-stream")
        recorder.one("06b_chat_stream_without_stream_options_max64", "POST",
                     "/v1/chat/completions", _chat(model, poem, 64, stream=True),
                     "text/event-stream")
        recorder.one("07_chat_nonstream_usage", "POST", "/v1/chat/completions",
                     _chat(model, "What is the capital of France? Answer in one sentence.", 32))
        recorder.one("08_chat_unknown_model_id", "POST", "/v1/chat/completions",
                     {**_chat(model, "Say hello.", 16), "model": "no-such-model"})
        recorder.one("09_chat_template_kwargs_thinking_stream", "POST", "/v1/chat/completions",
                     _chat(model, poem, 32, stream=True, stream_options={"include_usage": True},
                           chat_template_kwargs={"thinking": True}), "text/event-stream")
        dragon = _chat(model, "Tell a long story about a dragon.", 200, stream=True,
                       stream_options={"include_usage": True})
        robot = _chat(model, "Tell a long story about a robot.", 200, stream=True,
                      stream_options={"include_usage": True})
        recorder.together("10a_two_streams_one_slot_same_moment_max200",
                          [("a_dragon", dragon), ("b_robot", robot)])
        recorder.one("10c_get_slots_after", "GET", "/slots")
    finally:
        process.terminate()
        process.wait(30)

    process, command = launch(args.binary, args.model, args.port, [*common, "-np", "2"],
                              logs / "np2.log")
    commands.append(command)
    recorder = Recorder(out, f"llama.cpp llama-server build {args.build} (-np 2, -c {args.ctx})",
                        base)
    try:
        health_while_loading(recorder, "11")
        recorder.one("12a_get_props_np2", "GET", "/props")
        recorder.one("12b_get_slots_np2", "GET", "/slots")
        recorder.together("13a_two_streams_np2_same_moment_max200",
                          [("a_dragon", dragon), ("b_robot", robot)])
        recorder.together("13b_three_streams_np2_same_moment_max64",
                          [("a", {**dragon, "max_tokens": 64}), ("b", {**robot, "max_tokens": 64}),
                           ("c", _chat(model, poem, 64, stream=True,
                                       stream_options={"include_usage": True}))])
    finally:
        process.terminate()
        process.wait(30)
    (out / "commands.json").write_text(json.dumps(
        [[Path(c[0]).name, *[Path(a).name if a.endswith(".gguf") else a for a in c[1:]]]
         for c in commands], indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--logs", default="/tmp/llama/logs")
    parser.add_argument("--port", type=int, default=18430)
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--build", default="b10359")
    record_llama_server(parser.parse_args())


if __name__ == "__main__":
    main()
