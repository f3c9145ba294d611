"""One workspace at `digest init` defaults against a real LLM server, end to end.

    python bench/recording_proxy.py --listen 18440 --upstream http://127.0.0.1:18430 \\
        --out /tmp/llama/e2e &
    python bench/real_server.py --base-url http://127.0.0.1:18440/v1 --exchanges /tmp/llama/e2e

`digest init` writes the workspace; [llm] base_url points at the server (best through the
recording proxy, whose files this reads to count requests and statuses), [llm] model at what
it serves, and [arxiv] at the tests' local arXiv-shaped server (the recorded feeds, thirty papers,
arXiv's spacing off). Then: `digest doctor`, two editions (the second a day later), and a
rebuild of the second, which should send nothing. Printed per step: the exit code, requests
by method, path and status (and streams by how they ended), prompts answered and failed with
each failure's message, and what reached the site (pages, and any raw server text on them).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from generator.cli import cli  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402
from tests.servers.recorded import FIXTURES  # noqa: E402

EDITIONS = ("2026-12-02", "2026-12-03")
# What a server says that must never reach a page: its error words and JSON error shapes.
RAW = re.compile(r'exceed_context_size_error|invalid_request_error|"error"\s*:|Traceback|'
                 r"Unable to generate parser|n_prompt_tokens|chatcmpl-")


def exchanges(folder: Path | None, seen: set[str]) -> list[dict[str, Any]]:
    """The proxy's records written since the last call."""
    if folder is None:
        return []
    new = []
    for path in sorted(folder.glob("*.json")):
        if path.name not in seen:
            seen.add(path.name)
            new.append(json.loads(path.read_text()))
    return new


def tally(records: list[dict[str, Any]]) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for record in records:
        request, response = record["request"], record["response"]
        end = f" {response['stream_end']}" if "stream_end" in response else ""
        counts[f"{request['method']} {request['path']} {response['status']}{end}"] += 1
    return dict(sorted(counts.items()))


def prompts(workspace: Path, edition: str) -> dict[str, Any]:
    path = workspace / "site_src" / "editions" / edition / "edition.json"
    if not path.is_file():
        return {"edition record": "missing"}
    record = json.loads(path.read_text())
    items = record.get("prompts") or record.get("completions") or []
    failed = {p["name"]: p["completion"].get("error", "") for p in items
              if p.get("completion", {}).get("error")}
    kinds = collections.Counter(p.get("kind", "") for p in items)
    return {"prompts": len(items), "by kind": dict(kinds), "answered": len(items) - len(failed),
            "failed": failed,
            "kept cut": [p["name"] for p in items
                         if p.get("completion", {}).get("finish_reason") == "cut"]}


def site(workspace: Path, edition: str) -> dict[str, Any]:
    folder = workspace / "site_src" / "editions" / edition
    pages = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.md"))
    raw = {str(p.relative_to(workspace)): sorted(set(RAW.findall(p.read_text())))
           for p in (workspace / "site_src").rglob("*.md") if RAW.search(p.read_text())}
    built = workspace / "site" / "editions" / edition / "index.html"
    return {"pages": len(pages), "page names": pages, "raw server text on pages": raw,
            "html built": built.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the LLM server's /v1 URL")
    parser.add_argument("--model", help="default: the first model /v1/models lists")
    parser.add_argument("--exchanges", type=Path, help="the recording proxy's --out folder")
    parser.add_argument("--workspace", type=Path, help="default: a temporary folder")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    model = args.model
    if not model:
        with urllib.request.urlopen(f"{args.base_url.rstrip('/')}/models", timeout=30) as r:
            model = json.load(r)["data"][0]["id"]
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="digest-real-")) / "ws"
    runner = CliRunner()
    arxiv = ArxivServer(FIXTURES).start()
    # One window of three recorded pages (30 papers), as arXiv answers a date-range query.
    arxiv.state.window = [f"arxivpy2026_search_testing_start{s}_max10.xml" for s in (0, 10, 20)]
    seen: set[str] = set()
    exchanges(args.exchanges, seen)  # what came before this run is not counted
    figures: dict[str, Any] = {"workspace": str(workspace), "model": model,
                               "base_url": args.base_url}
    try:
        result = runner.invoke(cli, ["init", str(workspace)])
        assert result.exit_code == 0, result.output
        config = workspace / "config.toml"
        text = config.read_text()
        text = text.replace('"https://export.arxiv.org/api/query"', f'"{arxiv.api_url}"')
        text = text.replace('"http://localhost:30000/v1"', json.dumps(args.base_url))
        text = re.sub(r'(?m)^model = ".*"', f"model = {json.dumps(model)}", text, count=1)
        text = re.sub(r"(?m)^delay_seconds = .*$", "delay_seconds = 0.0", text)
        config.write_text(text)
        steps = [("doctor", ["doctor"])]
        steps += [(f"build {e}", ["build", "--edition", e]) for e in EDITIONS]
        steps += [(f"rebuild {EDITIONS[-1]}", ["build", "--edition", EDITIONS[-1]])]
        for name, command in steps:
            result = runner.invoke(cli, [*command, "--config", str(config)])
            step: dict[str, Any] = {"exit": result.exit_code,
                                    "requests": tally(exchanges(args.exchanges, seen)),
                                    "output tail": result.output.strip().splitlines()[-14:]}
            if name != "doctor":
                edition = command[2]
                step |= prompts(workspace, edition) | site(workspace, edition)
            else:
                step["output"] = result.output.strip().splitlines()
            figures[name] = step
            print(f"\n== {name}: exit {result.exit_code}")
            print(json.dumps({k: v for k, v in step.items() if k != "output tail"}, indent=1,
                             ensure_ascii=False))
    finally:
        arxiv.stop()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
