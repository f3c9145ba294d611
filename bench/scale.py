"""Benchmark: a year of weekly editions (52 x 20 papers) built into one site.

    python bench/scale.py [--editions 52] [--papers 20]

Generates a workspace from the recorded arXiv feeds (no server: fixed model answers), renders
every edition with the project's templates, then builds the site twice, side by side: as the
project does (paper pages out of the global navigation) and with every paper page in it. Prints
build time, peak memory and site size per page. See README.md, "Benchmarks".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generator.archive.history import load_records  # noqa: E402
from generator.completions import Completion, SynthesisResult, Usage  # noqa: E402
from generator.config import BriefSettings, Config, LlmSettings  # noqa: E402
from generator.edition.assemble import assemble  # noqa: E402
from generator.edition.inputs import EditionInputs  # noqa: E402
from generator.edition.render import make_environment, render_edition, write_pages  # noqa: E402
from generator.fetch.arxiv_source import ArxivSource, RateLimiter, RecordingSession  # noqa: E402
from generator.papers import FetchResult, FullText, Paper, Source  # noqa: E402
from generator.prompts.builders import build_requests  # noqa: E402
from generator.prompts.kinds import BUILTIN_KINDS  # noqa: E402
from generator.synthesis.bundle import build_bundle  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402
from tests.servers.arxiv import ArxivServer  # noqa: E402

ANSWER = """## Field overview

Paper 1 and Paper 2 set the frame; Papers 3–5 extend it, and Paper 7 reports a 12.5% gain.

## Research themes

| Theme | Papers |
|---|---|
| Testing | Paper 1, Paper 4 |
| Fuzzing | Paper 3 |

## Open problems

- Paper 9 leaves latency open.
- Paper 12 (see its appendix) measures only throughput.
"""

THEMES = json.dumps({"themes": [{"name": "Testing", "description": "How systems are tested.",
                                 "papers": [1, 4]}, {"name": "Fuzzing", "description": "Fuzzers.",
                                                     "papers": [3]}]})


def fixture_papers() -> list[Paper]:
    server = ArxivServer(FIXTURES).start()
    try:
        source = ArxivSource(RecordingSession(timeout=10), server.api_url, RateLimiter(0))
        papers: list[Paper] = []
        for feed in sorted((FIXTURES / "arxiv_api").glob("*.xml")):
            if "error" in feed.name or "empty" in feed.name:
                continue
            server.state.default_feed = feed.name
            papers += source.search("x", 1, 2000)
    finally:
        server.stop()
    return list({p.arxiv_id: p for p in papers}.values())


def generate(workspace: Path, editions: int, per_edition: int) -> int:
    """Render `editions` weekly editions into workspace/site_src; returns the page count."""
    base = fixture_papers()
    env = make_environment(ROOT)
    docs = workspace / "site_src"
    day = date(2026, 1, 5)
    for e in range(editions):
        name = (day + timedelta(weeks=e)).isoformat()
        papers = [replace(base[(e * 7 + i) % len(base)], arxiv_id=f"26{e:02d}.{i:05d}v1")
                  for i in range(per_edition)]
        sources = tuple(Source(p, FullText("not_requested")) for p in papers)
        bundle = build_bundle(sources)
        requests = build_requests(Config(path=Path("config.toml"), briefs=BriefSettings(enabled=False),
                                         llm=LlmSettings(thinking_extra_body={}),
                                                registry=BUILTIN_KINDS), bundle)
        completions = tuple(Completion(name=r.name, model="bench",
                                       content=THEMES if r.kind == "themes" else ANSWER,
                                       reasoning="Thinking." if r.thinking else "",
                                       finish_reason="stop",
                                       usage=Usage(40_000, 900, 39_000, 0)) for r in requests)
        synthesis = SynthesisResult("bench", tuple(requests), completions, bundle.chars,
                                    bundle.estimated_tokens, 30.0)
        fetch = FetchResult("bench", per_edition, f"{name}T06:00:00+00:00", sources)
        records = load_records(docs)
        edition = assemble(name, "Scale Digest", *EditionInputs.of_stages(
            fetch, bundle, synthesis, kinds=BUILTIN_KINDS),
                           records, kinds=BUILTIN_KINDS)
        write_pages(docs, render_edition(env, edition, records))
    return sum(1 for _ in docs.rglob("*.md"))


BUILD = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from generator.archive.history import History
from generator.publish import site
ws = Path({ws!r})
if {everything_in_nav!r}:
    def everything(history, questions=()):
        nav = [{{"Home": "index.md"}}]
        for record in history.records:
            base = "editions/" + record.edition
            pages = [{{"Overview": base + "/index.md"}}]
            pages += [{{page.title: base + "/" + page.stem + ".md"}} for page in record.pages]
            pages.append({{"Papers": [base + "/papers/" + p.slug + ".md"
                                     for p in record.papers]}})
            nav.append({{record.edition: pages}})
        return nav
    site.edition_nav = everything
site.build_site(Path({yml!r}), ws / "site_src", ws / "site", "Scale Digest",
                fallback_yml=Path({yml!r}), history=History.load(ws / "site_src"))
"""


