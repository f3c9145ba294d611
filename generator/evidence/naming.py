"""Citations as a real model writes them: which numbers and names cite which paper.

The prompt asks for "Paper 3 (FlashDecoding)", and models write that, and more: "Papers 5,
16, 19", "Papers 3–6", "**Papers:** 1 (Kamera), 4 (MOCAP)", "(Paper 5, RLM-Cascade)", "(Paper
5: 45.8% cost reduction)"; and once a paper has a name in the answer, they cite it by that
name alone ("…by paging it (Kamera)", "MOCAP is designed for…"). `find_citations` reads every
numbered form, with the name the text gives each number where it gives one; `answer_names`
gathers the names by which an answer cites each paper: its title's own name ("FastKV: …"),
unless that is an ordinary word, and every name the answer itself gave it after its number.
Claims (claims.py), links (edition/citations.py) and the plain text of the mail and feed
(archive/names.py) all read citations here, so they agree on what a sentence cites.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_NUM = r"\d{1,3}"
_RANGE = rf"{_NUM}(?:\s*(?:[-–—]|to)\s*{_NUM})?"
_SEP = r"\s*(?:,\s*(?:and\s+|&\s*)?|\band\s+|&\s*)"
CITE_RE = re.compile(rf"(?<![\[\w])([Pp]apers?)\s+({_RANGE}(?:{_SEP}{_RANGE})*)\b")
NUMBER_RE = re.compile(rf"({_NUM})(?:\s*(?:[-–—]|to)\s*({_NUM}))?")
_GIVEN = r"\s*\([^()\n]{1,80}\)"
# "**Papers:** 1 (Kamera), 4 (MOCAP), 10": the numbers after a colon, each with its name.
LIST_RE = re.compile(rf"(?<![\[\w])([Pp]apers?)(\*{{0,2}}):(\*{{0,2}})[ \t]*"
                     rf"({_NUM}(?:{_GIVEN})?(?:\s*,\s*(?:and\s+)?{_NUM}(?:{_GIVEN})?)*)(?!\.\d)")
_ITEM_RE = re.compile(rf"({_NUM})(?:\s*\(([^()\n]{{1,80}})\))?")
_AFTER_RE = re.compile(r"[ \t]*\(([^()\n]{2,150})\)")  # "Paper 3 (FlashDecoding)"
_INSIDE_RE = re.compile(r",[ \t]*([^,:;()\n]{2,60}?)[ \t]*(?=\))")  # "(Paper 5, RLM-Cascade)"
MAX_NAME_CHARS = 40
_SQUASH_RE = re.compile(r"[\W_]+")
_NAME_RE = re.compile(r"[^\W\d_][\w.+/&' -]*", re.UNICODE)

# What a parenthesis may say that is no name: generic words, heads of titles ("Position: …").
GENERIC = frozenset({
    "", "none", "n/a", "na", "unknown", "the paper", "this paper", "paper", "papers",
    "method", "system", "framework", "approach", "model", "abstract", "full text", "excerpt",
    "bundle", "title", "authors", "position", "position paper", "survey", "a survey", "review",
    "a review", "tutorial", "perspective", "technical report", "re", "note", "a note",
    "editorial", "overview", "an overview", "preprint", "erratum", "comment", "reply"})
# Words any paper of the field may use: a name made of these alone names no paper
# ("Large Language Models"), and cites one only where the answer itself gave it to a number.
COMMON_WORDS = frozenset("""
    a an the of for and or in on with to via by from at as is are toward towards beyond new
    large small language languages model models modeling modelling learning deep neural network
    networks transformer transformers attention survey review overview study efficient
    efficiency llm llms mllm mllms vlm vlms slm slms lm lms ai rag agent agents agentic
    reasoning reasoner benchmark benchmarks benchmarking data dataset datasets vision visual
    diffusion reinforcement graph graphs generation generative retrieval augmented inference
    training fine tuning fine-tuning finetuning instruction instructions multimodal foundation
    pretrained pre-trained pretraining pre-training scaling memory cache kv long context
    alignment evaluation evaluating robust robustness understanding knowledge text image
    images video speech audio code chain thought thoughts prompt prompts prompting
    optimization method methods approach framework system systems analysis towards challenges
    opportunities future directions perspective perspectives see also table figure section
    """.split())


@dataclass(frozen=True)
class Citation:
    """One citation of a text: where it stands, the numbers it cites, and the name it gives
    each (a list's "1 (Kamera)", a lone number's "(FlashDecoding)" or ", RLM-Cascade")."""

    start: int
    end: int  # past the numbers (and a lone number's name, where it gives one)
    word: str  # "Paper", "papers" as written
    spec: str  # the numbers as written: "1, 8 and 9", "3–5"
    numbers: tuple[int, ...]
    given: tuple[tuple[int, str], ...] = ()  # (number, the name given it)
    listed: bool = False  # the "Papers: 1 (A), 4 (B)" form, read whole
    prefix: str = ""  # a list's "**Papers:** " as written, kept before its names
    name_start: int = -1  # where a lone number's given name begins (its "(" or ",")


def numbers(spec: str) -> list[int]:
    """The paper numbers of a citation's "1, 8, 9" or "3–5" part."""
    found: list[int] = []
    for match in NUMBER_RE.finditer(spec):
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        if high < low or high - low > 50:
            high = low
        found.extend(range(low, high + 1))
    return found


