"""The reader's own library: the papers a lab already keeps, as "more like this" examples.

`[triage] library` names a file in the workspace: a BibTeX export (Zotero, Mendeley, JabRef),
an RIS export, or a text file of arXiv ids, one a line. Its papers are shown to triage the way
marks are (newest first, up to `[triage] library_examples`), and a paper of the window that
the library already holds is listed as "in your library", never bundled as news. An entry
names its arXiv paper by an `eprint`, an `arxivid`, an arXiv DOI (10.48550/arXiv.…), an
arxiv.org URL or an "arXiv:…" note; one that names none is still an example, by its title and
abstract. A file that cannot be read is one line naming the file and the entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UsageError
from ..papers import LibraryPaper, Paper, valid_arxiv_id
from ..text.safe_text import MAX_TITLE_CHARS, clean, cut
from .bibtex_read import BibSyntaxError, field_text, read_bibtex

MAX_LIBRARY_BYTES = 64 * 1024 * 1024  # a 20,000-paper Zotero export with abstracts is ~40 MB
MAX_ABSTRACT_CHARS = 5000  # more than any example is shown ([feedback] example_chars' most)
_ID = r"(\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)?(?:\.[A-Z]{2})?/\d{7})(v\d+)?"
# Where a reference manager puts an arXiv id: a URL, the arXiv DOI, "arXiv:2611.00001".
_ID_IN_TEXT_RES = (re.compile(rf"arxiv\.org/(?:abs|pdf)/{_ID}", re.IGNORECASE),
                   re.compile(rf"10\.48550/arxiv\.{_ID}", re.IGNORECASE),
                   re.compile(rf"\barxiv\s*[:. ]\s*{_ID}", re.IGNORECASE))
_BARE_ID_RE = re.compile(rf"(?:arxiv:)?{_ID}", re.IGNORECASE)
_RIS_TAG_RE = re.compile(r"^([A-Z][A-Z0-9])\s{1,2}-(?: (.*))?$")
_WORD_RE = re.compile(r"[^\W_]+")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
MIN_TITLE_KEY_CHARS = 20  # shorter titles ("Introduction") name no paper on their own


class LibraryError(UsageError):
    """The library file is missing or cannot be read; the message names it and the entry."""


@dataclass(frozen=True)
class Library:
    """The library's papers, newest first, each once."""

    name: str  # the file's name, for messages
    papers: tuple[LibraryPaper, ...]
    skipped: int = 0  # entries with neither an arXiv id nor a title: nothing to show triage

    def holds(self, paper: Paper) -> bool:
        """Whether the library has `paper`: by its arXiv id, or by its title where an entry
        names no arXiv paper (the journal version of a preprint, say)."""
        return paper.base_id in self._ids or title_key(paper.title) in self._titles

    @property
    def _ids(self) -> frozenset[str]:
        return frozenset(p.arxiv_id for p in self.papers if p.arxiv_id)

    @property
    def _titles(self) -> frozenset[str]:
        return frozenset(key for p in self.papers if (key := title_key(p.title)))


def title_key(title: str) -> str:
    """A title as two exports of one paper spell it alike ("" when too short to tell)."""
    key = " ".join(_WORD_RE.findall(field_text(title).casefold()))
    return key if len(key) >= MIN_TITLE_KEY_CHARS else ""


