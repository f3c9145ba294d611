"""The [prompts] table of config.toml: the system message and one table per kind of answer
over the bundle (research map, deep dives, thinking comparison, theme map).

Declared here, apart from the rest of the schema in `config`, because it is the one table
a user rewrites (their own questions), and its defaults are the default prompts' texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import default_prompts
from .read import ranged


@dataclass(frozen=True)
class ResearchMapPrompt:
    """The research map: the field overview, its themes and open problems, over the whole bundle."""

    title: str = "Research map"
    """The page's title."""
    instruction: str = default_prompts.RESEARCH_MAP
    """The task, after the system message and the bundle."""
    max_tokens: int = ranged(3000, 1, 10_000_000)
    """The answer's budget in tokens."""
    temperature: float = ranged(0.3, 0.0, 2.0)
    """Sampling temperature."""


@dataclass(frozen=True)
class DeepDivePrompt:
    """One deep-dive question over the bundle, with a page of its own."""

    label: str
    """The page's title."""
    question: str
    """The question, asked after the system message and the bundle."""
    max_tokens: int = ranged(3000, 1, 10_000_000)
    """The answer's budget in tokens."""
    temperature: float = ranged(0.2, 0.0, 2.0)
    """Sampling temperature."""


@dataclass(frozen=True)
class ThinkingPrompt:
    """One question asked twice, with thinking and without: both answers side by side on one
    page."""

    title: str = "Thinking comparison"
    """The page's title."""
    question: str = default_prompts.THINKING
    """The question both answers are asked."""
    max_tokens: int = ranged(3000, 1, 10_000_000)
    """The answer without thinking: its budget in tokens."""
    temperature: float = ranged(0.2, 0.0, 2.0)
    """The answer without thinking: its sampling temperature."""
    thinking_max_tokens: int = ranged(8000, 1, 10_000_000)
    """The thinking answer: its budget in tokens."""
    thinking_temperature: float = ranged(0.6, 0.0, 2.0)
    """The thinking answer: its sampling temperature."""


@dataclass(frozen=True)
class ThemesPrompt:
    """The theme map: the bundle's themes with their papers, as JSON under a schema; shown on
    the research map and on each paper page."""

    enabled: bool = True
    """Ask for the theme map."""
    instruction: str = default_prompts.THEMES
    """The task, after the system message and the bundle."""
    max_tokens: int = ranged(1200, 1, 10_000_000)
    """The answer's budget in tokens."""
    temperature: float = ranged(0.2, 0.0, 2.0)
    """Sampling temperature."""


def _default_deep_dives() -> tuple[DeepDivePrompt, ...]:
    return tuple(DeepDivePrompt(label, q) for label, q in default_prompts.DEEP_DIVES)


@dataclass(frozen=True)
class PromptSettings:
    """The prompts over the bundle: the system message, and a table per kind of answer."""

    system: str = default_prompts.SYSTEM
    """The system message every prompt starts with (then the bundle)."""
    research_map: ResearchMapPrompt = field(default_factory=ResearchMapPrompt)
    deep_dives: tuple[DeepDivePrompt, ...] = field(default_factory=_default_deep_dives)
    """The default: the three questions of `default_prompts.DEEP_DIVES`."""
    thinking: ThinkingPrompt = field(default_factory=ThinkingPrompt)
    themes: ThemesPrompt = field(default_factory=ThemesPrompt)
