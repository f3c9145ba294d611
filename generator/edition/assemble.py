"""Gather, then write: compute the whole edition in Python before any template runs.

Statuses against the earlier editions, briefs and themes from the structured answers, every
answer linked and its citations and figures checked, the pages that cite each paper, the run
figures and the published record: all of it is here, so a template that forgets something can
change how a page looks, never what the edition knows.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ..archive.feed import stamps
from ..archive.history import appearances, status
from ..archive.names import given_names, paper_names
from ..archive.overview import overview_text, without_preamble
from ..archive.prose import read_away
from ..archive.record import EditionRecord, Status
from ..archive.withdrawn import Sighting, withdrawn_now
from ..completions import Completion, PromptRequest
from ..evidence.checks import Standing
from ..evidence.claims import answer_claims
from ..evidence.naming import answer_names
from ..kinds import BRIEF, CHANGES, CONTINUE, EVIDENCE, JUDGE, THEMES, KindRegistry
from ..papers import NumberedPaper
from ..synthesis.structured import InvalidAnswer, parse_answer
from ..text.safe_text import md_model
from .charts import timeline, token_chart
from .citations import CitationLinker, PageCitations
from .compare import compare
from .continuity import continuity
from .facts import Checks, PaperFacts
from .inputs import EditionInputs
from .model import (
    Answer,
    Appearance,
    Brief,
    Citations,
    CitedIn,
    ClaimCheck,
    Edition,
    EditionPaper,
    EvidenceSpend,
    RunFigures,
    SynthesisPage,
    ThinkingSummary,
    TokenTotals,
)
from .picks import editors_picks
from .record_data import build_record

log = logging.getLogger(__name__)


def assemble(edition: str, title: str, inputs: EditionInputs, facts: PaperFacts,
             published: Sequence[EditionRecord], built_at: str | None = None,
             *, kinds: KindRegistry) -> Edition:
    """The edition, complete: `published` are the records of the other editions; `facts` what
    the papers' text says (from the text itself, or as the edition's record wrote it down);
    `kinds` the registry the run was given."""
    built_at = built_at or datetime.now(UTC).isoformat(timespec="seconds")
    others = [r for r in published if r.edition != edition]
    before = sorted((r for r in others if r.edition < edition), key=lambda r: r.edition,
                    reverse=True)
    prior = appearances(before)
    statuses = {p.number: status(p.paper, prior) for p in inputs.papers}
    withdrawn = _withdrawn(edition, inputs, others)
    pairs = inputs.synthesis.pairs()
    # The claims are checked in the answers as they came (their evidence requests numbered
    # them so); then long copies of a paper's full text are cut, once, for all that follows:
    # the values, pages and record below show the same cut answers.
    every_check = facts.checks(pairs)  # a comparison's "Disagrees:" lines included
    pairs, every_check = facts.uncopied(pairs, every_check)
    inputs = replace(inputs, synthesis=replace(inputs.synthesis,
                                               completions=tuple(c for _, c in pairs)))
    previous = next((r for r in published if r.edition == edition), None)
    structured, unparsed = _structured(inputs.papers, pairs, kinds, previous)
    briefs: dict[int, Brief] = dict(structured.get(BRIEF, ()))
    themes = [t for found in structured.get(THEMES, ()) for t in found]
    # A paper whose title gives no name may take one the answers gave it (where its own title
    # or abstract uses it): "SpliceLeak", not its whole title, in every link.
    nicknames = given_names((c.content for r, c in pairs if c.ok and kinds[r.kind].evidence),
                            (p.number for p in inputs.papers))
    names = paper_names(inputs.papers, {n: b.name for n, b in briefs.items()}, nicknames)
    checks = published_checks(inputs.papers, pairs, every_check, kinds, names)
    pages, answers = synthesis_pages(inputs.papers, pairs, structured, names, checks, facts, kinds,
                                     withdrawn)
    research_map = next((c.content for r, c in pairs if kinds[r.kind].overview and c.ok), "")
    overview = overview_text(research_map)  # named where it is shown (record.overview_parts)
    citing = Counter(n for page, _ in pages for n in page.citations.cited)
    picks = editors_picks(inputs.papers, names, briefs, citing, inputs.triage, facts,
                          _news(inputs.papers, statuses, prior,
                                inputs.triage.marked if inputs.triage else (), withdrawn),
                          [claim for page, _ in pages if kinds[page.kind].backs_picks
                           for claim in page.evidence or ()])
    comparison = next(((c.content, (every_check or {}).get(r.name)) for r, c in pairs
                       if r.kind == CHANGES and c.ok), None)
    since = continuity(inputs.papers, statuses, themes, before,
                       lambda earlier: facts.follow_ups(inputs.papers, statuses, earlier),
                       inputs.lookup, comparison) if before else None
    record = build_record(edition, title, inputs, facts, checks, statuses, overview,
                          names=names, briefs=briefs, themes=themes,
                          pages=[page for page, _ in pages], picks=picks,
                          structured=structured, built_at=built_at, kinds=kinds,
                          continuity=since)
    if previous is not None:  # what its file held that this version does not know stays
        record = record.keeping(previous)
        if unparsed:  # kinds whose values only the record still holds, in its own form
            record = replace(record, structured=record.structured | {
                k: previous.structured[k] for k in unparsed if k in previous.structured})
    if previous is not None and previous.same_but_date(record):
        # Rendered again with nothing changed: keep the date, so the site need not be rebuilt.
        record = replace(record, built_at=previous.built_at)
    # The feed's stamps move only when what its entry shows changes (not on `render --all`).
    record = replace(record, feed=stamps(record, previous))
    history = appearances(sorted([*others, record], key=lambda r: r.edition, reverse=True))
    papers = tuple(
        EditionPaper(
            number=item.number,
            paper=item.paper,
            name=names[item.number],
            full_text=item.full_text,
            excerpt_chars=item.excerpt_chars,
            status=statuses[item.number],
            brief=briefs.get(item.number),
            themes=tuple(t.name for t in themes if item.number in t.papers),
            cited_in=tuple(CitedIn(page.stem, page.title, tuple(contexts[item.number]))
                           for page, contexts in pages if item.number in contexts),
            appearances=tuple(Appearance(**a) for a in history.get(item.paper.base_id, [])),
            withdrawn=withdrawn.get(item.number, ""),
        )
        for item in inputs.papers)
    from_cache = sum(1 for _, c in pairs if c.from_cache)
    figures = RunFigures(
        bundle_chars=inputs.bundle.chars, bundle_tokens=inputs.bundle.estimated_tokens,
        bundle_note=inputs.bundle.note, wall_time_s=inputs.synthesis.wall_time_s,
        answers_from_cache=from_cache, answers=len(pairs), token_chart=token_chart(pairs),
        timeline=timeline(inputs.papers, statuses, withdrawn), evidence=_evidence_spend(pairs),
        judge=_evidence_spend(pairs, JUDGE), continued=_evidence_spend(pairs, CONTINUE))
    return Edition(
        name=edition, title=title, query=inputs.query, model=inputs.synthesis.model,
        papers=papers, pages=tuple(page for page, _ in pages), prompts=answers,
        themes=tuple(themes), skipped_seen=inputs.skipped, overview=overview, figures=figures,
        record=record, triage=inputs.triage, structured=structured)


def _withdrawn(edition: str, inputs: EditionInputs, others: Sequence[EditionRecord]
               ) -> dict[int, str]:
    """This edition's papers that are withdrawn now, with the notice: as the archive last saw
    each (this edition's lookup and versions, and every other edition's, a later one included,
    so a page rendered again shows a withdrawal found since, or a restoration)."""
    now = withdrawn_now(others, Sighting.of_run(edition, inputs.lookup, inputs.papers))
    return {p.number: now[p.paper.base_id].notice for p in inputs.papers
            if p.paper.base_id in now}


def _news(papers: Sequence[NumberedPaper], statuses: Mapping[int, Status],
          prior: Mapping[str, list[dict[str, str]]], marked: Collection[str] = (),
          withdrawn: Collection[int] = ()) -> dict[int, str]:
    """The papers a pick may be (new, or covered before in another version), each with what
    changed: a paper seen before in this very version is never news again, a paper the reader
    marked is never picked (they have read it), nor one arXiv lists as withdrawn."""
    news = {}
    for item in papers:
        if item.paper.base_id in marked or item.number in withdrawn:
            continue
        if statuses[item.number] == "new":
            news[item.number] = ""
        elif statuses[item.number] == "updated":
            last = max(prior[item.paper.base_id], key=lambda seen: seen["edition"])
            news[item.number] = (f"{item.paper.arxiv_id} replaces {last['arxiv_id']}, "
                                 f"covered in edition {last['edition']}")
    return news


def _structured(papers: Sequence[NumberedPaper],
                pairs: list[tuple[PromptRequest, Completion]], kinds: KindRegistry,
                previous: EditionRecord | None = None
                ) -> tuple[dict[str, tuple[Any, ...]], set[str]]:
    """Each structured kind's answers as the typed values its spec parses them into, by kind
    (briefs as (paper, brief) pairs, theme maps as tuples of themes, a new kind's its own),
    and the kinds of answers that no longer parse and whose values the edition's `previous`
    record holds only in its own form (the caller keeps those in the new record).

    An answer that no longer parses (a hand edit, a stricter parser) keeps what the record
    made of it before: a render never takes from a record what it held."""
    numbers = frozenset(p.number for p in papers)
    found: dict[str, list[Any]] = {}
    unparsed: set[str] = set()
    for request, completion in pairs:
        spec = kinds.get(request.kind)
        if not completion.ok or spec is None or spec.parse is None or spec.schema is None:
            continue  # prose, a failure, or a follow-up checked with its answer (_evidence)
        try:
            data = parse_answer(completion.content, spec.schema)
            value = spec.parse(data, request, numbers)
        except (InvalidAnswer, KeyError, TypeError, ValueError) as err:
            kept = (spec.from_record(previous, request) if previous is not None
                    and spec.from_record is not None else None)
            if kept is None:
                log.warning("the answer to %s does not parse (%s): its values are left out",
                            request.name, err)
                unparsed.add(request.kind)
                continue
            log.warning("the answer to %s does not parse (%s): what the edition's record made "
                        "of it is kept", request.name, err)
            value = kept
        found.setdefault(request.kind, []).append(value)
    return {kind: tuple(values) for kind, values in found.items()}, unparsed


def published_checks(papers: Sequence[NumberedPaper],
                     pairs: Sequence[tuple[PromptRequest, Completion]], checks: Checks | None,
                     kinds: KindRegistry, names: Mapping[int, str] | None = None
                     ) -> Checks | None:
    """The checks of the sentences each answer publishes: a line an answer writes for the
    digest alone (a comparison's "Disagrees:" line, read into a typed disagreement) and a
    sentence the pages drop for reading (a paper agreeing with itself once `names` make its
    citations names, prose.read_away) are neither shown nor counted as a claim, nor kept
    among the record's checks."""
    if checks is None:
        return None
    titles = {p.number: p.paper.title for p in papers}
    answers = {request.name: completion.content for request, completion in pairs
               if completion.ok}
    kept = {}
    for name, found in checks.items():  # by the names the page's linker reads too
        given = answer_names(answers[name], titles) if name in answers else {}
        kept[name] = tuple(c for c in found if not read_away(c.sentence, names or {}, given))
    for request, completion in pairs:
        spec = kinds.get(request.kind)
        if spec is None or request.name not in kept or not completion.ok:
            continue
        shown = without_preamble(spec.published(completion.content))
        if shown != completion.content:
            sentences = {c.sentence for c in answer_claims(shown, titles, spec.shift)}
            kept[request.name] = tuple(c for c in kept[request.name] if c.sentence in sentences)
    return kept


def synthesis_pages(
    papers: Sequence[NumberedPaper], pairs: list[tuple[PromptRequest, Completion]],
    structured: Mapping[str, tuple[Any, ...]], names: Mapping[int, str],
    evidence: Checks | None, facts: PaperFacts, kinds: KindRegistry,
    withdrawn: Mapping[int, str], link_prefix: str = "papers/",
    links: Mapping[int, str] | None = None, marks_page: str = "../../marks.md",
) -> tuple[list[tuple[SynthesisPage, dict[int, list[tuple[str, Standing | None]]]]],
           tuple[Answer, ...]]:
    """Each synthesis page with its answers linked and checked, and every prompt's answer;
    citations link `link_prefix` + the paper's slug (a question's page links the papers' own
    pages), or `links`' address for a paper where it has one.

    A structured kind's page shows its typed values (`page.values`), never its JSON."""
    linkers: dict[str, CitationLinker] = {}
    titles = {p.number: p.paper.title for p in papers}
    grouped: dict[str, list[Answer]] = {}
    checks: dict[str, list[ClaimCheck]] = {}
    answers: list[Answer] = []
    for request, completion in pairs:
        stem = kinds.page_stem(request)
        if stem is None:
            answers.append(Answer(request, completion, "", "", follows=kinds[request.kind].follows))
            continue
        linker = linkers.setdefault(stem, CitationLinker(stem, papers, link_prefix, names=names,
                                                         facts=facts, withdrawn=withdrawn,
                                                         links=links, marks_page=marks_page))
        shift = kinds[request.kind].shift
        if kinds[request.kind].schema is not None:
            answer = Answer(request, completion, "", "")
            answers.append(answer)
            grouped.setdefault(stem, []).append(answer)
            continue
        # The reasoning first, as the page reads: its citations are found in that order. The
        # names the answer cites papers by are linked in both (its claims use them too).
        linker.names = answer_names(completion.content, titles)
        linker.evidence = None
        reasoning = md_model(completion.reasoning, shift, linker) if completion.ok else ""
        verdicts = evidence.get(request.name) if evidence is not None else None
        linker.evidence = {c.sentence: c for c in reversed(verdicts or ())}
        shown = without_preamble(kinds[request.kind].published(completion.content))
        linked = md_model(shown, shift, linker) if completion.ok else ""
        if evidence is not None:
            checks.setdefault(stem, []).extend(verdicts or ())
        answer = Answer(request, completion, linked, reasoning)
        answers.append(answer)
        grouped.setdefault(stem, []).append(answer)
    pages = []
    numbers = frozenset(p.number for p in papers)
    for stem, group in grouped.items():
        first = group[0].request
        spec = kinds[first.kind]
        assert spec.template is not None
        result = linkers[stem].result
        title = first.page_title or first.title
        pages.append((SynthesisPage(
            stem=stem, kind=first.kind, title=title, heading=spec.heading.format(title=title),
            question=first.question, template=spec.template, answers=tuple(group),
            citations=_frozen(result),
            # One question asked without and then with thinking: the comparison's figures.
            thinking=_thinking(group, numbers, checks.get(stem, [])
                               if evidence is not None else None)
            if len(group) == 2 and not first.thinking and group[1].request.thinking else None,
            # A kind whose claims are not checked is never shown as checked (with 0 claims).
            evidence=tuple(checks.get(stem, ())) if evidence is not None
            and any(kinds[a.request.kind].evidence for a in group) else None,
            values=structured.get(first.kind, ()) if spec.schema is not None else (),
        ), result.contexts))
    return pages, tuple(answers)


def _evidence_spend(pairs: list[tuple[PromptRequest, Completion]], kind: str = EVIDENCE
                    ) -> EvidenceSpend | None:
    """What the requests of `kind` cost: the evidence checks, or the judgements of quotes."""
    checks = [c for r, c in pairs if r.kind == kind]
    if not checks:
        return None
    tokens = TokenTotals.of(checks)
    return EvidenceSpend(
        requests=len(checks), failed=sum(1 for c in checks if not c.ok),
        prompt_tokens=tokens.prompt_tokens, cached_tokens=tokens.cached_tokens,
        completion_tokens=tokens.completion_tokens)


def _frozen(result: PageCitations) -> Citations:
    return Citations(
        cited=dict(sorted(result.cited.items())),
        problems=tuple(result.problems), figures=tuple(result.figures))


def _thinking(pair: Sequence[Answer], papers: Collection[int],
              checks: Sequence[ClaimCheck] | None) -> ThinkingSummary:
    """The comparison of one question answered without and with thinking."""
    off, on = pair
    return replace(thinking_summary(off.completion, on.completion), compared=compare(
        (off.request.name, off.completion.content), (on.request.name, on.completion.content),
        papers, checks))


def thinking_summary(off: Completion, on: Completion) -> ThinkingSummary:
    """Token and word figures that compare the two answers to the hard question."""

    def words(text: str) -> int:
        return len(text.split())

    on_tokens = on.usage.completion_tokens if on.ok else None
    off_tokens = off.usage.completion_tokens if off.ok else None
    reasoning_tokens = on.usage.reasoning_tokens
    if reasoning_tokens is None and on_tokens is not None and on.reasoning:
        # Not reported: estimate from the share of words spent reasoning.
        total_words = words(on.reasoning) + words(on.content)
        if total_words:
            reasoning_tokens = round(on_tokens * words(on.reasoning) / total_words)
    # Unknown where the server did not report either count (never a 0 that was not counted).
    extra = on_tokens - off_tokens if on_tokens is not None and off_tokens is not None else None
    return ThinkingSummary(
        off_completion=off_tokens,
        on_completion=on_tokens,
        reasoning_tokens=reasoning_tokens,
        reasoning_estimated=on.usage.reasoning_tokens is None and reasoning_tokens is not None,
        off_words=words(off.content),
        on_words=words(on.content),
        reasoning_words=words(on.reasoning),
        extra_tokens=extra,
        ratio=on_tokens / off_tokens if on_tokens is not None and off_tokens else None,
    )