def load_library(path: Path) -> Library:
    """The library at `path`, its format told by its name (.bib, .ris) or else its content."""
    where = f"{path} ([triage] library)"
    try:
        if path.stat().st_size > MAX_LIBRARY_BYTES:
            raise LibraryError(f"{where} is larger than {MAX_LIBRARY_BYTES // 2**20} MB: export "
                               "the collection triage should learn from, not the whole library")
        data = path.read_bytes()
    except FileNotFoundError as err:
        raise LibraryError(f"{where}: no such file (the path is relative to config.toml): "
                           "export your library there as BibTeX or RIS, or list arXiv ids in "
                           "it, one a line") from err
    except OSError as err:
        raise LibraryError(f"{where} cannot be read ({err.strerror or err})") from err
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise LibraryError(f"{where}: not UTF-8 text (byte {err.start}): export it as UTF-8 "
                           "(Zotero: Export Format, Character Encoding: Unicode (UTF-8))"
                           ) from err
    text = clean(text)
    suffix, head = path.suffix.lower(), text.lstrip()[:200]
    try:
        if suffix in (".bib", ".bibtex") or (suffix not in (".ris", ".txt")
                                             and head.startswith(("@", "%"))):
            papers, skipped = _from_bibtex(text)
        elif suffix == ".ris" or _RIS_TAG_RE.match(head.split("\n", 1)[0]):
            papers, skipped = _from_ris(text)
        else:
            papers, skipped = _from_ids(text), 0
    except (BibSyntaxError, ValueError) as err:
        raise LibraryError(f"{path}: {err} ([triage] library): fix the entry, or export the "
                           "library again") from err
    return Library(path.name, newest_first(papers), skipped)


def newest_first(papers: list[LibraryPaper]) -> tuple[LibraryPaper, ...]:
    """Newest first (a later entry of the file first among equals, undated ones last), each
    arXiv paper once."""
    order = sorted(range(len(papers)), key=lambda i: (papers[i].date, i), reverse=True)
    seen: set[str] = set()
    kept = []
    for index in order:
        paper = papers[index]
        if paper.arxiv_id and paper.arxiv_id in seen:
            continue
        seen.add(paper.arxiv_id)
        kept.append(paper)
    return tuple(kept)


def arxiv_id_in(*texts: str) -> str:
    """The first arXiv id (without version) named in `texts` by URL, DOI or "arXiv:" ("")."""
    for text in texts:
        for pattern in _ID_IN_TEXT_RES:
            match = pattern.search(text)
            if match and valid_arxiv_id(match.group(1)):
                return match.group(1)
    return ""


def _bare_id(value: str) -> str:
    match = _BARE_ID_RE.fullmatch(field_text(value).strip())
    return match.group(1) if match and valid_arxiv_id(match.group(1)) else ""


def _paper(arxiv_id: str, title: str, abstract: str, date: str, where: str) -> LibraryPaper:
    return LibraryPaper(arxiv_id, cut(field_text(title), MAX_TITLE_CHARS),
                        cut(field_text(abstract), MAX_ABSTRACT_CHARS), date, where)


def _from_bibtex(text: str) -> tuple[list[LibraryPaper], int]:
    papers, skipped = [], 0
    for entry in read_bibtex(text):
        f = entry.fields
        prefix = field_text(f.get("archiveprefix", "") or f.get("eprinttype", "")).lower()
        eprint = _bare_id(f.get("eprint", "")) if prefix in ("", "arxiv") else ""
        arxiv_id = (eprint or _bare_id(f.get("arxivid", "")) or _bare_id(f.get("arxiv", ""))
                    or arxiv_id_in(*(f.get(k, "") for k in ("doi", "url", "eprint", "note",
                                                            "journal", "howpublished",
                                                            "journaltitle", "number"))))
        title = f.get("title", "")
        if not arxiv_id and not field_text(title):
            skipped += 1
            continue
        papers.append(_paper(arxiv_id, title, f.get("abstract", ""), _bib_date(f),
                             entry.where))
    return papers, skipped


def _bib_date(fields: dict[str, str]) -> str:
    """"2026-11-25" from biblatex's `date`, else "2026-11" or "2026" from `year` and `month`."""
    date = field_text(fields.get("date", ""))
    if re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", date[:10]):
        return date[:10]
    year = field_text(fields.get("year", ""))[:4]
    if not year.isdigit():
        return ""
    month = field_text(fields.get("month", "")).lower()
    number = (_MONTHS.index(month[:3]) + 1 if month[:3] in _MONTHS else
              int(month) if month.isdigit() else 0)
    return f"{year}-{number:02d}" if 1 <= number <= 12 else year


