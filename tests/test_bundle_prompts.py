"""Bundle numbering and formatting, and prompt layout for the server's prefix cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.config import Config
from generator.errors import LockedError
from generator.papers import FullText, Paper, Source
from generator.prompts.builders import build_requests
from generator.prompts.kinds import BUILTIN_KINDS
from generator.store.cache import Cache, atomic_write_text, completion_key
from generator.synthesis.bundle import build_bundle
from tests.edition_fixture import with_thinking_body


def paper(n: int) -> Paper:
    return Paper(f"2401.0000{n}v1", f"Title {n}", tuple(f"Author {i}" for i in range(7)),
                 f"2024-01-0{n}", f"2024-01-0{n}", f"Abstract {n}.", ("cs.CL",),
                 f"https://arxiv.org/abs/2401.0000{n}v1", None)


CONFIG = Config(path=Path("config.toml"), registry=BUILTIN_KINDS)
SOURCES = [
    Source(paper(1), FullText("ok", "Full text of one.", 2, 9)),
    Source(paper(2), FullText("missing", reason="the PDF is encrypted with a password")),
    Source(paper(3), FullText("not_requested")),
]


def test_papers_are_numbered_in_fetch_order_with_excerpts_where_present() -> None:
    bundle = build_bundle(SOURCES)
    assert [p.number for p in bundle.papers] == [1, 2, 3]
    text = bundle.text
    assert text.index("## Paper 1: Title 1") < text.index("## Paper 2: Title 2") < text.index(
        "## Paper 3: Title 3")
    assert "Full text of one." in text and "(17 characters from 2 of 9 pages)" in text
    assert text.count("### Full-text excerpt") == 1
    assert "Author 0, Author 1, Author 2, Author 3, Author 4, et al." in text
    assert bundle.estimated_tokens == (bundle.chars + 3) // 4


def test_every_request_shares_the_system_message_and_bundle_prefix() -> None:
    bundle = build_bundle(SOURCES)
    extra = {"chat_template_kwargs": {"thinking": True}}
    requests = build_requests(with_thinking_body(CONFIG, extra, briefs=False), bundle)
    assert [r.name for r in requests] == [
        "research-map", "themes", "memory-management", "benchmarks-and-metrics",
        "engineering-roadmap", "thinking-off", "thinking-on"]
    for r in requests:
        assert r.messages[0] == requests[0].messages[0]
        assert r.messages[1].content.startswith(bundle.text)
    on = requests[-1]
    assert on.thinking and json.loads(on.extra_body_json) == extra
    assert (on.max_tokens, on.temperature) == (8000, 0.6)
    off = requests[-2]
    assert not off.thinking and off.extra_body_json == "{}"
    assert (off.max_tokens, off.temperature) == (3000, 0.2)
    assert json.loads(requests[1].extra_body_json)["response_format"]["type"] == "json_schema"
    assert requests[0].max_tokens == 3000 and requests[1].temperature == 0.2


def test_completion_key_covers_model_messages_and_parameters() -> None:
    requests = build_requests(with_thinking_body(CONFIG, {"x": 1}, briefs=False),
                              build_bundle(SOURCES))
    keys = {completion_key("m", r) for r in requests}
    assert len(keys) == len(requests)
    assert completion_key("m", requests[0]) == completion_key("m", requests[0])
    assert completion_key("m", requests[0]) != completion_key("other", requests[0])


def test_atomic_write_leaves_the_old_file_when_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "page.md"
    atomic_write_text(target, "old")

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt  # as if Ctrl-C arrived between writing and renaming

    monkeypatch.setattr("generator.store.cache.os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["page.md"]


def test_the_lock_refuses_a_second_holder(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    with cache.lock():
        with pytest.raises(LockedError, match="another digest run"):
            with Cache(tmp_path).lock():
                pass
    with cache.lock():
        pass


def test_corrupt_cache_entries_are_ignored(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    path = tmp_path / "completions" / "ab" / "abcd.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert cache.get_completion("abcd") is None
