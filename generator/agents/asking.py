"""The `ask` tool: `digest ask`'s own stage (pipeline/ask.py), its answer returned as data.

The same question over the same papers is the same checked answer, from the cache where it was
asked before. Nothing is written into the archive unless the agent asks to publish and the
server was started with `digest mcp --allow-publish` (the person running it allows it, not the
agent), and then only what `digest ask --publish` writes (the question's record and page), and
only a successful answer.
"""

from __future__ import annotations

from collections.abc import Callable

from ..archive.question_record import QuestionRecord
from ..ask.pages import publish_question, published_page
from ..config import Config
from ..pipeline.ask import ask_stage
from ..pipeline.services import Services
from . import answers as a
from .inputs import MAX_QUESTION_CHARS, checked_text, checked_window
from .reader import claim_value, evidence

PUBLISH_REFUSED = ("not published: this server does not publish questions (it was started "
                   "without `digest mcp --allow-publish`); the answer is given, and nothing was "
                   "kept in the archive")


def ask(config: Config, services: Callable[[], Services], question: str,
        since: str | None = None, until: str | None = None, publish: bool = False,
        may_publish: bool = False) -> a.AskAnswer:
    """Answer `question` from the archive, with every citing sentence checked; with
    `publish`, keep it as `digest ask --publish` does (the site is built by `digest site`),
    where the server `may_publish` (`--allow-publish`); else the answer says it was not."""
    words = checked_text(question, "question", MAX_QUESTION_CHARS)
    start, end = checked_window(since, until)
    refused = PUBLISH_REFUSED if publish and not may_publish else ""
    publish = publish and may_publish
    run = services()
    # Beside other questions (a read lock); a build writing the workspace excludes it.
    with run.cache.lock(shared=True):
        asked = ask_stage(config, run, words, since=start, until=end)
        record = asked.record
        published: list[str] = []
        if publish and record is not None and record.answer.completion.ok:
            with run.cache.questions_lock():
                published = publish_question(config, record)
    if record is None:
        return a.AskAnswer(words, False, None, asked.nothing, (), (), None, 0, None, refused)
    return _answer(words, record, asked.requests_sent, published_page(published) or None,
                   refused)


def _answer(question: str, record: QuestionRecord, sent: int, published: str | None,
            refused: str = "") -> a.AskAnswer:
    completion = record.answer.completion
    ids = {p.number: p.arxiv_id for p in record.papers}
    claims = tuple(claim_value(c, ids, names=record.names) for c in record.checks or ())
    return a.AskAnswer(
        question, completion.ok, a.model_text(completion.content) if completion.ok else None,
        "" if completion.ok else f"the answer failed: {completion.error}",
        tuple(a.AskedPaper(p.number, p.arxiv_id, a.paper_text(p.title), p.editions,
                           bool(p.withdrawn)) for p in record.papers),
        claims, evidence(record.evidence_figure), sent, published, refused)
