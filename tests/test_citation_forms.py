"""Every way DeepSeek-V4-Flash cites a paper, read well: one linked name per citation, once.

A research map written as the real model writes one (sections, a table, nested lists, "Paper
3 (Name)", "**Papers:** 1 (A), 4 (B)", "(Papers 2, 3, 6)", "(Paper 5, RLM-Cascade)", "(Paper 5:
45.8% cost reduction)", ranges, and then the papers by name alone): each form is linked, no
paper is named twice in a row, no inline link is a long title, and a sentence that cites a
paper by name is a claim, checked like one that says "Paper N".

Golden file: tests/golden-forms/; after an intended change,

    DIGEST_UPDATE_GOLDEN=1 python -m pytest -n0 tests/test_citation_forms.py
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from generator.edition.model import Edition
from generator.edition.render import make_environment, render_edition
from tests.conftest import ROOT
from tests.scenario import _paper, edition_of

GOLDEN = Path(__file__).parent / "golden-forms"
EDITION = "2026-12-14"

KAMERA = _paper("2612.00301v1", "Kamera: Separating KV Cache Content from Position", ("A. Ito",),
                "2026-12-08", "Kamera separates the key-value cache's content from its position, so "
                "a cached chunk can be reused at any offset; it cuts time to first token by 2.6x.")
PREFIX = _paper("2612.00302v1", "Prefix Caching under Memory Pressure", ("B. Ng",), "2026-12-08",
                "When memory runs short, prefix caches evict the wrong blocks; a frequency-aware "
                "policy keeps hit rates within 3% of an unlimited cache.")
HERALD = _paper("2612.00303v1", "HERALD: Heterogeneous Attention for Long Decoding", ("C. Oh",),
                "2026-12-09", "HERALD mixes dense and sparse attention heads during long "
                "decoding and keeps accuracy while halving attention cost.")
MOCAP = _paper("2612.00304v1", "MOCAP: Moving the KV Cache Across Pipeline Stages", ("D. Ru",),
               "2026-12-09", "MOCAP redistributes the key-value cache across pipeline stages and "
               "is explicitly designed for long-context serving on commodity GPUs.")
CASCADE = _paper("2612.00305v1", "Recursive Language Models with Cascaded Early Exits for "
                 "Cost-Efficient Serving", ("E. Lund",), "2026-12-10",
                 "We cascade recursive language models with early exits (RLM-Cascade), cutting "
                 "serving cost by 45.8% and giving a 1.83x speedup at equal accuracy.")
SIDE = _paper("2612.00306v1", "Agent-Assisted Side-Channel Attacks on Non-Prefix KV Cache in "
              "Retrieval-Augmented Generation", ("F. Sato",), "2026-12-10",
              "An agent probes a shared key-value cache and recovers retrieved documents from "
              "timing alone, even when the cached chunks are not a shared prefix.")
PAPERS = (KAMERA, PREFIX, HERALD, MOCAP, CASCADE, SIDE)

RESEARCH_MAP = """## Field overview

Six papers attack the KV cache from three sides. **Papers:** 1 (Kamera), 4 (MOCAP), 2 \
(Recency/Frequency Adaptive) move or reuse it; (Papers 3, 5, 6) change what is computed or \
leaked.

### Reuse and placement

- Reuse: separating the cache's content from its position (Kamera), redistributing it across \
pipeline stages (MOCAP).
  - Paper 1 (Kamera) cuts time to first token by 2.6×.
  - MOCAP is explicitly designed for long-context serving on commodity GPUs.
- Eviction: Paper 2 (Recency/Frequency Adaptive) keeps hit rates within 3% of an unlimited \
cache.

### Compute and leakage

| Paper | Idea | Figure |
|---|---|---|
| Paper 3 (HERALD) | dense and sparse heads | half the attention cost |
| Paper 5 (RLM-Cascade) | early exits | 45.8% cheaper |

