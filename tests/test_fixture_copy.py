"""tests/fixtures/ is the shared recordings' copy: byte for byte, less the PDFs left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import fixture_copy


def test_the_copy_matches_its_upstream() -> None:
    if not fixture_copy.UPSTREAM.is_dir():
        pytest.skip(f"no upstream recordings at {fixture_copy.UPSTREAM} (a clone alone)")
    assert fixture_copy.differences() == []


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