def _from_ris(text: str) -> tuple[list[LibraryPaper], int]:
    """RIS: records from `TY  - ` to `ER  - `, one tag a line, untagged lines continuing the
    line before (a long abstract)."""
    papers, skipped = [], 0
    record: dict[str, list[str]] | None = None
    last, start, number = "", 0, 0
    for index, line in enumerate(text.split("\n"), start=1):
        match = _RIS_TAG_RE.match(line.rstrip())
        if match is None:
            if not line.strip():
                continue
            if record is None or not last:
                raise ValueError(f"line {index}: {cut(line.strip(), 40)!r} is not an RIS line "
                                 "(TAG  - value) and continues no record")
            record[last][-1] += " " + line.strip()
            continue
        tag, value = match.group(1), (match.group(2) or "").strip()
        if tag == "TY":
            if record is not None:
                raise ValueError(f"record {number} (line {start}) has no end (ER  - ) before "
                                 f"the next one at line {index}")
            record, last, start, number = {}, "", index, number + 1
        elif record is None:
            raise ValueError(f"line {index}: {tag}  - outside a record (each starts with "
                             "TY  - and ends with ER  - )")
        elif tag == "ER":
            paper = _ris_paper(record, f"record {number}, line {start}")
            if paper is None:
                skipped += 1
            else:
                papers.append(paper)
            record, last = None, ""
        else:
            record.setdefault(tag, []).append(value)
            last = tag
    if record is not None:
        raise ValueError(f"record {number} (line {start}) has no end (ER  - ): the file is cut "
                         "short")
    return papers, skipped


def _ris_paper(record: dict[str, list[str]], where: str) -> LibraryPaper | None:
    def first(*tags: str) -> str:
        return next((record[t][0] for t in tags if record.get(t)), "")

    texts = [v for tag in ("DO", "UR", "L1", "L2", "N1", "M1", "AN", "JO", "J2", "T2", "ID")
             for v in record.get(tag, [])]
    arxiv_id = arxiv_id_in(*texts)
    title = first("TI", "T1", "CT")
    if not arxiv_id and not title:
        return None
    date = first("DA", "PY", "Y1")
    parts = [p for p in re.split(r"[/-]", date) if p.strip()]
    date = "-".join(p.zfill(2) for p in parts[:3]) if parts and parts[0].isdigit() and len(
        parts[0]) == 4 and all(p.isdigit() for p in parts[:3]) else ""
    return _paper(arxiv_id, title, first("AB", "N2"), date, where)


def _from_ids(text: str) -> list[LibraryPaper]:
    """One arXiv id a line (with "arXiv:" or an arxiv.org URL too); # starts a comment."""
    papers = []
    for index, line in enumerate(text.split("\n"), start=1):
        value = line.split("#", 1)[0].strip()
        if not value:
            continue
        arxiv_id = _bare_id(value) or arxiv_id_in(value)
        if not arxiv_id:
            raise ValueError(f"line {index}: {cut(value, 40)!r} is not an arXiv id (like "
                             "2611.00001 or hep-th/9901001); one id a line, # for a comment")
        papers.append(LibraryPaper(arxiv_id, date=id_date(arxiv_id), where=f"line {index}"))
    return papers


def id_date(arxiv_id: str) -> str:
    """The month an arXiv id was given ("2611.00001": "2026-11"), as its number tells."""
    digits = arxiv_id.split("/")[-1][:4]
    if not digits.isdigit():
        return ""
    year = int(digits[:2])
    return f"{2000 + year if year < 91 else 1900 + year}-{digits[2:]}"


def with_text(paper: LibraryPaper, title: str, abstract: str) -> LibraryPaper:
    """`paper` with the title and abstract it lacks, from an edition or arXiv."""
    return replace(paper, title=paper.title or cut(" ".join(title.split()), MAX_TITLE_CHARS),
                   abstract=paper.abstract or cut(" ".join(abstract.split()),
                                                  MAX_ABSTRACT_CHARS))
