"""A new kind is one registration and one template: the proof that the registry is real.

This module adds two kinds the product does not have, as a plugin would (a registry of its
own, given to the run through `load_config`), and touches no other module: a prose kind
("counterpoint", evidence-checked like the research map) and a structured kind ("glossary",
JSON under a schema, parsed into typed values and shown on a page of its own). Their settings
come from config.toml tables they declare, ranges included.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from generator.archive.history import History
from generator.completions import PromptRequest
from generator.config import Config, EmailSettings, load_config
from generator.deliver.newsletter import newsletter
from generator.errors import ConfigError
from generator.kinds import KindRegistry, KindSpec
from generator.pipeline.fetch import fetch_stage
from generator.pipeline.render import render_stage
from generator.pipeline.synthesize import synthesize_stage
from generator.prompts.builders import RequestContext, build_requests
from generator.prompts.kinds import BUILTIN_KINDS
from generator.publish.site import edition_nav
from tests.conftest import FIXTURES, read_record
from tests.doubles import MockModel, services
from tests.edition_fixture import EDITION, PAPERS
from tests.servers.sglang import Answer, Fault, default_responder


@dataclass(frozen=True)
class CounterpointSettings:
    question: str = "Where do the papers disagree, and which side has the stronger evidence?"
    max_tokens: int = field(default=900, metadata={"range": (1, 100_000)})
    temperature: float = field(default=0.2, metadata={"range": (0.0, 2.0)})


@dataclass(frozen=True)
class GlossarySettings:
    terms: int = field(default=5, metadata={"range": (1, 50)})
    max_tokens: int = field(default=600, metadata={"range": (1, 100_000)})


@dataclass(frozen=True)
class Term:
    term: str
    meaning: str
    papers: tuple[int, ...]


GLOSSARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"terms": {"type": "array", "items": {
        "type": "object",
        "properties": {"term": {"type": "string", "maxLength": 80},
                       "meaning": {"type": "string", "maxLength": 400},
                       "papers": {"type": "array", "items": {"type": "integer"}}},
        "required": ["term", "meaning", "papers"], "additionalProperties": False}}},
    "required": ["terms"], "additionalProperties": False,
}


def counterpoint_requests(ctx: RequestContext) -> list[PromptRequest]:
    s = ctx.config.kinds["counterpoint"]
    return [ctx.make("counterpoint", "Counterpoint", "counterpoint", s.question,
                     f"Task: {s.question}", s.max_tokens, s.temperature)]


def glossary_requests(ctx: RequestContext) -> list[PromptRequest]:
    s = ctx.config.kinds["glossary"]
    task = f"Task: define the {s.terms} terms a newcomer needs, each with the papers using it."
    return [ctx.make("glossary", "Glossary", "glossary", task, task, s.max_tokens, 0.0,
                     schema=GLOSSARY_SCHEMA)]


def parse_glossary(data: Any, request: PromptRequest, papers: frozenset[int]
                   ) -> tuple[Term, ...]:
    return tuple(Term(t["term"], t["meaning"], tuple(n for n in t["papers"] if n in papers))
                 for t in data["terms"])


TEMPLATES = {
    "counterpoint.md.j2": ('# {{ page.heading | plain }}\n\n{% set answer = page.answers[0] %}\n'
                           '{% include "_completion.md.j2" %}\n\n'
                           '{% include "_page_notes.md.j2" %}\n'),
    "glossary.md.j2": ("# {{ page.heading | plain }}\n\n{% for terms in page.values %}"
                       "{% for t in terms %}- **{{ t.term | text }}**: {{ t.meaning | text }} "
                       "(papers {{ t.papers | join(', ') }})\n{% endfor %}{% endfor %}"),
}


NEW_KINDS = BUILTIN_KINDS.with_kinds(
    KindSpec("counterpoint", "counterpoint.md.j2", None, True,
             lambda c: [c.kinds["counterpoint"].max_tokens], counterpoint_requests,
             evidence=True, settings=CounterpointSettings, section="prompts.counterpoint"),
    KindSpec("glossary", "glossary.md.j2", "glossary", True,
             lambda c: [c.kinds["glossary"].max_tokens], glossary_requests,
             schema=GLOSSARY_SCHEMA, parse=parse_glossary,
             to_record=lambda terms: [vars(t) | {"papers": list(t.papers)} for t in terms],
             settings=GlossarySettings, section="prompts.glossary"),
)


def workspace(tmp_path: Path, extra: str = "", registry: KindRegistry = NEW_KINDS) -> Config:
    path = tmp_path / "ws" / "config.toml"
    (path.parent / "templates").mkdir(parents=True)
    for name, text in TEMPLATES.items():
        (path.parent / "templates" / name).write_text(text)
    path.write_text('[digest]\ntitle = "New Kinds"\n\n[arxiv]\nquery = "testing"\n'
                    f"max_papers = 3\nfull_text_papers = 1\nmax_pdf_chars = 3000\n{extra}")
    return load_config(str(path), registry=registry)


def answers(body: dict[str, Any]) -> Answer | Fault:
    """The glossary as JSON; everything else as the SGLang-shaped server answers."""
    if body.get("response_format", {}).get("json_schema", {}).get("name") == "glossary":
        return Answer(json.dumps({"terms": [
            {"term": "KV cache", "meaning": "Keys and values kept per token.", "papers": [1, 3]},
            {"term": "Draft <model>", "meaning": "A small model that guesses.", "papers": [2, 9]},
        ]}))
    return default_responder(body)


def test_a_new_kind_is_configured_asked_rendered_and_evidence_checked(
        tmp_path: Path) -> None:
    config = workspace(tmp_path, "\n[prompts.counterpoint]\nmax_tokens = 700\n")
    assert config.kinds["counterpoint"].max_tokens == 700  # its own table, read
    assert config.kinds["glossary"].terms == 5  # no table: its defaults
    pdf = (FIXTURES / "pdfs" / "arxiv-1111.2011v2_revtex-2col.pdf").read_bytes()
    model = MockModel(answers)
    run = services(config.cache_dir, list(PAPERS), {str(p.pdf_url): pdf for p in PAPERS}, model)

    fetch_stage(config, run, EDITION, history=History.load(config.docs_dir))
    synthesize_stage(config, run, EDITION, history=History.load(config.docs_dir))
    render_stage(config, run.cache, EDITION, history=History.load(config.docs_dir, remaking=(EDITION,)))

    asked = {r.name: r for r in model.asked}
    assert asked["counterpoint"].max_tokens == 700
    assert any(n.startswith("evidence-counterpoint-") for n in asked)  # its claims checked
    assert "response_format" in asked["glossary"].extra_body_json
    edition = config.docs_dir / "editions" / EDITION
    counterpoint = (edition / "counterpoint.md").read_text()
    assert "Papers cited on this page" in counterpoint and "digest-ev" in counterpoint
    glossary = (edition / "glossary.md").read_text()
    assert "**KV cache**: Keys and values kept per token. (papers 1, 3)" in glossary
    assert "Draft &lt;model&gt;" in glossary and "(papers 2)" in glossary  # escaped, Paper 9 gone
    record = json.loads((edition / "edition.json").read_text())
    assert record["structured"]["glossary"][0][0]["term"] == "KV cache"  # one answer, its terms
    assert record["checks"]["counterpoint"]
    assert {"counterpoint", "glossary"} <= {c.get("page") for c in record["prompts"]}

    # Everything that lists an edition's pages lists theirs: the navigation, the overview, the
    # run report and the mail, all made from the typed record.
    typed = read_record(config.path, EDITION)
    (nav,) = [entry[EDITION] for entry in edition_nav(History([typed])) if EDITION in entry]
    assert {"Counterpoint": f"editions/{EDITION}/counterpoint.md",
            "Glossary": f"editions/{EDITION}/glossary.md"}.items() <= {
                k: v for entry in nav for k, v in entry.items()}.items()
    overview = (edition / "index.md").read_text()
    assert "(counterpoint.md)" in overview and "(glossary.md)" in overview
    report = (edition / "run-report.md").read_text()
    assert "Counterpoint" in report and "Glossary" in report
    mail = newsletter("New Kinds", typed, "https://digest.example.org/", EmailSettings())
    for stem in ("counterpoint", "glossary"):
        assert f"https://digest.example.org/editions/{EDITION}/{stem}.html" in mail.text
        assert f"editions/{EDITION}/{stem}.html" in mail.html


def test_a_new_kinds_settings_are_checked_like_every_other(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        workspace(tmp_path, "\n[prompts.glossary]\nterms = 500\n")
    assert raised.value.problems == ["prompts.glossary.terms: must be between 1 and 50, got 500"]
    with pytest.raises(ConfigError) as raised:
        workspace(tmp_path / "again", "\n[prompts.glossary]\ntrems = 5\n")
    assert raised.value.problems == [
        "prompts.glossary.trems: unknown key (did you mean 'prompts.glossary.terms'?)"]


def test_without_its_registration_a_kind_is_unknown(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        workspace(tmp_path, "\n[prompts.glossary]\nterms = 5\n", BUILTIN_KINDS)
    assert "prompts.glossary: unknown key" in raised.value.problems[0]
    config = workspace(tmp_path / "again", registry=BUILTIN_KINDS)
    from generator.papers import FullText, Source
    from generator.synthesis.bundle import build_bundle

    bundle = build_bundle([Source(p, FullText("not_requested")) for p in PAPERS])
    assert not {"counterpoint", "glossary"} & {r.kind for r in build_requests(config, bundle)}


def recap_requests(ctx: RequestContext) -> list[PromptRequest]:
    """A cross-edition kind: the last edition's themes, typed, beside this bundle."""
    last = ctx.history.records[0] if ctx.history and ctx.history.records else None
    if last is None:
        return []  # a first edition has nothing to look back on
    themes = "; ".join(t.name for t in last.themes)
    task = f"Task: last edition ({last.edition}) had these themes: {themes}. Which continue?"
    return [ctx.make("recap", "Since last edition", "recap", task, task, 500, 0.2)]


def test_a_kinds_request_builder_reads_the_typed_past_editions() -> None:
    from generator.archive.record import EditionRecord
    from generator.papers import FullText, Source
    from generator.synthesis.bundle import build_bundle

    golden = Path(__file__).parent / "golden" / "editions__2026-12-02__edition.json"
    earlier = EditionRecord.from_json(json.loads(golden.read_text()), str(golden))
    registry = BUILTIN_KINDS.with_kinds(KindSpec("recap", None, None, True, lambda c: [500],
                                                 recap_requests))
    config = Config(path=Path("config.toml"), registry=registry)
    bundle = build_bundle([Source(p, FullText("not_requested")) for p in PAPERS])
    everything = History([earlier])

    def recaps(history: History | None) -> list[PromptRequest]:
        return [r for r in build_requests(config, bundle, history) if r.kind == "recap"]

    (recap,) = recaps(everything.before("2026-12-09"))
    assert earlier.themes and all(t.name in recap.question for t in earlier.themes)
    assert "2026-12-02" in recap.question
    # A rebuild of the earlier edition itself sees only what came before it: nothing.
    assert recaps(everything.before("2026-12-02")) == [] == recaps(None)
