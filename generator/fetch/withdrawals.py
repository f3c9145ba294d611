"""Withdrawn papers: every paper the last editions covered, looked up again on arXiv.

A withdrawn paper stays on arXiv with a new last version whose abstract (or comment) is the
withdrawal notice. The digest asks for the latest version of each paper it covered in the last
`lookback_editions` editions, by id (`id_list`, 100 ids a request, spaced like every other
request), once per edition: the answer is kept with the edition's fetch, so a rebuild asks
nothing, and a lookup that fails is reported and the edition goes on without it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from ..errors import ArxivError
from ..papers import Lookup, Paper, Withdrawal
from ..ports import PaperSearch
from ..text.safe_text import cut

log = logging.getLogger(__name__)

# arXiv's notices, which open a withdrawn version's comment or make up its abstract: "This
# paper has been withdrawn by the author due to ...", "Withdrawn.", "Paper withdrawn by arXiv
# admin: ...", "arXiv admin note: this submission has been withdrawn ...". Only at the start,
# and a bare "withdrawn" only as a notice (alone, or followed by who or why): an abstract about
# "Withdrawn preprints in the LLM literature" is not a withdrawal.
_WITHDRAWN_RE = re.compile(
    r"^\W{0,3}(?:arxiv admin note:\s*)?(?:"
    r"this (?:paper|article|manuscript|submission|work|version|preprint) "
    r"(?:has been|is|was|is being) withdrawn"
    r"|(?:(?:this )?(?:paper|article|manuscript|submission|preprint) )?withdrawn"
    r"(?=\s*(?:$|[.:;,!)(\-–—]|by\b|due\b|because\b|at the\b|on request\b|per\b|for\b))"
    r"|the (?:authors?|submitters?) (?:has|have) withdrawn)", re.IGNORECASE)
MAX_NOTICE_CHARS = 300


def notice_in(*texts: str) -> str:
    """The withdrawal notice among `texts` (a version's comment and abstract), whole, on one
    line and cut ("": none is one). arXiv often puts a bare "This paper has been withdrawn" in
    the comment and the authors' reason in the abstract: the notice that says more is kept, and
    two that say different things are both kept, the comment's first."""
    found: list[str] = []
    for text in texts:
        line = " ".join(text.split())
        if not _WITHDRAWN_RE.match(line):
            continue
        bare = line.casefold().rstrip(".")
        if any(bare in seen.casefold() for seen in found):
            continue
        found = [seen for seen in found if seen.casefold().rstrip(".") not in line.casefold()]
        found.append(line)
    return cut(" — ".join(found), MAX_NOTICE_CHARS) if found else ""


def withdrawal_notice(paper: Paper) -> str:
    """The withdrawal notice of a paper's latest version ("" when it is not withdrawn)."""
    return notice_in(paper.comment, paper.abstract)


def look_up(source: PaperSearch, ids: Sequence[str], max_abstract_chars: int,
            previous: Lookup | None) -> Lookup:
    """The withdrawals among `ids` (base ids): as `previous` found them for the same ids,
    else asked of arXiv (nothing to look up: an empty lookup, kept like any other)."""
    wanted = tuple(sorted(set(ids)))
    if not wanted:
        return Lookup()
    if previous is not None and previous.ids == wanted and not previous.error:
        return previous
    try:
        papers = source.lookup(wanted, max_abstract_chars)
    except ArxivError as err:
        log.warning("could not look up the earlier editions' papers: %s", err)
        return Lookup(wanted, (), f"arXiv could not be asked which papers were withdrawn: {err}")
    withdrawn = [Withdrawal(p.base_id, p.arxiv_id, p.title, notice) for p in papers
                 if p.base_id in wanted and (notice := withdrawal_notice(p))]
    return Lookup(wanted, tuple(sorted(withdrawn, key=lambda w: w.base_id)))
