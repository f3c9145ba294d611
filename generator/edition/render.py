"""The pages of an edition: the assembled edition, formatted into Markdown pages through Jinja templates.

Templates only format: the edition (`model.Edition`) is complete before any of them runs, and
the filters here escape text for Markdown, never gather data. All pages of a run are rendered
in memory first (a template error writes nothing), checked for two pages claiming one path,
then written atomically. Full text never reaches a page or the record: arXiv's terms allow
linking to papers, not republishing them.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from .. import store
from ..archive.bibtex import bibtex_key, edition_bibtex
from ..archive.feed import atom_feed
from ..archive.lead import comparison, without_subject
from ..archive.news import News
from ..archive.paper_homes import paper_homes
from ..archive.question_record import QuestionRecord
from ..archive.record import EditionRecord, record_text
from ..archive.theme_pages import theme_pages, theme_slug
from ..errors import DigestError
from ..evidence.checks import KEY, MARKS, Standing
from ..evidence.claims import plain_sentence, sentences
from ..marks import MarkLinks
from ..papers import paper_slug
from ..store import Docs
from ..store.cache import atomic_write_text
from ..text import compiled
from ..text.safe_text import cut, excerpt, md_cell, md_text, page_title, plain, safe_url, tooltip
from .fold import fold_sections
from .model import VERDICT_LABELS, VERDICT_SHORT, Edition

log = logging.getLogger(__name__)


class TemplateError(DigestError):
    """A page template (the workspace's own, usually) is broken: named with its file and line."""

    exit_code = 2


def default_template_dir() -> Path:
    """The templates shipped with the package (or the repository's, when run from source)."""
    packaged = Path(str(resources.files("generator"))) / "_data" / "templates"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "templates"


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
        autoescape=False,  # Markdown, not HTML: the filters below do the escaping
    )
    env.filters.update(text=md_text, cell=md_cell, plain=plain, url=safe_url, tooltip=tooltip,
                       num=_num, cut=cut, suffix_headings=suffix_headings, cited=cited,
                       theme_slug=theme_slug, slug=paper_slug, comparison=comparison,
                       excerpt=excerpt, fold_sections=fold_sections, news=News.of,
                       bibtex_key=bibtex_key)
    # `marks`: where a reader's "more/less like this" goes (none unless [feedback] says).
    env.globals.update(labels=VERDICT_LABELS, short_labels=VERDICT_SHORT, marks=MarkLinks(),
                       key=KEY, evidence_marks=MARKS)
    env.filters.update(mark=mark_html)
    env.bytecode_cache = compiled.for_environment(env)  # each template compiled once a process
    if len(loaders) > 1:
        check_overrides(env, override)
    return env


def check_overrides(env: jinja2.Environment, folder: Path) -> None:
    """Compile every template of the workspace's `folder` now, so a broken override stops the
    run before any page is written, not weeks later when an edition first uses that partial."""
    for path in sorted(folder.rglob("*.j2")):
        name = path.relative_to(folder).as_posix()
        try:
            env.get_template(name)
        except jinja2.TemplateSyntaxError as err:
            raise TemplateError(f"the template {path}, line {err.lineno} has a syntax error: "
                                f"{err.message}; nothing was written") from err
        except (OSError, UnicodeDecodeError) as err:
            raise TemplateError(f"the template {path} cannot be read: {err}") from err


_HEADING_RE = re.compile(r"^(#{1,6} [^\n]*?)([ \t]*\{[^{}\n]*\})?[ \t]*$", re.MULTILINE)
_FENCE_RE = re.compile(r"^(`{3,}|~{3,})", re.MULTILINE)


def suffix_headings(markdown: str, suffix: str) -> str:
    """Every Markdown heading of `markdown` (outside code fences) with `suffix` added."""
    parts = _FENCE_RE.split(markdown)
    # split() alternates text, fence, text...: headings are only looked for outside fences.
    inside = False
    out = []
    for index, part in enumerate(parts):
        if index % 2:
            inside = not inside
            out.append(part)
        elif inside:
            out.append(part)
        else:
            out.append(_HEADING_RE.sub(lambda m: f"{m.group(1)}{suffix}{m.group(2) or ''}", part))
    return "".join(out)


