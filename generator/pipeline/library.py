"""The reader's library, made ready for triage: which of its papers are shown, with their text.

The library's newest papers (`[triage] library_examples`; a paper the reader marked is shown
as its mark says, not twice) are shown to triage as "more like this" examples, with the title
and abstract the file gives. Where it gives none (a list of arXiv ids, a BibTeX without
abstracts), the text comes from an edition that covered the paper, else from arXiv: one
request per 100 ids, each id asked for once (the answers are kept in the cache).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from ..archive.history import History
from ..config import Config
from ..errors import ArxivError
from ..marks import Marks
from ..marks.library import Library, load_library, with_text
from ..papers import LibraryPaper
from ..ports import PaperSearch
from ..store.cache import Cache, read_json, write_json
from ..store.codec import CodecError, from_data, to_data

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _LookedUp:
    """The cache's file: what arXiv gave for each library id (no title: arXiv had none)."""

    papers: tuple[LibraryPaper, ...] = ()


@dataclass(frozen=True)
class Shelf:
    """The library as triage uses it: the file read, and the papers shown, with their text."""

    library: Library
    shown: tuple[LibraryPaper, ...]  # newest first, each with a title
    untitled: tuple[str, ...] = ()  # ids chosen but left out: no text found for them yet
    beyond: int = 0  # papers past [triage] library_examples (or marked), not shown


def library_shelf(config: Config, cache: Cache, history: History, marks: Marks,
                  search: PaperSearch | None) -> Shelf | None:
    """The library's papers triage is shown (None without [triage] library); `search` looks
    up the text of ids that lack it (None: no network, as `digest feedback list` reads it)."""
    path = config.library_file
    if path is None:
        return None
    library = load_library(path)
    marked = {m.arxiv_id for m in marks.marks}
    wanted = [p for p in library.papers if not (p.arxiv_id and p.arxiv_id in marked)]
    chosen = wanted[:config.triage.library_examples]
    known = {p.base_id: (p.title, p.abstract) for r in reversed(history.records)
             for p in r.papers}
    looked = _looked_up(cache)
    filled = [_filled(p, known, looked) for p in chosen]
    missing = sorted({p.arxiv_id for p in filled if p.arxiv_id and not p.abstract
                      and p.arxiv_id not in looked})
    if missing and search is not None:
        try:
            found = search.lookup(missing, config.arxiv.max_abstract_chars)
        except ArxivError as err:
            log.warning("could not look up %d paper(s) of your library on arXiv (%s): triage "
                        "is shown those it has a title for", len(missing), err)
        else:
            answers = {p.base_id: LibraryPaper(p.base_id, p.title, p.abstract) for p in found}
            looked = {**looked, **{i: answers.get(i, LibraryPaper(i)) for i in missing}}
            write_json(cache.library_path, to_data(_LookedUp(tuple(
                looked[i] for i in sorted(looked)))))
            filled = [_filled(p, known, looked) for p in chosen]
    untitled = tuple(p.arxiv_id for p in filled if not p.title)
    if untitled:
        log.info("%d paper(s) of your library have no title yet (%s): shown once arXiv gives "
                 "one", len(untitled), ", ".join(untitled[:5]))
    return Shelf(library, tuple(p for p in filled if p.title), untitled,
                 len(library.papers) - len(chosen))


def _filled(paper: LibraryPaper, known: Mapping[str, tuple[str, str]],
            looked: Mapping[str, LibraryPaper]) -> LibraryPaper:
    if not paper.arxiv_id or (paper.title and paper.abstract):
        return paper
    if paper.arxiv_id in known:
        paper = with_text(paper, *known[paper.arxiv_id])
    if paper.arxiv_id in looked:
        paper = with_text(paper, looked[paper.arxiv_id].title, looked[paper.arxiv_id].abstract)
    return paper


def _looked_up(cache: Cache) -> dict[str, LibraryPaper]:
    data = read_json(cache.library_path)
    if data is None:
        return {}
    try:
        return {p.arxiv_id: p for p in from_data(_LookedUp, data).papers}
    except CodecError as err:
        log.warning("ignoring %s: %s", cache.library_path, err)
        return {}
