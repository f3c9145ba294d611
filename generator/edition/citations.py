"""Check every citation in model output against the bundle, and link the ones that resolve.

"Paper 5", "Papers 1, 8, 9", "Papers 3–5", "(Paper 12)", "paper 7": each becomes a link to the
paper's page. A number outside the bundle, or a title that names another paper, is flagged
where it stands. A figure (45.8%, 1.83×) in a sentence that cites exactly one paper is looked
up in that paper's abstract and full-text excerpt and marked found or not found. Everything
checked is also recorded for edition.json and the edition overview.

The linker runs on Markdown that `safe_text.md_model` has already made inert, outside code, so
the markup it inserts is the only HTML in the text, and it is ours.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..archive.names import name_citations
from ..archive.prose import one_paper_once, read_away
from ..archive.values import Problem
from ..evidence.checks import KEY, VERDICT_LABELS, ClaimCheck, FigureCheck, Standing
from ..evidence.claims import CITE_RE as _CITE_RE
from ..evidence.claims import FIGURE_RE as _FIGURE_RE
from ..evidence.claims import NUMBER_RE as _NUMBER_RE
from ..evidence.claims import as_read, before_stop, headed
from ..evidence.claims import numbers as _numbers
from ..evidence.claims import plain_sentence as _plain
from ..evidence.naming import Citation, find_citations, named_in, names_pattern
from ..evidence.naming import squashed as _squashed
from ..papers import NumberedPaper
from ..text.safe_text import escape_markdown, tooltip
from .facts import PaperFacts, TextFacts

# A name right after a citation: "(FlashDecoding)", ', "A Title"' or ": *A Title*".
_NAME_RE = re.compile(r"""\s*(?:\(([^()\n]{2,150})\)"""
                      r"""|[,:]?\s*["“]([^"”\n]{3,200})["”]"""
                      r"""|[,:]?\s*\*([^*\n]{3,200})\*)""")
_WORD_RE = re.compile(r"[a-z0-9]+")
_PARKED_RE = re.compile("\x00(\\d+)\x00")
_STOP = {"a", "an", "the", "of", "for", "and", "in", "on", "to", "with", "via", "by", "at",
         "from", "is", "are", "towards", "toward", "using", "its", "their", "paper", "et", "al"}