def find_citations(text: str) -> list[Citation]:
    """Every numbered citation of `text`, in order, none inside another."""
    found: list[Citation] = []
    for match in LIST_RE.finditer(text):
        items = [(int(m.group(1)), (m.group(2) or "").strip())
                 for m in _ITEM_RE.finditer(match.group(4))]
        found.append(Citation(
            match.start(), match.end(), match.group(1), match.group(4),
            tuple(n for n, _ in items), tuple((n, g) for n, g in items if g), listed=True,
            prefix=text[match.start():match.start(4)]))
    taken = [(c.start, c.end) for c in found]
    for match in CITE_RE.finditer(text):
        if any(a <= match.start() < b for a, b in taken):
            continue
        cited = tuple(numbers(match.group(2)))
        end, name_start = match.end(), -1
        given: tuple[tuple[int, str], ...] = ()
        if len(cited) == 1:
            after = _AFTER_RE.match(text, match.end())
            inside = (_INSIDE_RE.match(text, match.end())
                      if text[:match.start()].rstrip().endswith("(") else None)
            named = after or inside
            if named is not None and is_name(named.group(1)):
                given = ((cited[0], named.group(1).strip()),)
                name_start, end = named.start(), named.end()
        found.append(Citation(match.start(), end, match.group(1), match.group(2), cited,
                              given, name_start=name_start))
    return sorted(found, key=lambda c: c.start)


def cited_numbers(text: str) -> list[int]:
    """Every paper number `text` cites, each once, in order."""
    return list(dict.fromkeys(n for c in find_citations(text) for n in c.numbers))


def is_name(given: str) -> bool:
    """Whether a parenthesis after a number reads as a name ("FlashDecoding", "RLM-Cascade",
    "Recency/Frequency Adaptive"), not a figure ("45.8% cost reduction"), a year, a pointer
    ("see Table 2") or a generic word."""
    given = " ".join(given.split())
    words = given.split()
    return (bool(_NAME_RE.fullmatch(given)) and 1 <= len(words) <= 5
            and len(given) <= MAX_NAME_CHARS and given.lower() not in GENERIC
            and (given[:1].isupper() or any(c.isupper() for c in given))
            and not CITE_RE.search(given) and words[0].lower() not in ("see", "cf", "e.g", "i.e"))


def squashed(text: str) -> str:
    """Letters and digits only, lower case: "Flash-Decoding" and "flashdecoding" alike."""
    return _SQUASH_RE.sub("", text.lower())


def uses(text: str, name: str) -> bool:
    """Whether `name` is a run of whole words of `text` ("Flash-Decoding" and "Flash
    Decoding" alike), not a piece of one ("GPU" is not in "GPUs")."""
    target = squashed(name)
    words = [squashed(word) for word in text.split()]
    return bool(target) and any("".join(words[i:j]) == target for i in range(len(words))
                                for j in range(i + 1, min(len(words), i + 8) + 1))


def common(text: str) -> bool:
    """Whether every word of `text` is one of the field's common words."""
    words = re.findall(r"[\w'-]+", text)
    return bool(words) and all(w.casefold() in COMMON_WORDS for w in words)


def usable(name: str) -> bool:
    """Short enough to be a name, and not a word of the bundle's own ("Paper 3", "Abstract")."""
    return (2 <= len(name) <= MAX_NAME_CHARS and name.lower() not in GENERIC
            and not CITE_RE.search(name))


def title_name(title: str) -> str:
    """The system or method name a title gives before its colon ("FastKV: …"), or "" (a
    colon inside a word or figure, "2:4 Sparsity", is no separator)."""
    title = " ".join(title.split())
    head = title.split(": ", 1)[0].strip() if ": " in title else ""
    return head if usable(head) and len(head.split()) <= 5 else ""


def answer_names(answer: str, titles: Mapping[int, str]) -> dict[int, tuple[str, ...]]:
    """The names by which `answer` cites each paper of `titles` (by number) without its
    number: its title's own name where that is no ordinary phrase, and every name the answer
    gave the paper after its number ("Paper 4 (MOCAP)"). A name two papers would share cites
    neither."""
    found: dict[int, list[str]] = {n: [] for n in titles}
    for number, title in titles.items():
        own = title_name(title)
        if own and not common(own) and len(own) >= 3:
            found[number].append(own)
    for citation in find_citations(answer):
        for number, given in citation.given:
            if number in found and len(given) >= 3 and given not in found[number]:
                found[number].append(given)
    owners: dict[str, set[int]] = {}
    for number, names in found.items():
        for name in names:
            owners.setdefault(squashed(name), set()).add(number)
    return {number: tuple(n for n in names if len(owners[squashed(n)]) == 1)
            for number, names in found.items() if names}


def names_pattern(names: Mapping[int, tuple[str, ...]]) -> tuple[re.Pattern[str] | None,
                                                                 dict[str, int]]:
    """One pattern for every name of `names` (whole words, longest first), and each name's
    paper."""
    owner = {name: number for number, given in names.items() for name in given}
    if not owner:
        return None, owner
    return re.compile(r"(?<![\w-])(" + "|".join(
        re.escape(name) for name in sorted(owner, key=len, reverse=True)) + r")(?![\w-])"), owner


def named_in(sentence: str, names: Mapping[int, tuple[str, ...]]) -> list[int]:
    """The papers `sentence` cites by name alone, each once, in order."""
    pattern, owner = names_pattern(names)
    if pattern is None:
        return []
    return list(dict.fromkeys(owner[m.group(1)] for m in pattern.finditer(sentence)))
