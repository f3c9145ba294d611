"""The reader's library seeds triage: a BibTeX export, an RIS export or a list of arXiv ids, its
newest papers shown in the triage prompt's shared prefix as "more like this" (source: library),
listed by `digest feedback list`, a paper of the window it already holds listed as "in your
library" and never bundled, and a file that cannot be read named with its entry in one line.
Triage runs through the `Services` seam (tests/doubles.py), so no build is made."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.archive.history import History
from generator.cli import cli
from generator.config import Config, load_config
from generator.marks.library import LibraryError, load_library
from generator.papers import FetchResult, Paper
from generator.pipeline.fetch import query_for, triage_stage
from generator.prompts.kinds import BUILTIN_KINDS
from generator.synthesis.triage import IN_LIBRARY
from tests.doubles import MockModel, ScriptedArxiv, services

EDITION = "2026-12-02"


def paper(arxiv_id: str, title: str, published: str = "2026-11-20") -> Paper:
    return Paper(arxiv_id, title, ("Ada Author",), published, published,
                 f"We study {title.lower()}.", ("cs.LG",), f"https://arxiv.org/abs/{arxiv_id}",
                 None)


WINDOW = [paper("2611.00011v1", "Speculative Decoding With Tree Drafts"),
          paper("2611.00012v1", "A Survey of Protein Folding"),
          paper("2309.06180v2", "Efficient Memory Management for LLM Serving")]
# Only their ids are in the id list: the text comes from arXiv, asked once.
LOOKED_UP = {"2401.00001": paper("2401.00001v3", "Prefix Caching for Chat Serving", "2024-01-02")}
FILES = {
    "library.bib": r"""% Exported by Zotero
