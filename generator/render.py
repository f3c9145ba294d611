"""The render stage: Markdown pages through Jinja templates, plus each edition's record.

All pages of a run are rendered in memory first (a template error writes nothing), checked for
two pages claiming one path, then written atomically. Full text never reaches a page or the
record: arXiv's terms allow linking to papers, not republishing them.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from . import __version__
from .cache import atomic_write_text
from .charts import timeline, token_chart
from .citations import CitationLinker, PageCitations
from .feed import atom_feed, overview_text
from .history import appearances, earlier, status
from .models import STRUCTURED_KINDS, Bundle, Completion, FetchResult, PromptRequest, SynthesisResult
from .safe_text import clean, md_cell, md_model, md_text, page_title, plain, safe_url, tooltip
from .structured import SCHEMAS, InvalidAnswer, parse_answer

log = logging.getLogger(__name__)

# An edition is named by its date, optionally with a suffix for a second edition that day:
# names sort as dates, so the newest edition is always the latest.
EDITION_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:-[a-z0-9][a-z0-9-]{0,40})?")
RECORD_FORMAT = 1


def default_template_dir() -> Path:
    """The templates shipped with the package (or the repository's, when run from source)."""
    packaged = Path(str(resources.files("generator"))) / "_data" / "templates"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "templates"


def make_environment(workspace: Path) -> jinja2.Environment:
    """Templates from the workspace's templates/ folder first, then the defaults."""
    loaders: list[jinja2.BaseLoader] = []
    override = workspace / "templates"
    if override.is_dir() and override.resolve() != default_template_dir().resolve():
        loaders.append(jinja2.FileSystemLoader(override))
    loaders.append(jinja2.FileSystemLoader(default_template_dir()))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.do"],
        autoescape=False,  # Markdown, not HTML: the filters below do the escaping
    )
    env.tests["contains"] = lambda seq, item: item in seq
    env.filters.update(text=md_text, cell=md_cell, model=_model, plain=plain, url=safe_url, tooltip=tooltip,
                       words=lambda s: len(str(s).split()), num=_num)
    return env


def _model(text: str, shift: int = 1, linker: CitationLinker | None = None) -> str:
    return md_model(text, shift, linker)


def _num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


@dataclass(frozen=True)
class RenderedEdition:
    edition: str
    pages: dict[str, str]  # path relative to docs_dir -> Markdown or JSON text


def edition_record(
    edition: str, title: str, fetch: FetchResult, bundle: Bundle, synthesis: SynthesisResult
) -> dict[str, Any]:
    """edition.json: what was fetched and asked, with figures, and never any full text."""
    return {
        "format": RECORD_FORMAT,
        "edition": edition,
        "title": title,
        "query": fetch.query,
        "fetched_at": fetch.fetched_at,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "generator": f"research-digest {__version__}",
        "model": synthesis.model,
        "bundle": {"chars": bundle.chars, "estimated_tokens": bundle.estimated_tokens},
        "synthesis_wall_time_s": synthesis.wall_time_s,
        "papers": [
            {
                "number": p.number,
                "arxiv_id": p.paper.arxiv_id,
                "base_id": p.paper.base_id,
                "slug": p.paper.slug,
                "title": p.paper.title,
                "authors": list(p.paper.authors),
                "published": p.paper.published,
                "categories": list(p.paper.categories),
                "abstract": p.paper.abstract,
                "abs_url": p.paper.abs_url,
                "pdf_url": p.paper.pdf_url,
                "full_text": {
                    "status": p.full_text.status,
                    "reason": p.full_text.reason,
                    "pages": p.full_text.pages,
                    "total_pages": p.full_text.total_pages,
                    "excerpt_chars": p.excerpt_chars,
                },
            }
            for p in bundle.papers
        ],
        "completions": [
            {
                "name": r.name,
                "title": r.title,
                "kind": r.kind,
                "page": f"{page_name(r)}.md" if page_name(r) else None,
                "thinking": r.thinking,
                "max_tokens": r.max_tokens,
                "temperature": r.temperature,
                "model": c.model,
                "usage": c.usage.to_dict(),
                "latency_s": c.latency_s,
                "ttft_s": c.ttft_s,
                "finish_reason": c.finish_reason,
                "truncated": c.truncated,
                "error": c.error,
                "from_cache": c.from_cache,
            }
            for r, c in synthesis.pairs()
        ],
    }