Cascading early exits pays (Paper 5, RLM-Cascade). The gain is large (Paper 5: 45.8% cost \
reduction, 1.83× speedup). Paper 6 (SpliceLeak) shows that timing alone recovers retrieved \
documents. Papers 2–4 leave security aside, which SpliceLeak shows is a mistake.
"""
QUOTES = {
    ("(Kamera), redistributing", KAMERA.base_id): "separates the key-value cache's content from "
                                                   "its position",
    ("(Kamera), redistributing", MOCAP.base_id): "redistributes the key-value cache across "
                                                  "pipeline stages",
    ("MOCAP is explicitly", MOCAP.base_id): "is explicitly designed for long-context serving on "
                                            "commodity GPUs",
    ("2.6×", KAMERA.base_id): "it cuts time to first token by 2.6x",
}


@pytest.fixture(scope="module")
def edition() -> Edition:
    return edition_of(EDITION, PAPERS, {"research-map": RESEARCH_MAP}, [], quotes=QUOTES)


@pytest.fixture(scope="module")
def page(edition: Edition) -> str:
    pages = render_edition(make_environment(ROOT), edition, []).pages
    return pages[f"editions/{EDITION}/research-map.md"]


def body(page: str) -> str:
    return page.split("## Papers cited on this page")[0]


def test_the_research_map_matches_its_golden_file(page: str) -> None:
    path = GOLDEN / "research-map.md"
    if os.environ.get("DIGEST_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(page, encoding="utf-8")
    assert page == path.read_text(encoding="utf-8"), f"differs from {path} (docstring)"


def test_a_paper_is_named_once_per_citation(page: str) -> None:
    text = re.sub(r'<span class="digest-ev-box".*?</span></span>', "", body(page))
    # "[Kamera](…) (Kamera)": the name the model gave the number is not said again.
    twice = re.findall(r"\[([^\]]+)\]\([^)]*\)\s*\((\1)\)", text)
    assert twice == []
    for name in ("Kamera", "MOCAP", "HERALD", "RLM-Cascade"):
        assert f"]({name})" not in text and f"({name})" not in text.replace(f"[{name}]", "")


def test_no_inline_link_is_a_long_title(page: str, edition: Edition) -> None:
    labels = re.findall(r"\[([^\]]+)\]\(papers/", body(page))
    assert labels and max(map(len, labels)) <= 50, labels
    names = {p.paper.base_id: p.name for p in edition.papers}
    assert names[CASCADE.base_id] == "RLM-Cascade"  # the paper's own abstract says it
    assert names[SIDE.base_id] == "Agent-Assisted Side-Channel Attacks"  # "SpliceLeak" is not
    # The whole title stays where a reader looks it up: the link's title, the papers cited.
    # (Said once: it opens with the name, so the list gives the title alone, issue 74.)
    assert f'"{SIDE.title}")' in page and f"**[{SIDE.title}](papers/" in page


def test_every_numbered_form_is_linked(page: str) -> None:
    text = body(page)
    for unlinked in ("Papers: 1", "1 (Kamera)", "Papers 3, 5, 6", "Paper 5, RLM", "Paper 5:",
                     "Papers 2–4", "Paper 6"):
        assert unlinked not in text, unlinked
    assert "**Papers:** [Kamera](papers/" in text
    assert "45.8% ✓</span> cost reduction" in text  # the figures a citation gives stay after it


def test_a_sentence_citing_by_name_is_a_checked_claim(edition: Edition) -> None:
    checks = (edition.record.checks or {})["research-map"]
    by_sentence = {c.sentence: c for c in checks}
    reuse = next(c for s, c in by_sentence.items() if s.startswith("Reuse:"))
    assert reuse.papers == (1, 4) and reuse.standing == "backed"
    designed = next(c for s, c in by_sentence.items() if s.startswith("MOCAP is explicitly"))
    assert designed.papers == (4,) and designed.standing == "backed"
    mistake = next(c for s, c in by_sentence.items() if "which SpliceLeak shows" in s)
    assert mistake.papers == (2, 3, 4, 6)  # "Papers 2–4" and SpliceLeak by the name it was given