def cited(text: str, record: EditionRecord, prefix: str = "", own: bool = False,
          subject: int | None = None, marked: bool = False) -> str:
    """Untrusted text citing "Paper N" as inline Markdown, each cited paper by its name and a
    link to its page in the edition (`own`: its own page across editions), under `prefix`.
    `subject`: a paper named just before the text, left out where the text opens with it
    ("FastKV: FastKV cuts..." reads "FastKV: cuts..."). `marked`: each sentence the edition
    checked followed by its mark, as where it was written (a sentence is never restated
    without its verdict)."""
    if marked and record.checks:
        pieces: list[str] = []
        for sentence, gap in sentences(text):
            check = record.check_of(plain_sentence(sentence)) if sentence.strip() else None
            said = cited(sentence, record, prefix, own, subject if not pieces else None)
            if check is not None:  # as where it was written: the mark before the stop
                stop = said[-1] if said.rstrip()[-1:] in ".!?" and said == said.rstrip() else ""
                said = f"{said[:len(said) - len(stop)]} {mark_html(check.standing)}{stop}"
            pieces.append(said + gap)
        return "".join(pieces)
    slugs = {p.number: p.base_slug if own else p.slug for p in record.papers}
    parts = record.cited_parts(text)
    if subject is not None:
        parts = without_subject(parts, subject)
    return "".join(
        f"[{plain(piece)}]({prefix}papers/{slugs[number]}.md)" if number in slugs
        else md_text(piece) for piece, number in parts)


def mark_html(standing: Standing) -> str:
    """A verdict's mark where a sentence is restated (the words and sign of `MARKS`, the
    classes of the mark after the sentence where it was written)."""
    mark = MARKS[standing]
    return (f'<span class="digest-ev digest-ev-{standing}" title="{mark.label}">'
            f'<span class="digest-ev-mark">{mark.text}</span></span>')


def _num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


def render_template(env: jinja2.Environment, name: str, **context: Any) -> str:
    """One template rendered; a broken template is one TemplateError naming its file and line."""
    try:
        return env.get_template(name).render(**context)
    except jinja2.TemplateSyntaxError as err:
        where = f"{err.filename or err.name or name}, line {err.lineno}"
        raise TemplateError(f"the template {where} has a syntax error: {err.message}") from err
    except jinja2.TemplateError as err:
        raise TemplateError(f"the template {_where(err, name)} failed: {err.message or err}") from err


def _where(err: Exception, name: str) -> str:
    """The template file and line an error was raised from, read off its traceback."""
    tb = err.__traceback__
    where = name
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(".j2"):
            where = f"{filename}, line {tb.tb_lineno}"
        tb = tb.tb_next
    return where


@dataclass(frozen=True)
class RenderedEdition:
    edition: str
    pages: dict[str, str]  # path relative to docs_dir -> Markdown or JSON text
    paper_homes: frozenset[str] = frozenset()  # every paper's own page the site should have
    theme_pages: frozenset[str] = frozenset()  # every theme's own page the site should have


def render_edition(env: jinja2.Environment, edition: Edition, published: Sequence[EditionRecord],
                   site_url: str = "", questions: Sequence[QuestionRecord] = ()
                   ) -> RenderedEdition:
    """Every page of one edition, its record, and the pages made from every edition's record
    (the home page, the feed, each paper's own page), keyed by path.

    Every title carries the edition, so browser tabs and bookmarks tell editions apart.
    """
    pages: dict[str, str] = {}
    name = edition.name

    def add(path: str, text: str, title: str | None = None, *, searched: bool = True) -> None:
        if path in pages:
            raise ValueError(f"two pages would be written to {path}")
        pages[path] = text if title is None else with_title(title, text, searched=searched)

    for page in edition.pages:
        add(store.edition_page(name, page.stem),
            render_template(env, page.template, edition=edition, page=page),
            f"{page.title} · {name}")
    add(store.edition_overview(name), render_template(env, "edition.md.j2", edition=edition),
        f"Edition {name}")
    add(store.edition_page(name, store.RUN_REPORT),
        render_template(env, "run_report.md.j2", edition=edition), f"Run report · {name}")
    add(store.edition_bibtex(name), edition_bibtex(edition.record))
    if edition.triage is not None:
        add(store.edition_page(name, store.TRIAGE),
            render_template(env, "triage.md.j2", edition=edition), f"Triage · {name}")
    for item in edition.papers:
        # The paper's own page (papers/<id>.md) is the one search finds; this one is the
        # paper as this edition saw it.
        add(store.paper_page(name, item.paper.slug),
            render_template(env, "paper.md.j2", edition=edition, item=item),
            f"{item.paper.title} · {name}", searched=False)
    records = sorted([r for r in published if r.edition != name] + [edition.record],
                     key=lambda r: r.edition, reverse=True)
    # Only this edition's papers: the others' pages depend on records that did not change.
    mine = {item.paper.base_id for item in edition.papers}
    since = edition.record.continuity
    if since:  # the earlier papers it follows up or found withdrawn: their pages say so
        mine |= {f.earlier for f in since.followups} | {w.base_id for w in since.withdrawn}
    # Only its themes' pages: the others' list editions whose records did not change.
    own = {theme_slug(t.name) for t in edition.record.themes}
    for path, text in front_pages(env, edition.title, records, site_url, mine, own,
                                  questions).items():
        add(path, text)
    if not (why := edition.record.not_rewritable):
        add(store.record(name), record_text(edition.record))
    else:  # rewriting it would take from the record what it holds
        log.warning("%s is kept as it is and only its pages are made again: %s",
                    store.record(name), why)
    for path, text in static_assets(env).items():
        add(path, text)
    return RenderedEdition(name, pages, all_paper_homes(records), all_theme_pages(records))


