"""Every kind of prompt, declared once, as one unit: settings, requests, answers, page.

A `KindSpec` says everything the pipeline needs of a kind: its configuration table (a frozen
dataclass whose fields carry their types, defaults and ranges, as mkdocs declares its config
options), the requests it adds to an edition, how a structured answer becomes a typed value and
a record, its page template and file stem, its context budget, and whether its claims are
evidence-checked. A `KindRegistry` holds a run's kinds; the run is given one (`load_config`'s
`registry`, kept on the `Config`), and building requests, loading and checking the config,
assembling the edition and writing its record all loop over it. The built-in kinds are
`BUILTIN_KINDS`; a new kind is one `BUILTIN_KINDS.with_kinds(KindSpec(...))` and its template
(tests/test_new_kind.py adds two, touching no other module).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .chat_models import PromptKind, PromptRequest
from .edition.theme_pages import merge_themes
from .edition.values import Brief, Theme
from .models import Bundle
from .prompts import builders as prompts
from .synthesis.structured import (
    BRIEF_SCHEMA,
    EVIDENCE_SCHEMA,
    JUDGE_SCHEMA,
    THEMES_SCHEMA,
    TRIAGE_SCHEMA,
)
from .text.safe_text import clean

if TYPE_CHECKING:
    from .config import Config
    from .edition.history import History
    from .edition.record import EditionRecord

RequestBuilder = Callable[[prompts.RequestContext], list[PromptRequest]]
# A validated JSON answer, the request it answers and the bundle's paper numbers -> a value.
Parser = Callable[[Any, PromptRequest, frozenset[int]], Any]

# The stems of an edition's own pages, which no synthesis page may take.
EDITION_PAGES = ("index", "papers", "triage", "run-report")


@dataclass(frozen=True)
class KindSpec:
    """What one kind of prompt is and where its answer goes."""

    kind: PromptKind
    # The page template of its answer; None: an answer shown only inside other pages.
    template: str | None
    # The page's file stem: fixed (both thinking answers share one page) or the request's name.
    page: str | None
    # Whether it carries the whole bundle (and so shares the server's cached prefix) or only
    # its own paper (a brief).
    shares_bundle: bool
    # The answer lengths the configuration allows this kind (the context must leave room).
    budget: Callable[[Config], list[int]]
    # The requests it adds to an edition; None: made by another stage (evidence, triage).
    requests: RequestBuilder | None = None
    schema: dict[str, Any] | None = None
    # A structured answer as a typed value (None: the kind's answers are prose).
    parse: Parser | None = None
    # A typed value as it goes into edition.json's "structured" table (None: not recorded
    # there; briefs and themes have record keys of their own).
    to_record: Callable[[Any], Any] | None = None
    # The typed value an edition's record already holds for a request (None: it holds none):
    # what a render keeps when an answer it parsed before no longer parses (a hand edit, a
    # stricter parser), so that a render never takes from a record what it held.
    from_record: Callable[[EditionRecord, PromptRequest], Any] | None = None
    # Its configuration table: a frozen dataclass, read from `section` of config.toml into
    # `Config.kinds[kind]` (the built-in kinds' tables are fields of `Config` itself). A field's
    # `metadata={"range": (low, high)}` is checked with every other value.
    settings: type | None = None
    section: str = ""
    # The H1 of its page, from the page title.
    heading: str = "{title}"
    # How many levels the model's own headings move down on the page (the page owns the H1,
    # and the thinking page its H2 sections).
    shift: int = 1
    # Whether its answer's citing sentences are checked against quotes ([evidence]).
    evidence: bool = False
    # Page stems it owns besides its requests' names.
    stems: tuple[str, ...] = field(default=())
    # Whether its answer's field overview opens the home page and the feed entry.
    overview: bool = False
    # Whether its requests follow another kind's answer (made by the run as answers arrive,
    # not from the bundle: an evidence check).
    follows: bool = False
    # Claims checked in one evidence request (0: `[evidence] claims_per_request`): a kind
    # whose cost is bounded asks for all its checks at once.
    evidence_batch: int = 0
    # Whether its checked sentences may say why a pick matters (a comparison's "Disagrees:"
    # line, say, is about another edition, not the paper's worth).
    backs_picks: bool = True
    # Whether it answers a reader's question over the archive (`digest ask`) instead of
    # making part of an edition: its requests are built only for a question, and its budget
    # never sizes an edition's plan.
    asks: bool = False


class KindRegistry:
    """The kinds a run knows, in the order their requests are made: an immutable object the
    run is given (through its `Config`), so a plugin or a test adds kinds by making a registry
    of its own (`BUILTIN_KINDS.with_kinds(spec, ...)`), never by changing a shared one."""

    def __init__(self, specs: Iterable[KindSpec] = ()) -> None:
        self._specs: dict[PromptKind, KindSpec] = {}
        for spec in specs:
            if spec.kind in self._specs:
                raise ValueError(f"the kind {spec.kind!r} is registered already")
            if spec.settings is not None and not (dataclasses.is_dataclass(spec.settings)
                                                  and spec.section):
                raise ValueError(f"the kind {spec.kind!r} needs a dataclass and a section for "
                                 "settings")
            self._specs[spec.kind] = spec

    def with_kinds(self, *specs: KindSpec) -> KindRegistry:
        """This registry and `specs` after it (their requests come after the others')."""
        return KindRegistry((*self._specs.values(), *specs))

    def __getitem__(self, kind: PromptKind) -> KindSpec:
        return self._specs[kind]

    def __contains__(self, kind: object) -> bool:
        return kind in self._specs

    def get(self, kind: PromptKind) -> KindSpec | None:
        return self._specs.get(kind)

    def values(self) -> tuple[KindSpec, ...]:
        return tuple(self._specs.values())

    def shares_bundle(self, request: PromptRequest) -> bool:
        return self._specs[request.kind].shares_bundle

    def page_stem(self, request: PromptRequest) -> str | None:
        """The file stem of the page that shows a request's answer; None where it has none."""
        spec = self._specs[request.kind]
        if spec.template is None:
            return None
        return spec.page or request.name

    def reserved_stems(self) -> tuple[str, ...]:
        """Page stems no request may be named: the edition's pages and every kind's own."""
        specs = self._specs.values()
        fixed = [s.page for s in specs if s.page]
        return (*EDITION_PAGES, *fixed, *(stem for s in specs for stem in s.stems))

    def build_requests(self, config: Config, bundle: Bundle,
                       history: History | None = None, question: str = ""
                       ) -> list[PromptRequest]:
        """Every request of an edition over `bundle`, kind by kind in the registry's order;
        `history`: the editions published before this one, for kinds that read them. With a
        `question` (`digest ask`, over an archive bundle), the requests of the kinds that
        answer questions instead."""
        context = prompts.RequestContext(config, bundle, self.reserved_stems(), history,
                                         question=question)
        return [request for spec in self._specs.values()
                if spec.requests and spec.asks == bool(question)
                for request in spec.requests(context)]

    def _edition_specs(self) -> list[KindSpec]:
        return [spec for spec in self._specs.values() if not spec.asks]

    def answer_tokens(self, config: Config) -> int:
        """The most tokens beside the bundle an edition's prompt that carries it may need: its
        answer, and for an evidence check also the answer it checks."""
        return max(n for spec in self._edition_specs() if spec.shares_bundle
                   for n in spec.budget(config))

    def largest_answer(self, config: Config) -> int:
        """The largest answer budget of an edition's prompts that carry the bundle (a check
        not counted: it is the one kind that follows another's answer)."""
        return max(n for spec in self._edition_specs() if spec.shares_bundle and not spec.follows
                   for n in spec.budget(config))

    def prose_budget(self, config: Config) -> list[int]:
        """The answer budgets of an edition's kinds whose claims are checked."""
        return [n for spec in self._edition_specs() if spec.evidence
                for n in spec.budget(config)]

    def settings_of(self, config: Config, kind: PromptKind) -> Any:
        """A kind's settings (its dataclass's defaults where config.toml has no table)."""
        spec = self._specs[kind]
        if spec.settings is None:
            raise KeyError(f"{kind} declares no settings")
        return config.kinds.get(kind) or spec.settings()


def settings_of(config: Config, kind: PromptKind) -> Any:
    """A kind's settings, from the registry the config was read with."""
    return config.registry.settings_of(config, kind)


def build_requests(config: Config, bundle: Bundle,
                   history: History | None = None) -> list[PromptRequest]:
    """Every request of an edition, by the registry the config was read with."""
    return config.registry.build_requests(config, bundle, history)


# The built-in kinds ----------------------------------------------------------------------------

def evidence_max_tokens(claims: int, max_quote_words: int) -> int:
    """Room for a JSON entry per claim: its numbers and a quote (a word is about 1.5 tokens)."""
    return claims * (2 * max_quote_words + 40) + 100


def _evidence_budget(c: Config) -> list[int]:
    """An evidence prompt carries the answer and its claims, then asks for the quotes."""
    if not c.evidence.enabled:
        return []
    claims = c.evidence.claims_per_request
    return [max(c.registry.prose_budget(c)) + claims * 120 + evidence_max_tokens(
        claims, c.evidence.max_quote_words)]


def judge_max_tokens(claims: int) -> int:
    """Room for a JSON entry per claim judged: its number, a verdict and a short reason."""
    return claims * 60 + 50


def _judge_budget(c: Config) -> list[int]:
    """A judgement answers a verdict and a short reason per claim of an evidence batch (it
    carries no bundle, so it never sizes the context plan)."""
    if not (c.evidence.enabled and c.evidence.judge):
        return []
    return [judge_max_tokens(c.evidence.claims_per_request)]


def _brief(data: Any, request: PromptRequest, papers: frozenset[int]) -> tuple[int, Brief]:
    """(the paper it is about, its brief)."""
    number = request.subject or int(request.name.removeprefix("brief-"))  # older records
    return number, Brief(**{k: clean(str(data.get(k, ""))) for k in
                            ("tldr", "problem", "method", "result", "limitations", "name")})


def _recorded_brief(record: EditionRecord, request: PromptRequest) -> tuple[int, Brief] | None:
    number = request.subject or int(request.name.removeprefix("brief-") or 0)  # older records
    brief = record.briefs.get(number)
    return (number, brief) if brief else None


def _recorded_themes(record: EditionRecord, request: PromptRequest) -> tuple[Theme, ...] | None:
    return record.themes or None


def _themes(data: Any, request: PromptRequest, papers: frozenset[int]) -> tuple[Theme, ...]:
    """The themes, naming papers of the bundle only, one per page (merge_themes)."""
    return merge_themes([Theme(clean(str(t["name"])), clean(str(t["description"])),
                               tuple(sorted({n for n in t["papers"] if n in papers})))
                         for t in data["themes"]])


BUILTIN_KINDS = KindRegistry((
    KindSpec("research_map", "research_map.md.j2", None, True,
             lambda c: [c.prompts.research_map.max_tokens], prompts.research_map,
             evidence=True, overview=True, stems=("research-map",)),
    KindSpec("themes", None, None, True,
             lambda c: [c.prompts.themes.max_tokens] if c.prompts.themes.enabled else [],
             prompts.themes, schema=THEMES_SCHEMA, parse=_themes, stems=("themes",),
             from_record=_recorded_themes),
    KindSpec("deep_dive", "deep_dive.md.j2", None, True,
             lambda c: [d.max_tokens for d in c.prompts.deep_dives], prompts.deep_dives,
             heading="Deep dive: {title}", evidence=True),
    KindSpec("thinking", "thinking.md.j2", "thinking", True,
             lambda c: [c.prompts.thinking.max_tokens, c.prompts.thinking.thinking_max_tokens],
             prompts.thinking, shift=2, evidence=True,
             stems=("thinking-off", "thinking-on")),
    KindSpec("brief", None, None, False,
             lambda c: [c.briefs.max_tokens] if c.briefs.enabled else [], prompts.briefs,
             schema=BRIEF_SCHEMA, parse=_brief, from_record=_recorded_brief),
    # What changed since the previous edition: its claims checked in one request, so
    # continuity costs an edition two requests at most.
    KindSpec("changes", "changes.md.j2", None, True,
             lambda c: [c.continuity.max_tokens] if c.continuity.enabled else [],
             prompts.changes, evidence=True, evidence_batch=12, backs_picks=False),
    # A follow-up of an answer: its own prompt plus the answer, so it shares their prefix.
    KindSpec("evidence", None, None, True, _evidence_budget, schema=EVIDENCE_SCHEMA,
             follows=True),
    # A reader's question over the archive (`digest ask`): written like a deep dive over a
    # bundle of the papers the archive's index found, its claims checked like any page's.
    KindSpec("ask", "question.md.j2", None, True, lambda c: [c.ask.max_tokens],
             prompts.ask, heading="Question: {title}", evidence=True, backs_picks=False,
             asks=True),
    # The second judgement of the quotes an evidence check found: the claim and its quote alone
    # (synthesis/judge.py says why), so it carries no bundle.
    KindSpec("judge", None, None, False, _judge_budget, schema=JUDGE_SCHEMA, follows=True),
    # One candidate paper after the reader's interests: all share that prefix, not the bundle
    # (it runs before there is one), so it is gated like the bundle prompts.
    KindSpec("triage", None, None, True, lambda c: [], schema=TRIAGE_SCHEMA),
))
