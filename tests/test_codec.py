"""The one dataclass ⇄ JSON codec every record goes through (generator/store/codec.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from generator.completions import Completion, Usage
from generator.papers import FullText, Paper
from generator.store.codec import CodecError, from_data, to_data


@dataclass(frozen=True)
class Inner:
    kind: Literal["a", "b"]
    score: int | None = None


@dataclass(frozen=True)
class Outer:
    name: str
    inners: tuple[Inner, ...]
    by_number: dict[int, Inner] = field(default_factory=dict)
    pair: tuple[str, float] = ("x", 1.0)
    extra: dict[str, Any] = field(default_factory=dict)
    ratio: float = 0.0
    flag: bool = False


VALUE = Outer("o", (Inner("a"), Inner("b", 3)), {2: Inner("b", 0)}, ("y", 2.5),
              {"free": [1, {"x": None}]}, 3.0, True)


def test_a_value_reads_back_equal_through_json() -> None:
    again = from_data(Outer, json.loads(json.dumps(to_data(VALUE))))
    assert again == VALUE
    assert isinstance(again.inners, tuple) and isinstance(again.ratio, float)


def test_defaults_are_left_out_and_filled_in_again() -> None:
    assert to_data(Outer("o", (Inner("a"),))) == {"name": "o", "inners": [{"kind": "a"}]}
    assert from_data(Outer, {"name": "o", "inners": []}) == Outer("o", ())
    # A default of another type is written: 0 is not 0.0's default for a float field.
    assert to_data(Inner("a", 0)) == {"kind": "a", "score": 0}


@pytest.mark.parametrize(("data", "message"), [
    ({"inners": []}, "name: is missing"),
    ({"name": 1, "inners": []}, "name: expected str, found 1"),
    ({"name": "o", "inners": [{"kind": "c"}]}, "inners[0].kind: 'c' is not one of ['a', 'b']"),
    ({"name": "o", "inners": [{"kind": "a", "score": True}]}, "inners[0].score: expected int"),
    ({"name": "o", "inners": {}}, "inners: expected a list, found {}"),
    ({"name": "o", "inners": [], "by_number": {"two": {"kind": "a"}}},
     "by_number['two']: expected a number as key"),
    ({"name": "o", "inners": [], "pair": ["x"]}, "pair: expected 2 items, found 1"),
    ({"name": "o", "inners": [], "ratio": "1"}, "ratio: expected a number"),
])
def test_data_that_does_not_fit_is_named_by_its_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(CodecError) as caught:
        from_data(Outer, data)
    assert str(caught.value).startswith(message)


def test_the_records_own_types_read_back() -> None:
    completion = Completion("research-map", "m", "answer", usage=Usage(9, 3, None, 1),
                            ttft_s=0.25)
    assert from_data(Completion, to_data(completion)) == completion
    paper = Paper("2401.01234v2", "T", ("A", "B"), "2024-01-01", "2024-01-02", "abs", ("cs.LG",),
                  "https://arxiv.org/abs/2401.01234v2", None)
    assert from_data(Paper, to_data(paper)) == paper
    assert from_data(FullText, to_data(FullText("ok", pages=3))) == FullText("ok", pages=3)


def test_a_value_its_class_refuses_is_a_codec_error() -> None:
    data: dict[str, Any] = {"arxiv_id": "../etc", "title": "", "authors": [], "published": "", "updated": "",
            "abstract": "", "categories": [], "abs_url": "", "pdf_url": None}
    with pytest.raises(CodecError, match="not an arXiv id|arXiv"):
        from_data(Paper, data)
