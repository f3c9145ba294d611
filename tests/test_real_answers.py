"""The reading tests over real model answers (issue 74): surveys a model wrote and others
published (tests/fixtures/real-answers/, SOURCES.md says whose and under which licence), their
citations mapped onto the nine-paper bundle of tests/test_citations.py as a model of ours
writes them. Unit-sized: each answer is read and linked once, no build."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from generator.archive.overview import overview_text, without_preamble
from generator.edition.citations import CitationLinker
from generator.evidence.checks import ClaimCheck
from generator.evidence.claims import HEADING_RE, claims_of, says_something
from generator.text.safe_text import md_model
from tests.test_citations import papers

FIXTURES = Path(__file__).parent / "fixtures" / "real-answers"
GOLDEN = Path(__file__).parent / "golden-real"
ANSWERS = sorted(p.name for p in FIXTURES.glob("*.md") if p.name != "SOURCES.md")
BUNDLE = 9


def mapped(name: str) -> str:
    """The answer with "[3]" as "(Paper 3)" and "[9; 10]" as "(Papers 9, 1)" (SOURCES.md)."""
    def cite(match: re.Match[str]) -> str:
        numbers = [(int(n) - 1) % BUNDLE + 1 for n in re.findall(r"\d+", match.group(1))]
        word = "Paper" if len(numbers) == 1 else "Papers"
        return f"({word} {', '.join(map(str, numbers))})"

    return re.sub(r"\[(\d+(?:;\s*\d+)*)\]", cite, (FIXTURES / name).read_text(encoding="utf-8"))


def test_the_fixtures_are_the_real_answers_and_say_where_they_come_from() -> None:
    sources = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert ANSWERS and all(f"`{name}`" in sources for name in ANSWERS)
    assert "MIT" in sources and "5e8f389f3d51b29bad16dc6ae75db3e8a45a3b65" in sources


@pytest.mark.parametrize("name", ANSWERS)
def test_a_real_answer_reads_well(name: str) -> None:
    answer = mapped(name)
    assert without_preamble(answer) == answer  # its opening is a heading: nothing goes
    claims = claims_of(answer, range(1, BUNDLE + 1))
    assert claims and all(says_something(c.sentence) for c in claims)
    assert not any(HEADING_RE.match(c.sentence) for c in claims)
    cited = {n for c in claims for n in c.papers}
    # Every claim marked as where it was written, the worst of marks: no quote for any paper.
    evidence = {c.sentence: ClaimCheck(c.sentence, c.papers, "no_quote", "", None, "")
                for c in claims}
    linker = CitationLinker("research-map", papers(),
                            names={p.number: p.paper.title.split(":")[0] for p in papers()})
    linker.evidence = evidence
    page = md_model(answer, 1, linker)
    headings = [line for line in page.split("\n") if line.startswith("#")]
    # The answer's own top level (its title, "# A Comprehensive Survey…") becomes the page's H2.
    assert headings and headings[0].startswith("## ") and not page.startswith("# ")
    assert not any("digest-ev" in h or "digest-found" in h for h in headings)
    assert page.count('class="digest-ev-mark"') == len(claims)  # every claim marked, once
    # Every cited paper linked; no bracketed number or bare "Paper N" left to a reader.
    assert set(linker.result.cited) == cited
    prose = re.sub(r"\]\([^)]*\)|<[^>]+>", "", page)
    assert not re.search(r"\[\d+(?:;\s*\d+)*\]|\bPapers? \d", prose)
    field = overview_text(answer, limit=300)
    assert field and field.endswith((".", "!", "?", "…")) and len(field) <= 300
    path = GOLDEN / name
    if os.environ.get("DIGEST_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(page + "\n", encoding="utf-8")
    assert page + "\n" == path.read_text(encoding="utf-8"), f"differs from {path}"