def page_name(request: PromptRequest) -> str | None:
    """The file stem of the page that shows a request's answer (both thinking runs share one);
    None for structured answers, which appear inside other pages."""
    if request.kind in STRUCTURED_KINDS:
        return None
    return "thinking" if request.kind == "thinking" else request.name


def structured_answers(bundle: Bundle, pairs: list[tuple[PromptRequest, Completion]]
                       ) -> tuple[dict[int, dict[str, str]], list[dict[str, Any]]]:
    """The validated briefs (by paper number) and themes (paper numbers in the bundle only)."""
    numbers = {p.number for p in bundle.papers}
    briefs: dict[int, dict[str, str]] = {}
    themes: list[dict[str, Any]] = []
    for request, completion in pairs:
        if not completion.ok or request.kind not in STRUCTURED_KINDS:
            continue
        try:
            data = parse_answer(completion.content, SCHEMAS[request.kind])
        except InvalidAnswer as err:
            log.warning("ignoring the cached %s: %s", request.name, err)
            continue
        if request.kind == "brief":
            briefs[int(request.name.removeprefix("brief-"))] = data
        else:
            themes = [theme | {"papers": sorted({n for n in theme["papers"] if n in numbers})}
                      for theme in data["themes"]]
    return briefs, themes


def render_edition(
    env: jinja2.Environment,
    edition: str,
    title: str,
    fetch: FetchResult,
    bundle: Bundle,
    synthesis: SynthesisResult,
    published: list[dict[str, Any]],
    bundle_note: str = "",
    site_url: str = "",
) -> RenderedEdition:
    """Every page of one edition plus the home page, as text keyed by path."""
    record = edition_record(edition, title, fetch, bundle, synthesis)
    record["bundle"]["note"] = bundle_note
    research_map = next((c.content for r, c in synthesis.pairs()
                         if r.kind == "research_map" and c.ok), "")
    record["overview"] = overview_text(research_map)
    records = sorted([r for r in published if r["edition"] != edition] + [record],
                     key=lambda r: str(r["edition"]), reverse=True)
    history = appearances(records)
    prior = appearances(earlier(records, edition))
    statuses = {p.number: status(p.paper, prior) for p in bundle.papers}
    for paper in record["papers"]:
        paper["status"] = statuses[paper["number"]]
    record["skipped_seen"] = list(fetch.skipped)
    pages: dict[str, str] = {}

    def add(path: str, text: str, page_title: str | None = None) -> None:
        if path in pages:
            raise ValueError(f"two pages would be written to {path}")
        pages[path] = text if page_title is None else with_title(page_title, text)

    base = f"editions/{edition}"
    pairs = synthesis.pairs()
    common = {"edition": edition, "title": title, "record": record, "bundle": bundle,
              "statuses": statuses}
    by_name = {r.name: (r, c) for r, c in pairs}
    linkers: dict[str, CitationLinker] = {}
    page_titles = {name: ("Thinking comparison" if r.kind == "thinking" else r.title)
                   for r, _ in pairs if (name := page_name(r))}
    common["page_titles"] = page_titles
    briefs, themes = structured_answers(bundle, pairs)
    common["briefs"], common["themes"] = briefs, themes
    record["briefs"] = {str(n): b for n, b in briefs.items()}
    record["themes"] = themes

    def linker(page: str) -> CitationLinker:
        return linkers.setdefault(page, CitationLinker(page, bundle.papers))

    # Synthesis pages first: linking their citations collects what the other pages show.
    for request, completion in pairs:
        if request.kind in ("research_map", "deep_dive"):
            template = "research_map.md.j2" if request.kind == "research_map" else "deep_dive.md.j2"
            add(f"{base}/{request.name}.md", env.get_template(template).render(
                **common, request=request, completion=completion, linker=linker(request.name)),
                request.title if request.kind == "research_map" else f"Deep dive: {request.title}")
    if "thinking-off" in by_name and "thinking-on" in by_name:
        off, on = by_name["thinking-off"], by_name["thinking-on"]
        add(f"{base}/thinking.md", env.get_template("thinking.md.j2").render(
            **common, off=off, on=on, summary=thinking_summary(off[1], on[1]),
            linker=linker("thinking")), "Thinking comparison")

    citations = {page: each.result for page, each in linkers.items()}
    numbered = {p.number: p for p in bundle.papers}
    record["citations"] = {page: c.to_dict(numbered) for page, c in citations.items()}
    common["citations"] = citations
    common["token_chart"] = token_chart(pairs)
    common["timeline"] = timeline(bundle.papers)
    add(f"{base}/index.md", env.get_template("edition.md.j2").render(
        **common, pairs=pairs, page_name=page_name, failed=[(r, c) for r, c in pairs if not c.ok],
        problems=[(page, p) for page, c in citations.items() for p in c.problems],
        figures=[(page, f) for page, c in citations.items() for f in c.figures]),
        f"{title}: edition {edition}")
    for item in bundle.papers:
        add(f"{base}/papers/{item.paper.slug}.md", env.get_template("paper.md.j2").render(
            **common, item=item, appearances=history.get(item.paper.base_id, []),
            cited_in=cited_in(citations, item.number)), item.paper.title)
    for path, text in front_pages(env, title, records, site_url).items():
        add(path, text)
    add(f"{base}/edition.json", json.dumps(_cleaned(record), indent=2, ensure_ascii=False) + "\n")
    for path, text in static_assets(env).items():
        add(path, text)
    return RenderedEdition(edition, pages)


