"""Which papers are withdrawn now, from everything the archive saw of their versions.

A withdrawal is a property of a version: arXiv keeps the paper and adds a version whose abstract
(or comment) is the notice. A later normal version restores it. So the state of a paper is the
newest thing the archive observed of it, in edition order: an edition's lookup (which asks for
each earlier paper's latest version) found it withdrawn, or answered and did not; or an edition
carried a version of it, withdrawn (its abstract the notice) or normal and newer than the
withdrawn one. Every page, the lead and the flags beside citations follow this one state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..fetch.withdrawals import notice_in
from ..papers import Lookup, NumberedPaper, Withdrawal, base_of
from .record import EditionRecord

_VERSION_RE = re.compile(r"v(\d+)$", re.ASCII)


def version_of(arxiv_id: str) -> int:
    """The version number of an id (0 where it names none)."""
    found = _VERSION_RE.search(arxiv_id)
    return int(found.group(1)) if found else 0


@dataclass(frozen=True)
class Sighting:
    """What one edition saw: its lookup of earlier papers, and the versions it carried as
    (arXiv id, title, withdrawal notice or "")."""

    edition: str
    looked_up: tuple[str, ...] = ()
    lookup_complete: bool = False  # every id answered: one not found withdrawn is not
    withdrawn: tuple[Withdrawal, ...] = ()
    versions: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def of_record(cls, record: EditionRecord) -> Sighting:
        since = record.continuity
        return cls(record.edition,
                   since.looked_up if since else (),
                   bool(since and since.looked_up and not since.lookup_error),
                   since.withdrawn if since else (),
                   tuple((p.arxiv_id, p.title, p.withdrawal_notice) for p in record.papers))

    @classmethod
    def of_run(cls, edition: str, lookup: Lookup | None, papers: Sequence[NumberedPaper]
               ) -> Sighting:
        return cls(edition,
                   lookup.ids if lookup else (),
                   bool(lookup and lookup.ids and not lookup.error),
                   lookup.withdrawn if lookup else (),
                   tuple((p.paper.arxiv_id, p.paper.title,
                          notice_in(p.paper.comment, p.paper.abstract)) for p in papers))


def current(sightings: Iterable[Sighting]) -> dict[str, Withdrawal]:
    """The papers (base ids) withdrawn as of the newest sighting, each with its withdrawal."""
    state: dict[str, Withdrawal] = {}
    for seen in sorted(sightings, key=lambda s: s.edition):
        found = {w.base_id: w for w in seen.withdrawn}
        for base in seen.looked_up:
            if base in found:
                state[base] = found[base]
            elif seen.lookup_complete:
                state.pop(base, None)  # its latest version, asked for, is a paper again
        for arxiv_id, title, notice in seen.versions:
            base = base_of(arxiv_id)
            gone = state.get(base)
            if notice and (gone is None or version_of(arxiv_id) >= version_of(gone.arxiv_id)):
                state[base] = Withdrawal(base, arxiv_id, title, notice)
            elif not notice and gone is not None and (
                    version_of(arxiv_id) > version_of(gone.arxiv_id)):
                del state[base]  # restored by a later normal version
    return state


def withdrawn_now(records: Sequence[EditionRecord], *extra: Sighting) -> dict[str, Withdrawal]:
    """The current withdrawals over every record (and what a run sees, where given: it takes
    the place of the record of its own edition)."""
    mine = {s.edition for s in extra}
    return current([*(Sighting.of_record(r) for r in records if r.edition not in mine), *extra])
