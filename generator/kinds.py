"""Every kind of prompt, declared once, as one unit: settings, requests, answers, page.

A `KindSpec` says everything the pipeline needs of a kind: its configuration table (a frozen
dataclass whose fields carry their types, defaults and ranges, as mkdocs declares its config
options), the requests it adds to an edition, how a structured answer becomes a typed value and
a record, its page template and file stem, its context budget, and whether its claims are
evidence-checked. A `KindRegistry` holds a run's kinds; the run is given one (`load_config`'s
`registry`, kept on the `Config`), and building requests, loading and checking the config,
assembling the edition and writing its record all loop over it.

This module sits at the bottom of the package (it imports only the request types), so that the
config can hold a registry and every layer can read one. The built-in kinds are declared above
the config, with their request builders (`generator.prompts.kinds.BUILTIN_KINDS`); a new kind is
one `BUILTIN_KINDS.with_kinds(KindSpec(...))` and its template (tests/test_new_kind.py adds two,
touching no other module). The built-in kinds' names are the constants below: code that must
single one out names it by its constant, never by a string of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .completions import PromptKind, PromptRequest


def as_written(answer: str) -> str:
    """An answer published as the model wrote it."""
    return answer


# The built-in kinds, by name.
RESEARCH_MAP: PromptKind = "research_map"
THEMES: PromptKind = "themes"
DEEP_DIVE: PromptKind = "deep_dive"
THINKING: PromptKind = "thinking"
BRIEF: PromptKind = "brief"
CHANGES: PromptKind = "changes"
EVIDENCE: PromptKind = "evidence"
ASK: PromptKind = "ask"
JUDGE: PromptKind = "judge"
CONTINUE: PromptKind = "continue"
TRIAGE: PromptKind = "triage"

# The callables of a spec take the run's objects, which live above this module: `Config`
# (generator.config imports this module, so it cannot be named here), a request builder's
# `RequestContext` (generator.prompts) and an `EditionRecord` (generator.edition). The
# built-in kinds' functions are typed with them where they are defined.
RequestBuilder = Callable[[Any], list[PromptRequest]]
# A validated JSON answer, the request it answers and the bundle's paper numbers -> a value.
Parser = Callable[[Any, PromptRequest, frozenset[int]], Any]
# A smaller request for one that does not fit the model's context, or None.
Alone = Callable[[PromptRequest, int], PromptRequest | None]

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
    budget: Callable[[Any], list[int]]
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
    from_record: Callable[[Any, PromptRequest], Any] | None = None
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
    # A follow-up whose conversation does not fit the model's context is asked again in one of
    # its own (`alone`: the request, the context in tokens -> a smaller request, or None); one
    # that does not fit even then is not answered (its claims are shown as not checked), and a
    # kind without it is cut to fit by the context plan instead.
    alone: Alone | None = None
    # The answer as its page shows it, and whose sentences are its claims: without the lines
    # meant for the digest alone (a comparison's "Disagrees:" lines, read as typed values).
    published: Callable[[str], str] = as_written


class KindRegistry:
    """The kinds a run knows, in the order their requests are made: an immutable object the
    run is given (through its `Config`), so a plugin or a test adds kinds by making a registry
    of its own (`BUILTIN_KINDS.with_kinds(spec, ...)`, generator.prompts.kinds), never by
    changing a shared one."""

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

    def _edition_specs(self) -> list[KindSpec]:
        return [spec for spec in self._specs.values() if not spec.asks]

    def answer_tokens(self, config: Any) -> int:
        """The most tokens beside the bundle an edition's prompt that carries it may need: its
        answer, and for an evidence check also the answer it checks."""
        return max(n for spec in self._edition_specs() if spec.shares_bundle
                   for n in spec.budget(config))

    def largest_answer(self, config: Any) -> int:
        """The largest answer budget of an edition's prompts that carry the bundle (a check
        not counted: it is the one kind that follows another's answer)."""
        return max(n for spec in self._edition_specs() if spec.shares_bundle and not spec.follows
                   for n in spec.budget(config))

    def prose_budget(self, config: Any) -> list[int]:
        """The answer budgets of an edition's kinds whose claims are checked."""
        return [n for spec in self._edition_specs() if spec.evidence
                for n in spec.budget(config)]


def legacy_subject(kind: PromptKind, name: str, subject: int | None) -> int | None:
    """A brief's paper: a field of its request since 0.5, its name (`brief-<paper>`) before.
    Read where an older cache or record is read, once, so nothing parses names after."""
    if subject is None and kind == BRIEF and name.removeprefix("brief-").isdigit():
        return int(name.removeprefix("brief-"))
    return subject