def front_pages(env: jinja2.Environment, title: str, records: list[dict[str, Any]],
                site_url: str) -> dict[str, str]:
    """The home page and the feed, which list every edition (newest first)."""
    return {"index.md": env.get_template("home.md.j2").render(
                title=title, records=records, description=""),
            "feed.xml": atom_feed(title, site_url, records)}


def _cleaned(value: Any) -> Any:
    """A record with every string cleaned (text from a cache an older version wrote, too)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {k: _cleaned(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cleaned(v) for v in value]
    return value


def with_title(title: str, markdown: str) -> str:
    """The page with its title in front matter, HTML-escaped once.

    MkDocs would otherwise take the title from the page's H1 and themes print it raw into
    <title>, the header and the navigation: an arXiv title like `</title><script>` would run.
    JSON is a subset of YAML's double-quoted scalars, so the value needs no further quoting.
    """
    value = json.dumps(page_title(title), ensure_ascii=False)
    return f"---\ntitle: {value}\n---\n\n{markdown}"


def static_assets(env: jinja2.Environment) -> dict[str, str]:
    """Files under templates/assets/ (the workspace's first), copied as they are."""
    assert env.loader is not None
    return {name: env.loader.get_source(env, name)[0]
            for name in env.list_templates() if name.startswith("assets/")}


def cited_in(citations: dict[str, PageCitations], number: int) -> list[tuple[str, list[str]]]:
    """For one paper: each synthesis page that cites it, with the sentences around the citations."""
    return [(page, c.contexts[number]) for page, c in citations.items() if number in c.contexts]


def thinking_summary(off: Completion, on: Completion) -> dict[str, Any]:
    """Token and word figures that compare the two answers to the hard question."""

    def words(text: str) -> int:
        return len(text.split())

    reasoning_tokens = on.usage.reasoning_tokens
    if reasoning_tokens is None and on.ok and on.reasoning:
        # Not reported: estimate from the share of words spent reasoning.
        total_words = words(on.reasoning) + words(on.content)
        if total_words:
            reasoning_tokens = round(on.usage.completion_tokens * words(on.reasoning) / total_words)
    extra = (on.usage.completion_tokens - off.usage.completion_tokens) if off.ok and on.ok else None
    return {
        "off_completion": off.usage.completion_tokens if off.ok else None,
        "on_completion": on.usage.completion_tokens if on.ok else None,
        "reasoning_tokens": reasoning_tokens,
        "reasoning_estimated": on.usage.reasoning_tokens is None and reasoning_tokens is not None,
        "off_words": words(off.content),
        "on_words": words(on.content),
        "reasoning_words": words(on.reasoning),
        "extra_tokens": extra,
        "ratio": (on.usage.completion_tokens / off.usage.completion_tokens
                  if extra is not None and off.usage.completion_tokens else None),
    }


def write_pages(docs_dir: Path, rendered: RenderedEdition) -> None:
    """Write the pages atomically and drop pages a previous render of this edition left behind."""
    for path, text in rendered.pages.items():
        atomic_write_text(docs_dir / path, text)
    edition_dir = docs_dir / "editions" / rendered.edition
    wanted = {docs_dir / p for p in rendered.pages}
    for stale in edition_dir.rglob("*.md"):
        if stale not in wanted:
            log.info("removing stale page %s", stale)
            stale.unlink()
