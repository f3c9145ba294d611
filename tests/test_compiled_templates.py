"""The compiled-template cache (generator/text/compiled.py): a template is compiled once a
process, and never served to an Environment whose code would differ or after its source did."""

from __future__ import annotations

from pathlib import Path

import jinja2

from generator.text import compiled


def _env(folder: Path, **filters: object) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=False)
    env.filters.update(filters)
    env.bytecode_cache = compiled.for_environment(env)
    return env


def test_an_edited_template_is_compiled_again(tmp_path: Path) -> None:
    page = tmp_path / "page.j2"
    page.write_text("v1 {{ x }}")
    assert _env(tmp_path).get_template("page.j2").render(x=1) == "v1 1"
    page.write_text("v2 {{ x }}")
    assert _env(tmp_path).get_template("page.j2").render(x=1) == "v2 1"


def test_a_filter_called_another_way_gets_code_of_its_own(tmp_path: Path) -> None:
    """Jinja compiles whether a filter takes the context into its call: an Environment whose
    filter of that name takes it must not run code compiled for one that does not."""
    (tmp_path / "page.j2").write_text("{{ 'a' | shout }}")
    plain = _env(tmp_path, shout=lambda v: v.upper())
    assert plain.get_template("page.j2").render() == "A"
    with_context = _env(tmp_path, shout=jinja2.pass_context(lambda context, v: v + "!"))
    assert with_context.get_template("page.j2").render() == "a!"


def test_environments_alike_share_the_compiled_code(tmp_path: Path) -> None:
    (tmp_path / "page.j2").write_text("{{ x }}")
    first, second = _env(tmp_path), _env(tmp_path)
    assert first.bytecode_cache is second.bytecode_cache
    first.get_template("page.j2")
    bucket = second.bytecode_cache.get_bucket(  # type: ignore[union-attr]
        second, "page.j2", str(tmp_path / "page.j2"), "{{ x }}")
    assert bucket.code is not None  # the second Environment loads, not compiles
