"""What only the papers' text can tell an edition: whether a paper states a figure, and what
the quotes given as evidence show. Asked of `TextFacts` when the text is at hand (a build, with
its cache), each answer is written down, and the record replays them as `RecordedFacts`, so a
render from the record alone makes the very same pages without the text (which is never
published)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from ..archive.record import EditionRecord, RecordPaper, Status
from ..archive.record_parts import FigureFact
from ..archive.values import FollowUp
from ..completions import Completion, PromptRequest
from ..evidence.checks import ClaimCheck, Judgement, decided
from ..evidence.claims import Claim, answer_claims, figure_in
from ..evidence.judge import verdicts
from ..evidence.quotes import PaperText, check_claims
from ..evidence.requests import ALONE_TITLE
from ..evidence.verbatim import FullTexts, json_like
from ..kinds import EVIDENCE, JUDGE, KindRegistry
from ..papers import NumberedPaper
from .continuity import find_follow_ups

log = logging.getLogger(__name__)

Checks = dict[str, tuple[ClaimCheck, ...]]


class PaperFacts(Protocol):
    """The questions the edition asks of its papers' text."""

    def states(self, number: int, figure: str, unit: str) -> bool:
        """Whether Paper `number`'s title, abstract or excerpt states `figure` in `unit`."""
        ...

    def checks(self, pairs: Sequence[tuple[PromptRequest, Completion]]) -> Checks | None:
        """Each checked answer's claims with their verdicts, by request name; None when the
        edition asked for no evidence."""
        ...

    def recorded(self) -> tuple[FigureFact, ...]:
        """Every figure asked about, with the answer, for the record."""
        ...

    def uncopied(self, pairs: Sequence[tuple[PromptRequest, Completion]],
                 checks: Checks | None
                 ) -> tuple[list[tuple[PromptRequest, Completion]], Checks | None]:
        """The answers as they are recorded and published: every long copy of a paper's full
        text cut (evidence/verbatim.py), and the checks of the sentences a cut took dropped."""
        ...

    def follow_ups(self, papers: Sequence[NumberedPaper], statuses: Mapping[int, Status],
                   earlier: Sequence[tuple[RecordPaper, str]]) -> tuple[FollowUp, ...]:
        """The new papers that name an earlier edition's paper in their text."""
        ...


class TextFacts:
    """The facts from the papers' text itself, each answer kept for the record."""

    def __init__(self, papers: Sequence[NumberedPaper],
                 kinds: KindRegistry | None = None) -> None:
        """`kinds`: the run's registry, which says whose claims are checked (a linker or a
        pick that only asks what a paper states needs none)."""
        self._papers = {p.number: p for p in papers}
        self._titles = {p.number: p.paper.title for p in papers}
        self._kinds = kinds
        self._texts = {p.number: f"{p.paper.title}\n{p.paper.abstract}\n{p.paper.comment}\n"
                                 f"{p.full_text.text}" for p in papers}
        self.figures: dict[tuple[int, str, str], bool] = {}

    def states(self, number: int, figure: str, unit: str) -> bool:
        key = (number, figure, unit)
        if key not in self.figures:
            self.figures[key] = figure_in(figure, unit, self._texts.get(number, ""))
        return self.figures[key]

    def checks(self, pairs: Sequence[tuple[PromptRequest, Completion]]) -> Checks | None:
        if self._kinds is None:
            raise TypeError("TextFacts checks claims only with the run's registry of kinds")
        batches: dict[str, list[tuple[tuple[int, ...], Completion]]] = {}
        judged: dict[str, list[tuple[tuple[int, ...], Completion]]] = {}
        alone: dict[str, set[int]] = {}  # claims checked without their answer's conversation
        for request, completion in pairs:
            if request.kind == EVIDENCE and request.parent:
                batches.setdefault(request.parent, []).append((request.claims, completion))
                if ALONE_TITLE in request.title:
                    alone.setdefault(request.parent, set()).update(request.claims)
            elif request.kind == JUDGE and request.parent:
                judged.setdefault(request.parent, []).append((request.claims, completion))
        if not batches:
            return None
        texts = {n: PaperText.of(p) for n, p in self._papers.items()}
        found: Checks = {}
        for request, completion in pairs:
            spec = self._kinds[request.kind]
            if not (spec.evidence and completion.ok):
                continue
            claims = answer_claims(completion.content, self._titles, spec.shift)
            checks = check_claims(claims, batches.get(request.name, []), texts,
                                  alone.get(request.name, ()))
            found[request.name] = decided(_with_ids(request.name, claims, with_judgements(
                claims, checks, judged.get(request.name, []))))
        return found

    def recorded(self) -> tuple[FigureFact, ...]:
        return tuple(FigureFact(n, figure, unit, found)
                     for (n, figure, unit), found in sorted(self.figures.items()))

    def uncopied(self, pairs: Sequence[tuple[PromptRequest, Completion]],
                 checks: Checks | None
                 ) -> tuple[list[tuple[PromptRequest, Completion]], Checks | None]:
        texts = FullTexts(list(self._papers.values()))
        kept = dict(checks) if checks is not None else None
        published = []
        for request, completion in pairs:
            spec = self._kinds.get(request.kind) if self._kinds is not None else None
            structured = (spec is not None and spec.schema is not None
                          or json_like(completion.content))
            content = texts.cut(completion.content, in_strings=structured)
            reasoning = texts.cut(completion.reasoning)
            if (content, reasoning) == (completion.content, completion.reasoning):
                published.append((request, completion))
                continue
            log.warning("the answer to %s copies a paper's full text at length: cut from what "
                        "is recorded and published", request.name)
            published.append((request, replace(completion, content=content,
                                               reasoning=reasoning)))
            if kept is not None and request.name in kept:
                left = {c.sentence for c in answer_claims(content, self._titles,
                                                          spec.shift if spec else 1)}
                kept[request.name] = tuple(c for c in kept[request.name] if c.sentence in left)
        return published, kept

    def follow_ups(self, papers: Sequence[NumberedPaper], statuses: Mapping[int, Status],
                   earlier: Sequence[tuple[RecordPaper, str]]) -> tuple[FollowUp, ...]:
        return find_follow_ups(papers, statuses, lambda n: self._texts.get(n, ""), earlier)


