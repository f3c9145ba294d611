"""Benchmark: `digest build` of an edition that is already built (nothing changed).

    python bench/rebuild.py [--runs 5] [--editions 8] [--archive 47]
                            [--baseline /path/to/other/venv/bin/python]

Starts the arXiv- and SGLang-shaped test servers, builds one edition with the settings
`digest init` writes (every default prompt: research map, themes, deep dives, thinking, a
brief per paper; arXiv's three-second spacing; ten papers, as many as the recorded feed has),
pointed at the local servers, then times the same `digest build` again in fresh processes, as
a user or a scheduled job runs it: imports, config, cache checks, render and the site step.
With --baseline, another install (an older checkout's virtual environment) is timed side by
side, alternating, in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import FIXTURES  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402
from tests.servers.sglang import SglangServer  # noqa: E402

EDITION = "2026-12-02"


def init_config(folder: Path, arxiv: ArxivServer, sglang: SglangServer, checkout: Path) -> Path:
    """The config.toml `digest init` writes in `checkout`, with the two server URLs changed
    and max_papers 10 (the recorded feed the test server answers with holds ten papers)."""
    folder.mkdir(parents=True)
    text = (checkout / "config.toml").read_text()
    text = text.replace('"https://export.arxiv.org/api/query"', f'"{arxiv.api_url}"')
    text = text.replace('"http://localhost:30000/v1"', f'"{sglang.base_url}"')
    text = text.replace("max_papers = 20 ", "max_papers = 10 ")
    (folder / "config.toml").write_text(text)
    return folder / "config.toml"


def build(python: str, config: Path, cwd: Path, edition: str = EDITION) -> float:
    """Seconds one `digest build` takes in a fresh process."""
    started = time.perf_counter()
    done = subprocess.run([python, "-m", "generator", "build", "--config", str(config),
                           "--edition", edition], cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"digest build failed with {python}:\n{done.stderr[-2000:]}")
    return elapsed


def help_time(python: str) -> float:
    """Seconds `digest --help` takes in a fresh process."""
    started = time.perf_counter()
    subprocess.run([python, "-m", "generator", "--help"], capture_output=True, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", help="the python of another install, timed side by side")
    parser.add_argument("--editions", type=int, default=1,
                        help="weekly editions built before the one rebuilt (the archive's size)")
    parser.add_argument("--archive", type=int, default=0,
                        help="weekly editions of 20 papers generated into the archive first "
                             "(bench/scale.py's, from January on: a year's scale in seconds)")
    args = parser.parse_args()
    pythons = {"this checkout": sys.executable}
    if args.baseline:
        pythons["baseline"] = args.baseline
    arxiv, sglang = ArxivServer(FIXTURES).start(), SglangServer().start()
    times: dict[str, list[float]] = {name: [] for name in pythons}
    helps: list[float] = []  # `digest --help`: what starting the command costs at all
    try:
        with tempfile.TemporaryDirectory() as folder:
            configs = {}
            for name, python in pythons.items():
                cwd = ROOT if name == "this checkout" else Path(python).parents[2]
                config = init_config(Path(folder) / name.replace(" ", "-"), arxiv, sglang, cwd)
                if args.archive:
                    from bench.scale import generate

                    generate(config.parent, args.archive, 20)
                day = date.fromisoformat(EDITION)
                for weeks in range(args.editions - 1, 0, -1):  # the archive, oldest first
                    build(python, config, cwd, (day - timedelta(weeks=weeks)).isoformat())
                first = build(python, config, cwd)
                configs[name] = (config, cwd)
                print(f"  first build, {name}: {first:.2f} s", file=sys.stderr)
            sent = len(sglang.state.chat_requests)
            for _ in range(args.runs):  # alternating, so both see the same machine
                for name, python in pythons.items():
                    config, cwd = configs[name]
                    times[name].append(build(python, config, cwd))
                helps.append(help_time(sys.executable))
            assert len(sglang.state.chat_requests) == sent, "a rebuild sent a prompt"
    finally:
        arxiv.stop()
        sglang.stop()
    print(f"Rebuild benchmark: `digest build` of an unchanged edition (`digest init` settings, "
          f"{args.editions} edition(s) built and {args.archive} generated in the archive), "
          f"median of {args.runs}")
    for name, values in times.items():
        print(f"  {name:<15} {statistics.median(values):6.2f} s   (min {min(values):.2f} s)")
    start_up = statistics.median(helps)
    print(f"  digest --help   {start_up:6.2f} s   (the start-up cost; a no-op rebuild is "
          f"{statistics.median(times['this checkout']) / start_up:.2f}x it, target <= 2)")
    if args.baseline:
        ratio = statistics.median(times["baseline"]) / statistics.median(times["this checkout"])
        print(f"  baseline / this checkout  {ratio:5.2f}x")


if __name__ == "__main__":
    main()
