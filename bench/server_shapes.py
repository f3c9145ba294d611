"""Measure: one edition at the settings `digest init` writes, against each server shape.

    python bench/server_shapes.py [--shapes sglang,llama-cpp-python,litellm,dropping]

Each shape is the project's test server made to answer as that server does (the recorded
bytes of llama-cpp-python 0.3.36 and of LiteLLM 1.108.7 in front of it, where they were
recorded: tests/fixtures/servers/), with the recorded arXiv data: `digest init`, the query
pointed at the local arXiv (max_papers 10: the recorded feed holds ten; arXiv's spacing off,
the requests go to the recording) and the LLM at the shape, then `digest build`. Printed per shape:
chat requests sent, prompts, prompts answered, requests whose way of asking for JSON the
server refused, streams it cut and connections it dropped (each sent again), evidence checks
left unfit, answers kept as cut, the width the workspace remembers and the JSON way it learnt.
(A prompt whose text another prompt of the run already had is answered from the cache.) Not a speed figure:
the counts say whether an edition survives the server (every prompt answered, every claim
checked) and at what cost in requests.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from bench.rebuild import init_config  # noqa: E402
from generator.cli import cli  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402
from tests.servers.recorded import FIXTURES  # noqa: E402
from tests.servers.sglang import SglangServer, realistic_responder  # noqa: E402

SHAPES = ("sglang", "llama-cpp-python", "litellm", "dropping")
EDITION = "2026-12-02"


def configure(server: SglangServer, shape: str) -> None:
    state = server.state
    if shape == "dropping":  # no /server_info, two at once, a third connection closed
        state.like("vllm")
        state.plain_openai = True
        state.drop_beyond = 2
    else:
        state.like(shape)
    state.responder = realistic_responder


def one(shape: str, folder: Path) -> dict[str, Any]:
    arxiv, server = ArxivServer(FIXTURES).start(), SglangServer().start()
    try:
        configure(server, shape)
        runner = CliRunner()
        config = init_config(folder, arxiv, server, ROOT)
        # arXiv's spacing off: every request goes to the local recording, not to arXiv.
        config.write_text(re.sub(r"(?m)^delay_seconds = .*$", "delay_seconds = 0.0",
                                 config.read_text()))
        result = runner.invoke(cli, ["build", "--config", str(config), "--edition", EDITION])
        if not (folder / "site_src" / "editions" / EDITION / "edition.json").is_file():
            raise SystemExit(f"{shape}: the build made no edition:\n{result.output}")
        record = json.loads((folder / "site_src" / "editions" / EDITION / "edition.json")
                            .read_text())
        completions = record["completions"]
        remembered = json.loads((folder / ".cache" / "servers.json").read_text())
        (entry,) = remembered.values()
        unchecked = sum(1 for c in completions if c["kind"] == "evidence"
                        and str(c.get("error", "")).startswith("not checked"))
        state = server.state
        accepted = state.accepted_formats
        refused = sum(1 for body in state.chat_requests if accepted is not None and (
            (body.get("response_format") or {}).get("type") or "text") not in accepted)
        return {
            "exit": result.exit_code,
            "requests sent": len(state.chat_requests),
            "prompts": len(completions),
            "answered": sum(1 for c in completions if not c.get("error")),
            "JSON refused": refused,
            "cut or dropped": state.cut_count + state.dropped,
            "claims unfit": unchecked,
            "kept cut": sum(1 for c in completions if c.get("finish_reason") == "cut"),
            "width kept": entry["found"].get("concurrency") or "stated",
            "JSON way": entry["found"].get("structured"),
        }
    finally:
        arxiv.stop()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    args = parser.parse_args()
    rows = []
    for shape in args.shapes.split(","):
        with tempfile.TemporaryDirectory() as folder:
            rows.append((shape, one(shape, Path(folder) / "ws")))
    columns = list(rows[0][1])
    print(f"{'shape':17}" + "".join(f"{c:>15}" for c in columns))
    for shape, row in rows:
        print(f"{shape:17}" + "".join(f"{row[c]!s:>15}" for c in columns))


if __name__ == "__main__":
    main()