def front_pages(env: jinja2.Environment, title: str, records: Sequence[EditionRecord],
                site_url: str, papers: Collection[str] | None = None,
                themes: Collection[str] | None = None,
                questions: Sequence[QuestionRecord] = ()) -> dict[str, str]:
    """The pages made from every edition's record: the home page, the feed (newest edition
    first, then the published questions), the own pages of `papers` (ids without version;
    None: every paper) and those of `themes` (slugs; None: every theme)."""
    pages = {store.HOME: render_template(env, "home.md.j2", title=title, records=records),
             store.FEED: atom_feed(title, site_url, records, questions=questions),
             store.MARKS: with_title("How to read the marks",
                                     render_template(env, "marks.md.j2"))}
    for home in paper_homes(records, papers):
        pages[store.paper_home(home.paper.base_slug)] = with_title(
            home.paper.title, render_template(env, "paper_home.md.j2", home=home))
    for theme in theme_pages(records):
        if themes is not None and theme.slug not in themes:
            continue
        pages[store.theme_page(theme.slug)] = with_title(
            f"Theme: {theme.name}", render_template(env, "theme.md.j2", theme=theme))
    return pages


def all_theme_pages(records: Sequence[EditionRecord]) -> frozenset[str]:
    return frozenset(store.theme_page(t.slug) for t in theme_pages(records))


def all_paper_homes(records: Sequence[EditionRecord]) -> frozenset[str]:
    return frozenset(store.paper_home(p.base_slug) for r in records for p in r.papers)


def with_title(title: str, markdown: str, *, searched: bool = True) -> str:
    """The page with its title in front matter, HTML-escaped once (and, unless `searched`,
    kept out of the search index).

    MkDocs would otherwise take the title from the page's H1 and themes print it raw into
    <title>, the header and the navigation: an arXiv title like `</title><script>` would run.
    JSON is a subset of YAML's double-quoted scalars, so the value needs no further quoting.
    """
    value = json.dumps(page_title(title), ensure_ascii=False)
    search = "" if searched else "search:\n  exclude: true\n"
    return f"---\ntitle: {value}\n{search}---\n\n{markdown}"


def static_assets(env: jinja2.Environment) -> dict[str, str]:
    """Files under templates/assets/ (the workspace's first), copied as they are."""
    assert env.loader is not None
    return {name: env.loader.get_source(env, name)[0]
            for name in env.list_templates() if name.startswith("assets/")}


def write_pages(docs_dir: Path, rendered: RenderedEdition) -> None:
    """Write the pages atomically and drop pages a previous render of this edition left behind.

    The record goes first: a run stopped half-way leaves the edition's source with whatever
    pages it wrote, never pages without their source (which the next run would refuse)."""
    record = store.record(rendered.edition)
    for path in sorted(rendered.pages, key=lambda p: p != record):
        atomic_write_text(docs_dir / path, rendered.pages[path])
    edition_dir = Docs(docs_dir).edition_folder(rendered.edition)
    remove_stale(edition_dir, {docs_dir / p for p in rendered.pages})
    remove_stale(docs_dir / store.PAPERS, {docs_dir / p for p in rendered.paper_homes})
    remove_stale(docs_dir / store.THEMES, {docs_dir / p for p in rendered.theme_pages})


def write_front_pages(docs_dir: Path, pages: dict[str, str],
                      records: Sequence[EditionRecord]) -> None:
    """The pages made from every record, written after an edition left the site."""
    for path, text in pages.items():
        atomic_write_text(docs_dir / path, text)
    remove_stale(docs_dir / store.PAPERS, {docs_dir / p for p in all_paper_homes(records)})
    remove_stale(docs_dir / store.THEMES, {docs_dir / p for p in all_theme_pages(records)})


def remove_stale(folder: Path, wanted: set[Path]) -> None:
    """Drop the pages in `folder` that should not be there: an edition rendered again without
    a paper, or a paper whose every edition is gone."""
    for stale in folder.rglob("*.md"):
        if stale not in wanted:
            log.info("removing stale page %s", stale)
            stale.unlink()
