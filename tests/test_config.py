"""config.toml: defaults, the documented contract, and every problem named by file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.config import load_config
from generator.errors import ConfigError
from generator.prompts.kinds import BUILTIN_KINDS

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path, registry=BUILTIN_KINDS)
    assert str(path) in str(info.value)
    return info.value.problems


def test_repository_config_is_a_ready_workspace() -> None:
    config = load_config(ROOT / "config.toml", registry=BUILTIN_KINDS)
    assert config.arxiv.max_papers == 20
    assert config.arxiv.full_text_papers == 5
    assert config.arxiv.delay_seconds == 3.0
    assert config.llm.base_url == "http://localhost:30000/v1"
    assert config.llm.model == "deepseek-ai/DeepSeek-V4-Flash"
    assert config.docs_dir == ROOT / "site_src"
    assert config.llm.thinking_extra_body == {"chat_template_kwargs": {"thinking": True}}
    assert [d.label for d in config.prompts.deep_dives] == [
        "Memory management", "Benchmarks and metrics", "Engineering roadmap"]


def test_empty_file_gives_defaults_and_missing_prompts_section_is_fine(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[digest]\ntitle = 'X'\n"), registry=BUILTIN_KINDS)
    assert config.digest.title == "X"
    assert config.prompts.research_map.max_tokens == 3000
    assert config.prompts.thinking.thinking_max_tokens == 8000
    assert config.prompts.thinking.thinking_temperature == 0.6
    assert all(d.max_tokens == 3000 and d.temperature == 0.2 for d in config.prompts.deep_dives)
    assert config.cache_dir == (tmp_path / ".cache").resolve()


def test_unknown_keys_are_named_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "[arxiv]\nmax_paper = 3\n[llm]\nmodle = 'x'\n[extra]\na = 1\n")
    assert problems(path) == [
        "arxiv.max_paper: unknown key (did you mean 'arxiv.max_papers'?)",
        "llm.modle: unknown key (did you mean 'llm.model'?)",
        "extra: unknown key",
    ]


def test_wrong_types_name_the_dotted_key(tmp_path: Path) -> None:
    path = write(tmp_path, '[arxiv]\nmax_papers = "twenty"\ndelay_seconds = true\n'
                           "[prompts.research_map]\ntemperature = 'hot'\n")
    assert problems(path) == [
        'arxiv.max_papers: expected an integer, got a string ("twenty")',
        "arxiv.delay_seconds: expected a number, got a boolean (true)",
        'prompts.research_map.temperature: expected a number, got a string ("hot")',
    ]


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    (problem,) = problems(write(tmp_path, "[arxiv]\nmax_papers = = 3\n"))
    assert problem.startswith("TOML syntax error:") and "line 2" in problem


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    (problem,) = problems(tmp_path / "nope" / "config.toml")
    assert "file not found" in problem and "digest init" in problem


def test_deep_dives_replace_the_defaults_and_are_validated(tmp_path: Path) -> None:
    path = write(tmp_path, "[[prompts.deep_dives]]\nlabel = 'Only one'\nquestion = 'Why?'\n"
                           "max_tokens = 500\n")
    config = load_config(path, registry=BUILTIN_KINDS)
    assert [(d.label, d.max_tokens, d.temperature) for d in config.prompts.deep_dives] == [
        ("Only one", 500, 0.2)]
    bad = write(tmp_path, "[[prompts.deep_dives]]\nlabel = 'No question'\nmax_token = 5\n")
    assert problems(bad) == [
        "prompts.deep_dives[0].max_token: unknown key (did you mean "
        "'prompts.deep_dives[0].max_tokens'?)",
        "prompts.deep_dives[0].question: required key is missing",
    ]


def test_values_out_of_range(tmp_path: Path) -> None:
    path = write(tmp_path, "[arxiv]\nmax_papers = 0\ndelay_seconds = 1.0\n"
                           "[llm]\nbase_url = 'localhost:30000'\n"
                           "[paths]\ncache_dir = 'site_src/cache'\n")
    assert problems(path) == [
        "arxiv.max_papers: must be between 1 and 2000, got 0",
        "arxiv.delay_seconds: arXiv's terms allow one request every 3 seconds, got 1",
        "llm.base_url: expected an http(s) URL, got 'localhost:30000'",
        "paths.cache_dir: must be separate from paths.docs_dir, neither inside the other (the "
        "cache holds full text, which must never be published)",
    ]


def test_mirrors_may_use_a_shorter_delay(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[arxiv]\napi_url = 'http://127.0.0.1:9/api/query'\n"
                                         "delay_seconds = 0.0\n"), registry=BUILTIN_KINDS)
    assert config.arxiv.delay_seconds == 0.0


@pytest.mark.parametrize(("setting", "message"), [
    ("[arxiv]\ndelay_seconds = nan", "arxiv.delay_seconds: expected a finite number, got nan"),
    ("[arxiv]\ntimeout_seconds = inf", "arxiv.timeout_seconds: expected a finite number, got inf"),
    ("[arxiv]\ntimeout_seconds = 1e300",
     "arxiv.timeout_seconds: must be between 0.1 and 3600, got 1e+300"),
    ("[arxiv]\nmax_pdf_mb = -inf", "arxiv.max_pdf_mb: expected a finite number, got -inf"),
    ("[arxiv]\nmax_pdf_mb = nan", "arxiv.max_pdf_mb: expected a finite number, got nan"),
    ("[llm]\ntimeout_seconds = nan", "llm.timeout_seconds: expected a finite number, got nan"),
    ("[arxiv]\ndays = 999999999", "arxiv.days: must be between 0 and 36500, got 999999999"),
    ("[llm]\nmax_concurrency = 100000",
     "llm.max_concurrency: must be between 0 and 1024, got 100000"),
])
def test_numbers_that_are_not_numbers_are_config_errors(tmp_path: Path, setting: str,
                                                        message: str) -> None:
    assert problems(write(tmp_path, setting)) == [message]


@pytest.mark.parametrize(("paths", "message"), [
    ("docs_dir = '/srv/elsewhere'", "paths.docs_dir: /srv/elsewhere is outside the workspace"),
    ("docs_dir = '../../x'", "paths.docs_dir: "),
    ("site_dir = '../victim'", "paths.site_dir: "),
    ("site_dir = '.cache'", "paths.cache_dir: must be separate from paths.site_dir"),
    ("site_dir = 'out'\ncache_dir = 'out/cache'",
     "paths.cache_dir: must be separate from paths.site_dir"),
    ("site_dir = 'config.toml'", "paths.site_dir: must not be or contain the config file"),
    ("site_dir = '.'", "paths.site_dir: must be a folder inside the workspace, not the workspace"),
])
def test_paths_stay_in_the_workspace_and_apart(tmp_path: Path, paths: str, message: str) -> None:
    found = problems(write(tmp_path, f"[paths]\n{paths}\n"))
    assert any(p.startswith(message) for p in found), found


def test_paths_outside_the_workspace_only_on_purpose(tmp_path: Path) -> None:
    path = write(tmp_path, "[paths]\nsite_dir = '../published'\nallow_outside_workspace = true\n")
    assert load_config(path, registry=BUILTIN_KINDS).site_dir == (tmp_path.parent / "published").resolve()


def test_interests_may_be_a_string_or_a_list(tmp_path: Path) -> None:
    """A list of interests is what people write; it is read, joined, as the string is."""
    listed = load_config(write(tmp_path, '[triage]\ninterests = ["KV caches", " speculative decoding "]\n'),
                         registry=BUILTIN_KINDS)
    assert listed.triage.interests == "KV caches; speculative decoding" and listed.triage.enabled
    (tmp_path / "config.toml").unlink()
    plain = load_config(write(tmp_path, '[triage]\ninterests = "KV caches"\n'), registry=BUILTIN_KINDS)
    assert plain.triage.interests == "KV caches"
    (tmp_path / "config.toml").unlink()
    with pytest.raises(ConfigError, match=r"triage\.interests: expected a string"):
        load_config(write(tmp_path, "[triage]\ninterests = [1, 2]\n"), registry=BUILTIN_KINDS)