@misc{kwon_efficient_2023,
	title = {Efficient {Memory} {Management} for {LLM} {Serving}},
	url = {http://arxiv.org/abs/2309.06180},
	abstract = {High throughput serving with {PagedAttention} \& paging.},
	author = {Kwon, Woosuk and others},
	month = sep,
	year = {2023},
	note = {arXiv:2309.06180 [cs]},
}
@article{dao2022, title = "FlashAttention: Fast and Memory-Efficient Exact Attention",
  journal = {NeurIPS}, year = 2022, abstract = {IO-aware attention.}}
""",
    "library.ris": """TY  - PREPRINT
TI  - Efficient Memory Management for LLM Serving
AB  - High throughput serving with PagedAttention
  and paging.
DA  - 2023/09/12/
DO  - 10.48550/arXiv.2309.06180
ER  -

TY  - JOUR
TI  - FlashAttention: Fast and Memory-Efficient Exact Attention
PY  - 2022
AB  - IO-aware attention.
ER  -
""".replace("ER  -\n", "ER  - \n"),  # as Zotero ends a record: "ER  - "
    "library.txt": "# our reading list\n2309.06180\narXiv:2401.00001v3\n",
}


def workspace(folder: Path, library: str, text: str) -> Config:
    folder.mkdir()
    (folder / library).write_text(text)
    (folder / "config.toml").write_text(
        f'[arxiv]\nquery = "decoding"\nmax_papers = 2\n\n[triage]\n'
        f'interests = "fast LLM serving"\nlibrary = "{library}"\n')
    return load_config(folder / "config.toml", registry=BUILTIN_KINDS)


def triage(config: Config, model: MockModel, arxiv: ScriptedArxiv,
           previous: FetchResult | None = None) -> FetchResult:
    past = History.load(config.docs_dir)
    run = replace(services(config.cache_dir, [], {}, model), arxiv=arxiv)
    judged = triage_stage(config, run, query_for(config, EDITION, past), previous, past)
    return FetchResult(judged.query, 2, "", (), triage=judged)


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_format_seeds_the_shared_prefix_and_feedback_list(tmp_path: Path, name: str
                                                                ) -> None:
    config = workspace(tmp_path / "ws", name, FILES[name])
    model, arxiv = MockModel(), ScriptedArxiv(list(WINDOW), latest=dict(LOOKED_UP))
    fetched = triage(config, model, arxiv)
    prefixes = {r.messages[0].content for r in model.asked}
    (prefix,) = prefixes  # one shared prefix, the library in it
    assert '"source": "library"' in prefix and "keeps in their own library" in prefix
    assert '"arxiv": "2309.06180", "title": "Efficient Memory Management for LLM Serving"' \
        in prefix
    if name == "library.txt":  # ids alone: their text from arXiv, in one lookup
        assert arxiv.lookups == [("2309.06180", "2401.00001")]
        assert '"title": "Prefix Caching for Chat Serving"' in prefix
    else:  # an entry without an arXiv id, by its title and abstract
        assert arxiv.lookups == []  # the file gives the text: arXiv is not asked
        assert '{"title": "FlashAttention: Fast and Memory-Efficient Exact Attention", ' \
               '"abstract": "IO-aware attention.", "source": "library"}' in prefix
    # The window's paper the library holds: listed as in your library, never judged.
    judged = fetched.triage
    assert judged is not None and judged.in_library == ("2309.06180",) and judged.library == 2
    owned = next(c for c in judged.candidates if c.paper.base_id == "2309.06180")
    assert (owned.status, owned.reason) == ("excluded", IN_LIBRARY)
    assert not any("2309.06180" in r.messages[1].content for r in model.asked)
    listed = CliRunner().invoke(cli, ["feedback", "list", "--config", str(config.path)],
                                catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    (line,) = [line.split() for line in listed.output.splitlines() if "2309.06180" in line]
    assert [line[0], line[1], line[3]] == ["more", "2309.06180", "library"]
    assert f"2 of the 2 paper(s) of {name} are shown to triage" in listed.output
    assert ("Prefix Caching" if name == "library.txt" else "FlashAttention") in listed.output


def test_a_rebuild_judges_with_the_library_it_was_judged_with(tmp_path: Path) -> None:
    config = workspace(tmp_path / "ws", "library.bib", FILES["library.bib"])
    model, arxiv = MockModel(), ScriptedArxiv(list(WINDOW))
    first = triage(config, model, arxiv)
    asked = len(model.asked)
    (config.workspace / "library.bib").write_text("% emptied since\n")
    again = triage(config, model, arxiv, previous=first)
    assert len(model.asked) == asked  # every answer from the cache: the same prompts
    assert again.triage == first.triage


@pytest.mark.parametrize(("name", "text", "said"), [
    ("a.bib", "@misc{ok, title = {Fine}}\n\n@misc{kwon2023,\n  title = {Efficient {Memory\n}",
     "a.bib: entry 2 (kwon2023), line 3, field 'title': a { at line 4 is never closed"),
    ("b.bib", "@misc{x, title {No equals}}", "entry 1 (x), line 1, field 'title': expected '='"),
    ("c.ris", "TY  - JOUR\nTI  - Cut short\n", "c.ris: record 1 (line 1) has no end (ER  - )"),
    ("d.txt", "2309.06180\nnot-an-id\n", "d.txt: line 2: 'not-an-id' is not an arXiv id"),
])
def test_a_bad_file_is_one_line_naming_the_file_and_the_entry(tmp_path: Path, name: str,
                                                              text: str, said: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(LibraryError) as raised:
        load_library(tmp_path / name)
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_a_missing_library_stops_feedback_list_with_what_to_do(tmp_path: Path) -> None:
    config = workspace(tmp_path / "ws", "library.bib", "")
    (config.workspace / "library.bib").unlink()
    listed = CliRunner().invoke(cli, ["feedback", "list", "--config", str(config.path)],
                                catch_exceptions=False)
    assert listed.exit_code == 2 and "[triage] library" in listed.output
    assert "export your library there as BibTeX or RIS" in listed.output
    assert json.loads(json.dumps(listed.output))  # one plain line of text