def site_size(workspace: Path) -> tuple[int, int]:
    """(bytes, HTML pages) of the built site."""
    files = [p for p in (workspace / "site").rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), sum(1 for p in files if p.suffix == ".html")


def timed_build(workspace: Path, everything_in_nav: bool) -> tuple[float, float]:
    """(seconds, peak MiB) of one site build in a fresh process."""
    code = BUILD.format(root=str(ROOT), ws=str(workspace), yml=str(ROOT / "mkdocs.yml"),
                        everything_in_nav=everything_in_nav)
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", code])
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("the site build failed")
    return elapsed, usage.ru_maxrss / 1024


def timed_plain_build(workspace: Path) -> float:
    """Seconds of a plain `mkdocs build` of the same docs, mkdocs.yml and navigation, in a fresh
    process: what `digest site` costs beyond MkDocs is the difference (the site check, the
    navigation and the fingerprint)."""
    import yaml

    from generator.archive.history import History
    from generator.publish.site import edition_nav

    nav = yaml.safe_dump({"nav": edition_nav(History.load(workspace / "site_src"))})
    yml = workspace / "plain-mkdocs.yml"
    yml.write_text((ROOT / "mkdocs.yml").read_text().replace("site_name: Research Digest",
                                                             "site_name: Scale Digest") + nav)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(yml), "-d",
                    str(workspace / "plain-site")], check=True, cwd=workspace,
                   env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--editions", type=int, default=52)
    parser.add_argument("--papers", type=int, default=20)
    parser.add_argument("--runs", type=int, default=1,
                        help="time the project's build and the plain one N times, alternating")
    parser.add_argument("--no-full-nav", action="store_true",
                        help="skip the every-page-in-the-navigation build (over 14 min at 52)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        started = time.perf_counter()
        pages = generate(workspace, args.editions, args.papers)
        render_s = time.perf_counter() - started
        plains, builds = [], []
        for _ in range(args.runs):  # alternating, so both see the same machine
            plains.append(timed_plain_build(workspace))
            builds.append(timed_build(workspace, everything_in_nav=False))
        plain = statistics.median(plains)
        ours = statistics.median(b[0] for b in builds)
        ours_mb = max(b[1] for b in builds)
        size, html = site_size(workspace)
        index = (workspace / "site" / "search" / "search_index.json").stat().st_size
        nav_all = nav_all_mb = size_all = 0.0
        if not args.no_full_nav:
            nav_all, nav_all_mb = timed_build(workspace, everything_in_nav=True)
            size_all, _ = site_size(workspace)
        sample = json.loads((workspace / "site_src" / "editions" / "2026-01-05" /
                             "edition.json").read_text())
    print(f"Scale benchmark: {args.editions} editions x {args.papers} papers = {pages} Markdown "
          f"pages ({len(sample['completions'])} prompts an edition)")
    print(f"  render all editions (templates)         {render_s:7.1f} s")
    print(f"  site build, the project's navigation    {ours:7.1f} s   peak {ours_mb:4.0f} MiB   "
          f"{size / 2**20:6.1f} MiB, {size / html / 1024:5.1f} KiB a page")
    print(f"  plain mkdocs build, same docs and nav   {plain:7.1f} s   (median of {args.runs}; "
          f"digest site is "
          f"{ours / plain:.2f}x it; target <= 1.25)")
    if nav_all:
        print(f"  site build, every page in the nav       {nav_all:7.1f} s   peak "
              f"{nav_all_mb:4.0f} MiB   {size_all / 2**20:6.1f} MiB, "
              f"{size_all / html / 1024:5.1f} KiB a page")
        print(f"  every page in the nav / project         {nav_all / ours:7.2f}x time, "
              f"{size_all / size:.2f}x size")
    print(f"  {html} HTML pages; search index {index / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
