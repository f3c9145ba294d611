"""`digest init` into folders as users leave them: a .gitignore in Latin-1 or UTF-16, a
requirements.txt in UTF-16, links that lead out of the folder (dangling or not). Each ends in
a correct workspace or one line in our words, with nothing half-written and nothing written
outside the folder."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from generator.cli import cli


def digest(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_a_latin_1_gitignore_gets_the_digests_lines_and_stays_latin_1(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_bytes("# brouillons de l'équipe\nnotes/\n".encode("latin-1"))
    done = digest("init", str(ws))
    assert done.exit_code == 0, done.output
    data = (ws / ".gitignore").read_bytes()
    assert data.startswith("# brouillons de l'équipe\n".encode("latin-1"))
    assert b"/.cache/" in data.split() and (ws / "config.toml").is_file()


def test_a_utf16_gitignore_stops_init_before_anything_is_written(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_bytes("notes/\n".encode("utf-16"))
    done = digest("init", str(ws))
    assert done.exit_code == 2 and "is UTF-16 or UTF-32 text" in done.output
    assert "Traceback" not in done.output and "nothing was written" in done.output
    assert sorted(p.name for p in ws.iterdir()) == [".gitignore"]
    (ws / ".gitignore").write_text("notes/\n")  # fixed: a second init goes through
    assert digest("init", str(ws)).exit_code == 0


def test_upgrade_workflow_reads_a_utf16_requirements_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert digest("init", str(ws)).exit_code == 0
    (ws / "requirements.txt").write_bytes("research-digest==0.0.1\n".encode("utf-16"))
    done = digest("init", "--upgrade-workflow", str(ws))
    assert done.exit_code == 0, done.output
    assert "(was: research-digest==0.0.1)" in done.output
    assert (ws / "requirements.txt").read_text(encoding="utf-8").count("research-digest") >= 1


def test_init_never_writes_through_a_dangling_link_out_of_the_folder(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside.toml"
    ws.mkdir()
    (ws / "config.toml").symlink_to(outside)  # dangling: exists() calls it absent
    done = digest("init", str(ws))
    assert done.exit_code == 2 and "not writing through it" in done.output, done.output
    assert not outside.exists()
    assert sorted(p.name for p in ws.iterdir()) == ["config.toml"]


def test_upgrade_workflow_never_overwrites_what_a_linked_workflow_points_to(tmp_path: Path
                                                                            ) -> None:
    ws, theirs = tmp_path / "ws", tmp_path / "shared-workflow.yml"
    assert digest("init", str(ws)).exit_code == 0
    theirs.write_text("# the lab's shared workflow\n")
    workflow = ws / ".github" / "workflows" / "digest.yml"
    workflow.unlink()
    workflow.symlink_to(theirs)
    (ws / "requirements.txt").write_text("research-digest==0.0.1\n")
    done = digest("init", "--upgrade-workflow", str(ws))
    assert done.exit_code == 2 and f"{workflow} is a link to {theirs}" in done.output
    assert theirs.read_text() == "# the lab's shared workflow\n"
    assert (ws / "requirements.txt").read_text() == "research-digest==0.0.1\n"  # untouched