def with_judgements(claims: Sequence[Claim], checks: Sequence[ClaimCheck],
                    judged: Sequence[tuple[Collection[int], Completion]]
                    ) -> tuple[ClaimCheck, ...]:
    """`checks` with the judgements of their found quotes: a claim whose quote was found and
    that a judgement covers gets its verdict, or "failed" where that judgement failed, did not
    parse or left the claim out (it stays "quote found"). Others are left as they are."""
    given: dict[int, Judgement] = {}
    for numbers, completion in judged:
        answered = verdicts(completion)
        if answered is None:
            log.warning("the judgement %s failed or does not parse (%s): its claims stay "
                        "\"quote found\"", completion.name, completion.error or "invalid JSON")
        for number in numbers:
            if number in given:
                continue
            if answered is None:
                given[number] = Judgement("failed", "the judgement request failed"
                                          if not completion.ok else "the judgement did not parse")
            elif number in answered:
                verdict, reason = answered[number]
                given[number] = Judgement(verdict, reason)
            else:
                given[number] = Judgement("failed", "no verdict on this claim came back")
    return tuple(replace(check, judgement=given[claim.number])
                 if check.verdict == "supported" and claim.number in given else check
                 for claim, check in zip(claims, checks, strict=True))


def _with_ids(name: str, claims: Sequence[Claim], checks: Sequence[ClaimCheck]
              ) -> tuple[ClaimCheck, ...]:
    return tuple(replace(check, id=f"{name}#{claim.number}")
                 for claim, check in zip(claims, checks, strict=True))


class RecordedFacts:
    """The facts as an edition's record wrote them down."""

    def __init__(self, record: EditionRecord) -> None:
        self._figures = {(f.paper, f.number, f.unit): f.found for f in record.figures}
        self._checks = record.checks
        self._recorded = record.figures
        self._follow_ups = record.continuity.followups if record.continuity else ()

    def states(self, number: int, figure: str, unit: str) -> bool:
        found = self._figures.get((number, figure, unit))
        if found is None:  # the record was written by a build that never asked: say unfound
            log.warning("the record has no word on whether Paper %d states %s%s",
                        number, figure, unit)
            return False
        return found

    def checks(self, pairs: Sequence[tuple[PromptRequest, Completion]]) -> Checks | None:
        return dict(self._checks) if self._checks is not None else None

    def recorded(self) -> tuple[FigureFact, ...]:
        return self._recorded

    def uncopied(self, pairs: Sequence[tuple[PromptRequest, Completion]],
                 checks: Checks | None
                 ) -> tuple[list[tuple[PromptRequest, Completion]], Checks | None]:
        return list(pairs), checks  # the record's answers were cut when it was written

    def follow_ups(self, papers: Sequence[NumberedPaper], statuses: Mapping[int, Status],
                   earlier: Sequence[tuple[RecordPaper, str]]) -> tuple[FollowUp, ...]:
        return self._follow_ups

