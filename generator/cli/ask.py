"""`digest ask`: a question answered from every committed edition, each citing sentence checked.

Part of the CLI layer: the stage is `generator.pipeline.ask`, the pages `generator.ask.pages`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..archive.question_record import QuestionRecord
from ..ask.pages import publish_question, terminal_answer
from ..pipeline.ask import Asked, ask_stage
from ..pipeline.services import make_services, workspace_cache
from .common import (
    IsoDate,
    config_option,
    environment,
    read_config,
    user_errors,
    verbose_option,
    wait_for,
    wait_option,
    workspace_lock,
)
from .progress import Progress


@click.command()
@verbose_option
@config_option
@click.argument("question")
@click.option("--since", type=IsoDate(), default="", metavar="DATE",
              help="Only editions from this date on (YYYY-MM-DD: 2026-09-01).")
@click.option("--until", type=IsoDate(), default="", metavar="DATE",
              help="Only editions up to this date (YYYY-MM-DD).")
@click.option("--papers", type=click.IntRange(1, 40), default=None, metavar="N",
              help="Read the N most relevant papers (default: [ask] papers, 8).")
@click.option("--publish", is_flag=True,
              help="Keep the question and its answer (questions/<slug>.json) and write its "
                   "page under Questions, in the navigation and the feed.")
@click.option("--json", "as_json", is_flag=True, help="Print the typed answer as JSON.")
@wait_option
def ask(config_path: str, question: str, since: str, until: str, papers: int | None,
        publish: bool, as_json: bool, wait_s: float) -> None:
    """Answer QUESTION from every edition of the archive, with checked quotes.

    The archive's index (in the cache, rebuilt from the records at will) finds the most
    relevant papers; the configured server answers over what the archive holds for them, and
    every sentence that cites a paper is checked against it. Nothing relevant: nothing is sent.

    \b
    Example:
        digest ask "what have we seen on speculative decoding, and do the papers agree?"
        digest ask "KV-cache eviction" --since 2026-09-01 --publish && digest site
    """
    if since and until and since > until:
        raise click.BadParameter(f"{until} is before --since {since}: no edition can be in "
                                 "that window", param_hint="'--until'")
    with user_errors():
        config = read_config(config_path)
        cache = workspace_cache(config)
        services = make_services(config, environment(), cache)
        progress = Progress()
        # Questions are answered side by side (a read lock); a build still excludes them.
        with workspace_lock(cache, shared=True):
            try:
                wait_for(services, wait_s)
                asked = ask_stage(config, services, question, since=since, until=until,
                                  papers=papers, observer=progress)
            finally:
                progress.close()
            answered = asked.record is not None and asked.record.answer.completion.ok
            published: list[str] = []
            if publish and answered and asked.record is not None:
                # A failed answer is never published: the page would be an error message.
                with cache.questions_lock():
                    published = publish_question(config, asked.record)
        record = asked.record
        if as_json:
            click.echo(json.dumps(answer_json(asked, published), indent=2, ensure_ascii=False))
        elif record is None:
            click.echo(asked.nothing)
        else:
            click.echo(terminal_answer(record))
            click.echo(f"\n{asked.requests_sent} request(s) sent"
                       + (", the rest from the cache" if asked.result and
                          asked.requests_sent < len(asked.result.completions) else "") + ".")
            if published:
                click.echo(f"Published: {config.docs_dir / published[1]} (run `digest site`).")
        if record is not None and not record.answer.completion.ok:
            if publish:
                click.echo("Nothing was published: the answer failed (ask again; what "
                           "arrived is cached).", err=True)
            sys.exit(1)


def answer_json(asked: Asked, published: list[str]) -> dict[str, Any]:
    """The answer for scripts: the question, the papers, the answer and each checked claim."""
    record: QuestionRecord | None = asked.record
    if record is None:
        return {"answered": False, "why": asked.nothing, "requests_sent": 0}
    completion = record.answer.completion
    figure = record.evidence_figure
    return {
        "answered": completion.ok, "question": record.question, "asked_at": record.asked_at,
        "model": record.model, "server": record.server,
        "editions_read": list(record.editions_read),
        "papers": [{"number": p.number, "arxiv_id": p.arxiv_id, "name": p.name,
                    "title": p.title, "editions": list(p.editions), "abs_url": p.abs_url,
                    "withdrawn": p.withdrawn or None} for p in record.papers],
        "answer": completion.content, "error": completion.error or None,
        "claims": [{"sentence": c.sentence, "papers": list(c.papers),
                    "verdict": c.mark.code, "mark": c.mark.text,
                    "quotes": [{"paper": q.paper, "quote": q.quote,
                                "found": q.verdict == "supported", "note": q.note}
                               for q in c.quotes if c.papers],
                    "judgement": ({"support": c.judgement.support, "reason": c.judgement.reason}
                                  if c.judgement else None),
                    "phantoms": list(c.phantoms), "note": c.note}
                   for c in record.checks or ()],
        "evidence": ({"claims": figure.claims, "backed": figure.backed, "partly": figure.partly,
                      "not_supported": figure.unbacked, "quote_found": figure.unjudged,
                      "problems": figure.problems, "not_checked": figure.unchecked,
                      "sentence": figure.sentence} if figure else None),
        "requests_sent": asked.requests_sent,
        "published": published[1] if published else None,
    }
