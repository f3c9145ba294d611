"""The small values an edition's record holds beside its papers and prompts (record.py): what
each synthesis page cites, which figures the papers state, the bundle's size, the feed's stamps
and the pages for the navigation.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..completions import PromptKind
from ..evidence.checks import FigureCheck
from .values import Problem


@dataclass(frozen=True)
class CitedPaper:
    number: int
    arxiv_id: str
    count: int  # sentences citing it


@dataclass(frozen=True)
class PageCitations:
    """What a synthesis page cites, as its linking found it."""

    resolved: tuple[CitedPaper, ...] = ()
    unresolved: tuple[Problem, ...] = ()
    figures: tuple[FigureCheck, ...] = ()


@dataclass(frozen=True)
class FigureFact:
    """Whether a paper's title, abstract and excerpt state a figure ("45.8", "%")."""

    paper: int
    number: str
    unit: str
    found: bool


@dataclass(frozen=True)
class BundleFigures:
    chars: int = 0
    estimated_tokens: int = 0
    note: str = ""


@dataclass(frozen=True)
class FeedStamps:
    """When the feed first showed the edition, and when what it shows last changed."""

    digest: str
    published: str
    updated: str


@dataclass(frozen=True)
class RecordPage:
    """A synthesis page of an edition: its file stem and title (for the navigation)."""

    stem: str
    title: str
    kind: PromptKind
