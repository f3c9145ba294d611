"""How to start a server that fits the workspace: SGLang's launch line, and a router (smg, or
the older sglang-router) in front of several SGLang workers."""

from __future__ import annotations

from urllib.parse import urlparse

# SGLang's reasoning parsers for the model families we know; others get none suggested.
_REASONING_PARSERS = (
    ("deepseek-v4", "deepseek-v4"),
    ("deepseek-r1", "deepseek-r1"),
    ("deepseek-v3", "deepseek-v3"),
    ("qwen3", "qwen3"),
    ("gpt-oss", "gpt-oss"),
    ("kimi", "kimi"),
    ("glm-4.5", "glm45"),
)


def reasoning_parser_for(model: str) -> str | None:
    name = model.lower()
    return next((parser for key, parser in _REASONING_PARSERS if key in name), None)


def is_local(base_url: str) -> bool:
    """Whether the server is on this machine (so it needs neither --host nor a key)."""
    return (urlparse(base_url).hostname or "localhost") in ("localhost", "127.0.0.1", "::1")


def sglang_command(model: str, base_url: str, context_length: int | None = None,
                   api_key_env: str = "SGLANG_API_KEY") -> str:
    """The SGLang launch command that serves `model` where `base_url` expects it.

    A server that other machines reach (a GitHub runner, say) listens on every interface and
    wants the API key that the digest sends from `api_key_env`.
    """
    url = urlparse(base_url)
    if "/" in model or model.startswith((".", "~")):
        parts = ["python -m sglang.launch_server", f"--model-path {model}"]
    else:  # an alias ("smollm2"): SGLang loads weights by path or Hugging Face id
        parts = ["python -m sglang.launch_server", "--model-path <hugging-face-id-or-path>",
                 f"--served-model-name {model}"]
    if not is_local(base_url):
        parts += ["--host 0.0.0.0", f'--api-key "${api_key_env}"']
    parts.append(f"--port {url.port or 30000}")
    parser = reasoning_parser_for(model)
    if parser:
        parts.append(f"--reasoning-parser {parser}")
    parts += ["--enable-cache-report", "--schedule-policy lpm"]
    if context_length:
        parts.append(f"--context-length {context_length}")
    return " ".join(parts)


# A router in front of several workers, as measured fastest for editions, one or four at once
# (bench/router.py, docs/benchmarks.md): cache-aware routing that rebalances at any gap in
# load, so that one edition's prompts, which share one bundle, spread evenly over the workers
# (the defaults rebalance only at a gap of 64: one edition, one worker). smg and the older
# sglang-router take the same options.
ROUTER_POLICY = ("--policy cache_aware", "--balance-abs-threshold 0",
                 "--balance-rel-threshold 1.0")
ROUTER_LAUNCH = "smg launch"  # the Shepherd Model Gateway (pip install smg)
OLDER_ROUTER_LAUNCH = "python -m sglang_router.launch_router"  # sglang-router, its older name


def router_commands(model: str, base_url: str, workers: int, context_length: int | None = None,
                    api_key_env: str = "SGLANG_API_KEY") -> list[str]:
    """The launch lines of `workers` SGLang workers on one machine (one GPU each, on the ports
    after the router's) and of the router (smg) in front of them, where `base_url` expects a
    server, then the same router under its older name as a comment. The workers listen on this
    machine only: the router reaches them there, and so does a digest run on the same machine,
    which reads each one's limits."""
    port = urlparse(base_url).port or 30000
    ports = [port + 1 + n for n in range(workers)]
    lines = [f"CUDA_VISIBLE_DEVICES={n} "
             + sglang_command(model, f"http://127.0.0.1:{p}/v1", context_length, api_key_env)
             for n, p in enumerate(ports)]
    options = []
    if not is_local(base_url):
        options += ["--host 0.0.0.0", f'--api-key "${api_key_env}"']
    else:
        options.append("--host 127.0.0.1")
    options += [f"--port {port}", "--worker-urls " + " ".join(f"http://127.0.0.1:{p}"
                                                              for p in ports), *ROUTER_POLICY]
    return [*lines, " ".join([ROUTER_LAUNCH, *options]),
            "# or, with the older sglang-router (pip install sglang-router): "
            + " ".join([OLDER_ROUTER_LAUNCH, *options])]
