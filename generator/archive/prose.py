"""Prose the digest assembles from sentences, said once: no sentence twice, no paper twice.

A lead, a "since" paragraph or a field overview is put together from sentences of several
answers and checks; the same sentence can come from each of them (a sentence citing three
papers is three checked claims), and a model can name one paper twice, once by its citation and
once by its name ("Paper 4 and Learning to Evict … agree"), which reads as a paper agreeing
with itself once citations become names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from ..evidence.claims import CITE_RE, SENTENCE_RE
from ..evidence.claims import numbers as cited_numbers

# Between two members of a list: ", ", " and ", ", and ", " & ".
_JOIN = r"\s*(?:,\s*and\s+|,\s*|\band\s+|&\s*)"
_GIVEN = r"(?:\s*\([^()\n]{1,150}\))?"  # a name or title a model gives in parentheses
# Words that need two papers: with one left, the sentence says nothing.
_TOGETHER_RE = re.compile(r"\b(?:agree[ds]?|agreement|concur\w*|converge\w*|both|each other|"
                          r"one another|share|same (?:mechanism|approach|idea|finding))\b",
                          re.IGNORECASE)

# The comparison's "Disagrees: Paper N with [claim id]" lines: read by the continuity, never
# published.
DISAGREES_RE = re.compile(r"^\W{0,8}Disagree\w{0,8}\W{1,8}([^\n\[]{0,300}?)\[([\w.-]+#\d+)\]",
                           re.MULTILINE | re.I)


def sentence_key(sentence: str) -> str:
    """What makes two sentences the same: their words, whatever the spacing and case."""
    return " ".join(sentence.split()).casefold().rstrip(".!?…")


def unique_sentences(sentences: Iterable[str]) -> list[str]:
    """The sentences in order, each once (spacing and case aside); empty ones dropped."""
    seen: set[str] = set()
    out = []
    for sentence in sentences:
        key = sentence_key(sentence)
        if key and key not in seen:
            seen.add(key)
            out.append(sentence)
    return out


def said_once(text: str) -> str:
    """Plain text with each of its sentences once, joined by single spaces."""
    return " ".join(s.strip() for s in unique_sentences(SENTENCE_RE.split(text)))


def one_paper_once(sentence: str, aliases: Mapping[int, Sequence[str]]) -> str | None:
    """`sentence` with a paper named twice in a row ("Paper 4 and Paper 4", "Paper 4 and
    <its name>", "<its name>, Paper 4") named once; None where that leaves one paper in a
    sentence that needs two ("… agree on the mechanism"). `aliases`: each paper's names."""
    collapsed = False
    while True:
        found = _collapse_one(sentence, aliases)
        if found is None:
            break
        sentence, collapsed = found, True
    if collapsed and _TOGETHER_RE.search(sentence) and len(_cited(sentence)) == 1:
        return None
    return sentence


def read_away(sentence: str, names: Mapping[int, str],
              given: Mapping[int, Sequence[str]] | None = None) -> bool:
    """Whether `one_paper_once` drops `sentence` (plain text, citing "Paper N") for reading,
    its papers named `names` and, in its answer, `given` (the names the answer tied to their
    numbers, as the page's linker reads them: naming.answer_names): such a sentence is neither
    shown nor counted, so its check goes with it (no verdict is kept for words no page
    shows)."""
    aliases = {n: (names[n], *(given or {}).get(n, ())) if n in names else tuple(
        (given or {}).get(n, ())) for n in {*names, *(given or {})}}
    return CITE_RE.search(sentence) is not None and one_paper_once(sentence, aliases) is None


def papers_once(text: str, aliases: Mapping[int, Sequence[str]]) -> str:
    """`text` with `one_paper_once` applied to each sentence (a dropped one goes whole)."""
    out, last = [], 0
    for match in [*SENTENCE_RE.finditer(text), None]:
        end = match.start() if match else len(text)
        sentence, gap = text[last:end], match.group(0) if match else ""
        kept = one_paper_once(sentence, aliases) if CITE_RE.search(sentence) else sentence
        if kept is not None:
            out.append(kept + gap)
        if match:
            last = match.end()
    joined = "".join(out)
    return joined if text[-1:].isspace() else joined.rstrip()


def _cited(sentence: str) -> set[int]:
    return {n for m in CITE_RE.finditer(sentence) for n in cited_numbers(m.group(2))}


def _collapse_one(sentence: str, aliases: Mapping[int, Sequence[str]]) -> str | None:
    """The sentence with its first doubled paper said once, or None if none is doubled."""
    for match in CITE_RE.finditer(sentence):
        numbers = list(dict.fromkeys(cited_numbers(match.group(2))))
        if len(numbers) != len(cited_numbers(match.group(2))):  # "Papers 3 and 3"
            spec = " and ".join(str(n) for n in numbers) if len(numbers) == 2 else ", ".join(
                str(n) for n in numbers)
            word = "Paper" if len(numbers) == 1 else "Papers"
            return sentence[:match.start()] + f"{word} {spec}" + sentence[match.end():]
        if len(numbers) != 1:
            continue
        (number,) = numbers
        names = [re.escape(" ".join(a.split())) for a in aliases.get(number, ()) if a.strip()]
        alias = "|".join([*names, rf"[Pp]aper\s+{number}(?!\d)"])
        # "JetFlow (Paper 12)": the name, then its citation in parentheses, reads as the
        # citation alone (a link that says the name), never "JetFlow (JetFlow)".
        named = re.search(rf"(?<![\w-])(?:{alias})\s*\(\s*$", sentence[:match.start()],
                          re.IGNORECASE)
        close = re.match(r"\s*\)", sentence[match.end():])
        if named and close:
            return (sentence[:named.start()] + sentence[match.start():match.end()]
                    + sentence[match.end() + close.end():])
        before = re.search(rf"(?:{alias}){_GIVEN}{_JOIN}$", sentence[:match.start()],
                           re.IGNORECASE)
        if before:
            return sentence[:before.start()] + sentence[match.start():]
        after = re.match(rf"{_GIVEN}{_JOIN}(?:{alias})(?!\w)", sentence[match.end():],
                         re.IGNORECASE)
        if after:
            given = re.match(_GIVEN, sentence[match.end():])
            keep = given.group(0) if given else ""
            return (sentence[:match.end()] + keep
                    + sentence[match.end() + after.end():])
    return None


def without_disagreements(answer: str) -> str:
    """The comparison as published: its "Disagrees: Paper N with [claim id]" lines are asked
    for the digest's own use (`disagreements` reads them), never shown as prose."""
    if not DISAGREES_RE.search(answer):
        return answer
    kept = [line for line in answer.split("\n") if not DISAGREES_RE.match(line)]
    return "\n".join(kept).rstrip() + "\n"
