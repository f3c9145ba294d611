"""The conductor: triage → fetch → synthesize → render → site, reading top to bottom.

Every function that takes the config, the services and the run's history lives in this package,
one module per stage (fetch.py, synthesize.py, render.py, site.py, send.py, ask.py, doctor.py);
the packages below it are workers that never see the services. `run` calls the stages in order
with the run's one history of earlier editions. External services are built once, in
`services.make_services`, the only place that reads the environment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

from ..archive.history import History
from ..archive.news import News
from ..config import Config
from ..edition.render import make_environment
from ..errors import UsageError
from ..fetch.papers import OnText
from ..synthesis.batch import Observer, failed
from .fetch import fetch_stage, query_for, triage_stage
from .render import render_flagged, render_stage
from .services import Services, launch_advice_on_failure
from .site import site_stage
from .synthesize import all_cached, synthesize_stage


@dataclass(frozen=True)
class BuildReport:
    edition: str
    papers: int
    full_text: int
    missing_full_text: int
    failed_prompts: tuple[str, ...]
    sent_prompts: int
    site_dir: Path | None
    news: str = ""  # the edition's news as every surface counts it (archive/news.py)


def today() -> str:
    return datetime.now(UTC).date().isoformat()


# An edition is named by its date, optionally with a suffix for a second edition that day:
# names sort as dates, so the newest edition is always the latest.
EDITION_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:-[a-z0-9][a-z0-9-]{0,40})?", re.ASCII)


def check_edition(edition: str) -> str:
    """An edition name: a real date, optionally with a suffix (2026-12-02, 2026-12-02-special)."""
    match = EDITION_RE.fullmatch(edition)
    try:
        valid = match is not None and bool(date.fromisoformat(match.group(1)))
    except ValueError:
        valid = False
    if not valid:
        raise UsageError(
            f"invalid edition name {edition!r}: an edition is named by its date, such as "
            "2026-12-02, optionally with a suffix for a second edition that day "
            "(2026-12-02-special); editions sort by name, so the newest is the latest")
    return edition


def run(
    config: Config,
    services: Services,
    edition: str,
    *,
    refresh: bool = False,
    observer: Observer | None = None,
    on_text: OnText | None = None,
) -> BuildReport:
    """Run every stage for one edition (the caller holds the workspace lock)."""
    # Every record, read once for the run (this edition's own may be missing: it is remade).
    history = History.load(config.docs_dir, remaking=(edition,))
    history.check_complete()  # a missing record, or a broken template, stops it here
    make_environment(config.workspace)
    if not all_cached(config, services, edition, history):
        with launch_advice_on_failure(config, services):
            services.chat.check_ready()  # before arXiv is asked or anything is written
    stages = observer or Observer()
    triage = None
    if config.triage.enabled:
        stages.stage("triage: every paper of the window, scored against your interests")
        triage = triage_stage(config, services, query_for(config, edition, history),
                              None if refresh else services.cache.get_fetch(edition),
                              history.before(edition))
    stages.stage("fetch: arXiv search and full text")
    fetch = fetch_stage(config, services, edition, refresh=refresh, on_text=on_text,
                        history=history, triage=triage)
    stages.stage(f"synthesis: {services.chat.model} at {services.chat.base_url}")
    synthesis = synthesize_stage(config, services, edition, observer=observer,
                                 history=history)
    stages.stage("render: Markdown pages")
    record = render_stage(config, services.cache, edition, history=history,
                          only_if_changed=True)
    if record is not None:
        history = history.with_record(record)
        # Earlier editions citing a paper this one found withdrawn, or restored: rendered
        # again where their pages do not say so yet (their fingerprint tells).
        history = render_flagged(config, services.cache, record, history)
    stages.stage("site: MkDocs build and check")
    site_dir = site_stage(config, only_if_changed=True, history=history)
    if record is None:  # rendered before from the same inputs: its committed record says
        record = history.record_of(edition)
    statuses = [s.full_text.status for s in fetch.sources]
    return BuildReport(
        edition=edition,
        papers=len(fetch.sources),
        full_text=statuses.count("ok"),
        missing_full_text=statuses.count("missing"),
        failed_prompts=tuple(c.name for c in synthesis.completions if failed(c)),
        # Every request that went to the server, answered or not (a cached answer was not sent).
        sent_prompts=sum(1 for c in synthesis.completions if not c.from_cache),
        site_dir=site_dir,
        news=News.of(record).sentence if record.papers else "no papers",
    )
