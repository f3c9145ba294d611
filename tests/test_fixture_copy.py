"""tests/fixtures/ is the shared recordings' copy: byte for byte, less the PDFs left out, as
its pinned digests (tests/fixtures/UPSTREAM.sha256) say in any clone, and as the upstream
itself says where ../shared is beside the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import fixture_copy


def test_the_copy_matches_its_pinned_digests() -> None:
    """In any clone, with nothing beside it: every upstream file copied is here, unchanged."""
    assert len(fixture_copy.pinned()) > 50
    assert fixture_copy.pin_differences() == []


def test_the_copy_and_its_pin_match_their_upstream() -> None:
    if not fixture_copy.UPSTREAM.is_dir():
        pytest.skip(f"no upstream recordings at {fixture_copy.UPSTREAM} (a clone alone: "
                    "the copy is checked against its pinned digests)")
    assert fixture_copy.differences() == []
    assert fixture_copy.stale_pins() == []


def test_a_file_changed_or_lost_is_named_against_the_pin(tmp_path: Path) -> None:
    upstream, copy = tmp_path / "upstream", tmp_path / "copy"
    pin = copy / "UPSTREAM.sha256"
    for folder in (upstream, copy):
        (folder / "pdfs").mkdir(parents=True)
        (folder / "same.xml").write_bytes(b"<feed/>")
        (folder / "edited.xml").write_bytes(b"<feed>1</feed>")
        (folder / "lost.json").write_bytes(b"{}")
    (upstream / next(iter(fixture_copy.LEFT_OUT))).write_bytes(b"%PDF")  # never pinned
    fixture_copy.write_pin(upstream, pin)
    assert sorted(fixture_copy.pinned(pin)) == ["edited.xml", "lost.json", "same.xml"]
    assert fixture_copy.pin_differences(copy, pin) == []
    assert fixture_copy.stale_pins(upstream, pin) == []
    (copy / "edited.xml").write_bytes(b"<feed>2</feed>")
    (copy / "lost.json").unlink()
    assert fixture_copy.pin_differences(copy, pin) == [
        "edited.xml: differs from its pinned digest", "lost.json: pinned, missing here"]
    (upstream / "edited.xml").write_bytes(b"<feed>3</feed>")
    (upstream / "lost.json").unlink()
    (upstream / "new.json").write_bytes(b"[]")
    assert fixture_copy.stale_pins(upstream, pin) == [
        "edited.xml: pinned digest differs from upstream", "lost.json: no longer upstream",
        "new.json: not pinned"]
    assert fixture_copy.pin_differences(copy, copy / "none.sha256") == [
        "none.sha256: no digests pinned"]


def test_a_changed_a_missing_and_a_left_out_file_are_each_named(tmp_path: Path) -> None:
    upstream, copy = tmp_path / "upstream", tmp_path / "copy"
    for folder in (upstream, copy):
        (folder / "pdfs").mkdir(parents=True)
        (folder / "same.xml").write_bytes(b"<feed/>")
    (upstream / "changed.xml").write_bytes(b"<feed>new</feed>")
    (copy / "changed.xml").write_bytes(b"<feed>old</feed>")
    (upstream / "new.json").write_bytes(b"{}")
    left_out = next(iter(fixture_copy.LEFT_OUT))
    (upstream / left_out).write_bytes(b"%PDF")
    (copy / "ours.json").write_bytes(b"{}")  # recorded here: no upstream, not compared
    assert fixture_copy.differences(upstream, copy) == [
        "changed.xml: differs from upstream",
        "new.json: upstream only (copy it, or list it in LEFT_OUT)"]
    assert fixture_copy.update(upstream, copy) == ["changed.xml", "new.json"]
    assert fixture_copy.differences(upstream, copy) == []
    (copy / left_out).write_bytes(b"%PDF")
    assert fixture_copy.differences(upstream, copy) == [f"{left_out}: in LEFT_OUT but copied"]
