"""What an answer brings to send: its evidence checks, and what an evidence check brings: the
judgement of the quotes it found.

The judgement is asked only for claims whose quote the mechanical check finds in the cited
paper (the same check the edition makes of the record), so a quote not in the paper is never
sent to be judged, and a quote the edition shows as found always was.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from ..completions import Completion, PromptRequest
from ..config import Config
from ..kinds import EVIDENCE, JUDGE
from ..papers import Bundle
from .claims import Claim, answer_claims
from .judge import Quoted, judge_request
from .quotes import PaperText, check_claims
from .requests import evidence_requests


class FollowUps:
    """The follow-up requests of a run's answers (a `stage.FollowUp`); safe across threads."""

    def __init__(self, config: Config, bundle: Bundle) -> None:
        self._config = config
        self._bundle = bundle
        self._titles = {p.number: p.paper.title for p in bundle.papers}
        self._texts: Mapping[int, PaperText] | None = None
        # Each evidence check's claims, by its name, as its answer's follow-ups were made.
        self._claims: dict[str, tuple[PromptRequest, tuple[Claim, ...]]] = {}
        self._lock = threading.Lock()

    def __call__(self, request: PromptRequest, completion: Completion) -> Sequence[PromptRequest]:
        if request.kind == EVIDENCE:
            return self._judgements(request, completion)
        if request.kind == JUDGE:
            return []
        settings = self._config.evidence
        checks = evidence_requests(request, completion, settings, self._titles,
                                   self._config.registry)
        if checks and settings.judge:
            spec = self._config.registry[request.kind]
            by_number = {c.number: c for c in answer_claims(completion.content, self._titles,
                                                             spec.shift)}
            with self._lock:
                for check in checks:
                    self._claims[check.name] = (request, tuple(by_number[n] for n in check.claims
                                                               if n in by_number))
        return checks

    def _judgements(self, request: PromptRequest, completion: Completion
                    ) -> list[PromptRequest]:
        with self._lock:
            asked = self._claims.get(request.name)
        if asked is None or not completion.ok:
            return []
        parent, claims = asked
        checks = check_claims(claims, [(request.claims, completion)], self._paper_texts())
        found = [Quoted(claim.number, claim.sentence,
                        tuple((q.paper, q.quote) for q in check.quotes))
                 for claim, check in zip(claims, checks, strict=True)
                 if check.verdict == "supported"]
        return [judge_request(parent, found, self._config.evidence)] if found else []

    def _paper_texts(self) -> Mapping[int, PaperText]:
        if self._texts is None:  # built once, on the first check that found something to judge
            texts = {p.number: PaperText.of(p) for p in self._bundle.papers}
            with self._lock:
                self._texts = self._texts or texts
        return self._texts

