"""One finding of `digest doctor`: a verdict on one thing and what to do about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["ok", "warning", "problem", "info"]


@dataclass(frozen=True)
class Check:
    name: str
    verdict: Verdict
    detail: str
    advice: str = ""