@dataclass
class PageCitations:
    """What one synthesis page cites, as found while linking it."""

    page: str
    cited: dict[int, int] = field(default_factory=dict)  # paper number -> times cited
    # paper number -> the sentences citing it, each with its verdict (None: not checked)
    contexts: dict[int, list[tuple[str, Standing | None]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    figures: list[FigureCheck] = field(default_factory=list)


def _restates(given: str, name: str) -> bool:
    """Whether a name given after a citation only says the paper's name again."""
    given, name = _squashed(given), _squashed(name)
    return bool(name) and (given == name or (len(name) >= 4 and given.startswith(name)))


def _words(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text.lower()) if w not in _STOP]


def title_score(name: str, title: str) -> float:
    """How well `name` (a short name or a full title) matches `title`, from 0 to 1."""
    name_words, title_words = _words(name), _words(title)
    if not name_words or not title_words:
        return 0.0
    joined_name, joined_title = " ".join(name_words), " ".join(title_words)
    if joined_name in joined_title:
        return 1.0
    # A short name such as "FlashDecoding" against "Flash-Decoding for long-context inference".
    squashed = "".join(title_words)
    if len(joined_name) >= 4 and joined_name.replace(" ", "") in squashed:
        return 1.0
    coverage = sum(1 for w in name_words if w in title_words) / len(name_words)
    ratio = difflib.SequenceMatcher(None, joined_name, joined_title).ratio()
    return max(coverage, ratio)


def _attr(text: str) -> str:
    # No `$` in an attribute: the math pass after linking must never start a formula there.
    return html.escape(text, quote=True).replace("$", "&#36;")


class CitationLinker:
    """Links and checks citations in one page's escaped Markdown; call it on each text segment."""

    def __init__(self, page: str, papers: Sequence[NumberedPaper], link_prefix: str = "papers/",
                 overview: str = "index.md", names: Mapping[int, str] | None = None,
                 facts: PaperFacts | None = None,
                 withdrawn: Mapping[int, str] | None = None,
                 links: Mapping[int, str] | None = None,
                 marks_page: str = "../../marks.md") -> None:
        self.result = PageCitations(page)
        self._marks_page = marks_page  # "How to read the marks", from this page
        # Where a citation links instead of `link_prefix` + slug (a question whose paper's own
        # page is gone with its edition links the paper's arXiv page).
        self._links = dict(links or {})
        # Papers arXiv now lists as withdrawn (by number, with the notice): flagged where cited.
        self._withdrawn = dict(withdrawn or {})
        self._papers = {p.number: p for p in papers}
        # The papers' short names (archive/names.py): a citation reads as the name it links.
        self._plain_names = dict(names or {})
        self._names = {n: box_text(name) for n, name in self._plain_names.items()}
        self._aliases = {n: (name, self._names[n]) for n, name in self._plain_names.items()}
        self._prefix = link_prefix
        self._overview = overview
        # Whether a paper states a figure: from its text, or as the edition's record says.
        self._facts = facts or TextFacts(papers)
        # The verdicts of the answer being linked, by sentence (see edition/evidence.py);
        # None: no evidence was asked for this text.
        self.evidence: Mapping[str, ClaimCheck] | None = None
        # The names by which the answer being linked cites papers without their numbers
        # (evidence.naming.answer_names): linked where they stand, and their sentences checked.
        self.names: Mapping[int, tuple[str, ...]] = {}
        # Whether the sentence being linked stands in a heading: no flag, mark or box there
        # (a table of contents and a permalink show a heading's words whole).
        self._heading = False

    def __call__(self, text: str) -> str:
        out = []
        for sentence, gap, heading in headed(text):
            linked = self._sentence(sentence, heading)
            if sentence.strip() and not linked and "\n" not in gap:
                gap = ""  # a sentence dropped (prose.one_paper_once) takes its space along
            out.append(linked + gap)
        return "".join(out)

    def _link(self, number: int, label: str) -> str:
        paper = self._papers[number].paper
        href = self._links.get(number) or f"{self._prefix}{paper.slug}.md"
        link = f'[{label}]({href} "{tooltip(paper.title)}")'
        if number in self._withdrawn and not self._heading:
            notice = html.escape(tooltip(self._withdrawn[number]), quote=True)
            link += f' <span class="digest-flag" title="{notice}">⚠\u00a0withdrawn</span>'
        return link

    def _invalid(self, number: int, label: str) -> str:
        total = len(self._papers)
        why = (f"There is no Paper {number} in this edition: its bundle has papers 1–{total}."
               if total else "This edition has no papers.")
        if self._heading:
            return label  # recorded as a problem all the same; the body flags it
        return (f'<span class="digest-flag" title="{_attr(why)}">{label} ⚠ not in this '
                f'edition</span>')

    def _sentence(self, sentence: str, heading: bool = False) -> str:
        """A sentence linked and checked; in a heading, linked only (no mark, quote box or
        key goes into a table of contents or a permalink: the body makes the claims)."""
        self._heading = heading
        by_name = [n for n in named_in(sentence, self.names) if n in self._papers]
        if not find_citations(sentence) and not by_name:
            return sentence
        plain = _plain(sentence)  # before any change: the evidence checks know it so
        # A paper named twice in a row reads once; "X and X agree" goes (prose.py).
        aliases = {n: (*self._aliases.get(n, ()), *self.names.get(n, ()))
                   for n in {*self._aliases, *self.names}}  # the answer's own names too
        once = one_paper_once(sentence, aliases)
        if once is None or read_away(plain, self._plain_names, self.names):  # its check too
            return ""
        sentence = once
        citations = find_citations(sentence)
        cited_here = list(dict.fromkeys(
            [n for c in citations for n in c.numbers if n in self._papers] + by_name))
        named = as_read(name_citations(plain, self._plain_names) if self._names else plain)
        check = (self.evidence.get(plain) if self.evidence is not None and not heading
                 else None)
        for n in cited_here:
            self.result.cited[n] = self.result.cited.get(n, 0) + 1
            if heading:
                continue
            contexts = self.result.contexts.setdefault(n, [])
            if all(named != said for said, _ in contexts):
                contexts.append((named, check.standing_for(n) if check else None))
        # Figures are marked first and parked behind placeholders, so that citation links and
        # our markup never land inside one another.
        parked: list[str] = []
        if len(cited_here) == 1 and not heading:
            sentence = self._mark_figures(sentence, cited_here[0], plain, parked)
            citations = find_citations(sentence)
        pieces: list[str] = []
        last = 0
        linked_here = {n for c in citations for n in c.numbers}
        for citation in citations:
            pieces.append(self._names_linked(sentence[last:citation.start], linked_here))
            for n in citation.numbers:
                if n not in self._papers:
                    self.result.problems.append(Problem(
                        f"{citation.word} {n}", n, f"no Paper {n} in this edition's bundle"))
            pieces.append(self._citation(citation, sentence))
            last = citation.end
        pieces.append(self._names_linked(sentence[last:], linked_here))
        linked = _PARKED_RE.sub(lambda m: parked[int(m.group(1))], "".join(pieces))
        if check is not None:  # a phantom citation alone is a claim too
            linked = before_stop(linked.rstrip(), self._evidence(check))
        return linked

    def _names_linked(self, text: str, linked_here: set[int]) -> str:
        """`text` with the first mention of each paper it names (by a name the answer gave it,
        or its title's own name) linked, where the sentence does not link that paper already."""
        pattern, owner = names_pattern(self.names)
        if pattern is None or not text:
            return text
        out, last = [], 0
        for match in pattern.finditer(text):
            number = owner[match.group(1)]
            if number in linked_here or number not in self._papers:
                continue
            linked_here.add(number)
            out += [text[last:match.start()], self._link(number, match.group(1))]
            last = match.end()
        return "".join(out) + text[last:]

    def _citation(self, citation: Citation, sentence: str) -> str:
        """A citation as the papers' linked names, each once: the name the text gave a number
        right after it is not said again (a title that names another paper is flagged)."""
        given = dict(citation.given)
        if citation.listed:
            items = []
            for n in citation.numbers:
                if n not in self._papers:
                    items.append(self._invalid(n, str(n)) + (f" ({given[n]})" if n in given
                                                             else ""))
                    continue
                label = self._names.get(n, f"Paper {n}")
                keep = n in given and not self._names_paper(given[n], n, label)
                items.append(self._link(n, label) + (f" ({given[n]})" if keep else ""))
            return citation.prefix + ", ".join(items)
        numbers = list(citation.numbers)
        head = self._markup(citation.word, citation.spec, numbers)
        if len(numbers) != 1 or numbers[0] not in self._papers:
            rest = sentence[citation.name_start:citation.end] if citation.name_start >= 0 else ""
            return head + rest
        (n,) = numbers
        if citation.name_start < 0:
            return head + self._check_name(n, sentence, citation.end)
        name = given[n]
        other = self._names_other(name, n)
        if other is None:  # the model's name for this paper: the link says it, unless the
            # page reads it by another name, when the model's own stays beside it (a reader
            # meets "EnerInfer" later in the answer and knows which paper it is).
            label = self._plain_names.get(n, "")
            if label and not _restates(name, label) and not _restates(label, name):
                return head + sentence[citation.name_start:citation.end]
            return head
        reason = f"the name given names Paper {other}, not Paper {n}"
        self.result.problems.append(Problem(_plain(f"Paper {n} ({name})"), n, reason))
        return (head + sentence[citation.name_start:citation.end]
                + ("" if self._heading else
                   f' <span class="digest-flag" title="{_attr(reason)}">⚠ title mismatch</span>'))

    def _names_paper(self, given: str, number: int, label: str) -> bool:
        """Whether a name given a number names that paper: its name, a run of its title's
        words, or a name no other paper of the bundle has."""
        title = self._papers[number].paper.title
        return (_restates(given, label) or title_score(given, title) >= 0.6
                or self._names_other(given, number) is None)

    def _names_other(self, given: str, number: int) -> int | None:
        """Another paper of the bundle that a name given Paper `number` clearly names (its
        title, or that paper's own name), or None."""
        if title_score(given, self._papers[number].paper.title) >= 0.6:
            return None
        for n, item in self._papers.items():
            if n != number and (title_score(given, item.paper.title) >= 0.8
                                or _restates(given, self._plain_names.get(n, ""))):
                return n
        return None

    def _evidence(self, check: ClaimCheck) -> str:
        """A mark after the sentence, whatever its verdict (no failed sentence goes unmarked);
        focused or hovered, it shows each cited paper's quote and what was found in a box."""
        standing = check.standing
        box = []
        several = len(check.quotes) > 1
        for part in check.quotes:
            if not part.quote:
                continue
            source = part.found_in or part.paper
            said = (f" ({VERDICT_LABELS[part.verdict]})"
                    if several and part.verdict != "supported" else "")
            where = (self._link(source, self._names.get(source, f"Paper {source}"))
                     if source in self._papers else f"Paper {source}")
            box.append(f"“{box_text(part.quote)}” — {where}{box_text(said)}<br>")
        label = check.label[:1].upper() + check.label[1:]
        notes = [p.note for p in check.parts] if check.parts else [check.note]
        note = "; ".join(name_citations(n, self._plain_names) for n in notes if n)
        judgement = check.judgement
        reason = (name_citations(judgement.reason, self._plain_names).rstrip(".")
                  if judgement is not None and judgement.reason else "")
        judged = ("" if judgement is None or not reason else f"not judged: {reason}"
                  if judgement.support == "failed" else f"the judge: {reason}")
        said = "; ".join(filter(None, (note, judged)))
        box.append(box_text(f"{label}: {said}." if said else f"{label}."))
        # The key, beside every mark: a reader meets the first one anywhere on the page.
        box.append(f"<br><small>{KEY} · [how to read the marks]({self._marks_page})</small>")
        return (f'<span class="digest-ev digest-ev-{standing}" tabindex="0">'
                f'<span class="digest-ev-mark">{check.mark_text}</span>'
                f'<span class="digest-ev-box" data-search-exclude>{"".join(box)}</span></span>')

    def _markup(self, word: str, spec: str, numbers: list[int]) -> str:
        if len(numbers) == 1:
            (n,) = numbers
            label = f"{word} {spec}"
            if n in self._papers:
                return self._link(n, self._names.get(n, label))
            return self._invalid(n, label)
        if self._names and all(n in self._papers for n in numbers):
            return self._named(spec)

        def one(match: re.Match[str]) -> str:
            low, high = match.group(1), match.group(2)
            parts = [self._link(int(x), x) if int(x) in self._papers else self._invalid(int(x), x)
                     for x in filter(None, (low, high))]
            if high:
                dash = match.group(0)[len(low):len(match.group(0)) - len(high)]
                return parts[0] + dash + parts[1]
            return parts[0]

        return f"{word} " + _NUMBER_RE.sub(one, spec)

    def _named(self, spec: str) -> str:
        """ "1, 8 and 9" or "3–5" as the papers' linked names ("A, B and C")."""
        def one(match: re.Match[str]) -> str:
            return ", ".join(self._link(n, self._names.get(n, f"Paper {n}"))
                             for n in _numbers(match.group(0)))

        return _NUMBER_RE.sub(one, spec)

    def _check_name(self, number: int, sentence: str, end: int) -> str:
        """Flag a title given right after a citation that names a different paper."""
        match = _NAME_RE.match(sentence, end)
        if not match:
            return ""
        name = next(g for g in match.groups() if g)
        if not any(w.isalpha() for w in _words(_CITE_RE.sub(" ", name))):
            return ""  # "Paper 2 (Paper 4)", "(2023)": another citation or a number, not a title
        # Quoted or emphasised right after the number: meant as a title. After a colon it is
        # as often the paper's words ("Paper 16: “a 2× cut in memory”"), flagged only where it
        # names another paper.
        explicit = match.group(1) is None and not match.group(0).lstrip().startswith(":")
        title = self._papers[number].paper.title
        if title_score(name, title) >= 0.6:
            return ""
        others = [(title_score(name, p.paper.title), n) for n, p in self._papers.items() if n != number]
        best_score, best = max(others, default=(0.0, 0))
        if best_score >= 0.8:
            reason = f"the title given names Paper {best}, not Paper {number}"
        elif explicit:
            reason = f"Paper {number} is titled “{title}”"
        else:
            return ""  # a parenthetical that is not a title: nothing to check
        self.result.problems.append(Problem(_plain(f"Paper {number} {match.group(0).strip()}"),
                                            number, reason))
        if self._heading:
            return ""
        return f' <span class="digest-flag" title="{_attr(reason)}">⚠ title mismatch</span>'

    def _mark_figures(self, sentence: str, number: int, plain: str, parked: list[str]) -> str:
        def mark(match: re.Match[str]) -> str:
            figure = match.group(0).strip()
            found = self._facts.states(number, match.group(1), match.group(2).strip())
            self.result.figures.append(FigureCheck(number, figure, found, plain))
            if found:
                note = f"{figure} appears in the text of Paper {number}"
                css, sign = "digest-found", " ✓"
            else:
                note = (f"{figure} was not found in the abstract or full-text excerpt of "
                        f"Paper {number}")
                css, sign = "digest-flag", " ?"
            parked.append(f'<span class="{css}" title="{_attr(note)}">{figure}{sign}</span>')
            return f"\x00{len(parked) - 1}\x00"

        return _FIGURE_RE.sub(mark, sentence)


def box_text(text: str) -> str:
    """Untrusted text for a name or an evidence box, which the page's TeX pass reads after it
    is escaped: brackets as character references, since a quote's "[12] and [15]", escaped
    as "\\[12\\] and \\[15\\]", would open display math."""
    return escape_markdown(text).replace("\\[", "&#91;").replace("\\]", "&#93;")
