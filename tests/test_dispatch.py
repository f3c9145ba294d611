"""The dispatch order and the prefill gate, on fixed requests, without a server or threads."""

from __future__ import annotations

from generator.completions import Message, PromptKind, PromptRequest
from generator.prompts.kinds import BUILTIN_KINDS
from generator.synthesis.dispatch import (
    AdaptiveWidth,
    Dispatcher,
    DispatchPlan,
    concurrency,
    dispatch_plan,
)


def request(name: str, kind: PromptKind, max_tokens: int, thinking: bool = False) -> PromptRequest:
    return PromptRequest(name=name, title=name, kind=kind, question="",
                         messages=(Message("user", "x"),), max_tokens=max_tokens,
                         temperature=0.2, thinking=thinking)


REQUESTS = [
    request("research-map", "research_map", 3000),
    request("themes", "themes", 800),
    request("dive", "deep_dive", 1200),
    request("thinking-off", "thinking", 1500),
    request("thinking-on", "thinking", 4000, thinking=True),
    request("brief-1", "brief", 600),
    request("brief-2", "brief", 600),
]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_thinking_prompt_leads_then_the_longest_answers() -> None:
    plan = dispatch_plan(REQUESTS, range(len(REQUESTS)), kinds=BUILTIN_KINDS)
    assert plan == DispatchPlan(leader=4, followers=(0, 3, 2, 1), free=(5, 6))


def test_without_a_thinking_prompt_to_send_the_longest_answer_leads() -> None:
    plan = dispatch_plan(REQUESTS, [0, 1, 2, 5], kinds=BUILTIN_KINDS)
    assert plan == DispatchPlan(leader=0, followers=(2, 1), free=(5,))


def test_briefs_fill_slots_while_the_gate_is_closed_and_followers_go_first_once_it_opens() -> None:
    dispatcher = Dispatcher(dispatch_plan(REQUESTS, range(len(REQUESTS)), kinds=BUILTIN_KINDS), timeout=60,
                            clock=Clock())
    assert dispatcher.next() == 4  # the leader
    assert dispatcher.next() == 5  # the gate is closed: a brief
    dispatcher.prefilled(4)  # the leader's first token
    assert [dispatcher.next() for _ in range(4)] == [0, 3, 2, 1]  # followers before brief-2
    assert dispatcher.next() == 6
    for _ in range(6):
        dispatcher.finished()
    dispatcher.add([7, 8, 9])  # the last running request's follow-ups
    assert dispatcher.next() == 7  # the first leads: they all carry the same answer
    dispatcher.finished()  # the request that brought them
    dispatcher.prefilled(7)
    assert [dispatcher.next(), dispatcher.next()] == [8, 9]
    for _ in range(3):
        dispatcher.finished()
    assert dispatcher.next() is None


def test_follow_ups_wait_for_their_first_and_go_before_briefs() -> None:
    clock = Clock()
    dispatcher = Dispatcher(dispatch_plan(REQUESTS, [5, 6], kinds=BUILTIN_KINDS), timeout=10, clock=clock)
    assert dispatcher.next() == 5
    dispatcher.add([7, 8])
    assert dispatcher.next() == 7
    assert dispatcher.next() == 6  # 8 waits for 7's prefill: a brief fills the slot
    clock.now = 10.0  # 7 never streamed its first token
    assert dispatcher.next() == 8


def test_the_gate_opens_after_its_timeout_without_a_first_token() -> None:
    clock = Clock()
    dispatcher = Dispatcher(dispatch_plan(REQUESTS, [0, 2, 4], kinds=BUILTIN_KINDS), timeout=10, clock=clock)
    assert dispatcher.next() == 4
    clock.now = 10.0  # no first token (a server that does not stream, say)
    assert dispatcher.next() == 0


def test_without_the_gate_the_order_is_the_plan_order() -> None:
    plan = dispatch_plan(REQUESTS, range(len(REQUESTS)), kinds=BUILTIN_KINDS)
    dispatcher = Dispatcher(plan, gate=False)
    assert [dispatcher.next() for _ in REQUESTS] == plan.order
    for _ in REQUESTS:
        dispatcher.finished()
    assert dispatcher.next() is None


def test_concurrency_comes_from_the_server_unless_configured() -> None:
    assert concurrency(4, {"max_running_requests": 64}, 27, 2000, 60_000) == 4
    assert concurrency(0, None, 27, 2000, 60_000) == 27  # a server that says nothing
    assert concurrency(0, {"max_running_requests": 16}, 27, 2000, 60_000) == 16
    assert concurrency(0, {"internal_states": [{"max_running_requests": 8}]}, 27, 2000,
                       60_000) == 8
    # The KV cache holds the bundle once and then each prompt's own tokens.
    assert concurrency(0, {"max_total_num_tokens": 80_000}, 27, 2000, 60_000) == 10
    assert concurrency(0, {"max_running_requests": True}, 3, 2000, 60_000) == 3


def test_a_server_that_says_nothing_gets_more_while_it_keeps_up_and_half_when_it_does_not() -> None:
    width = AdaptiveWidth(start=2)
    for _ in range(4):
        width.answered(ok=True, overloaded=False)
    assert width.width == 6  # one more for each answer that came back whole
    width.answered(ok=False, overloaded=True)  # a 503 or a cut stream
    assert width.width == 3
    width.answered(ok=False, overloaded=False)  # a failure that says nothing of load
    assert width.width == 3
    for _ in range(3):
        width.answered(ok=False, overloaded=True)
    assert width.width == 1  # never under one


def test_a_server_that_states_its_slots_never_gets_more_than_them() -> None:
    """llama-server's /props `total_slots`: the width starts no wider, grows no wider, and
    still halves on overload (its slots may share one cache)."""
    one = AdaptiveWidth(start=2, ceiling=1)
    assert one.width == 1
    one.answered(ok=True, overloaded=False)
    assert one.width == 1
    four = AdaptiveWidth(start=None, ceiling=4)
    for _ in range(10):
        four.answered(ok=True, overloaded=False)
    assert four.width == 4
    four.answered(ok=False, overloaded=True)
    assert four.width == 2


def test_the_width_remembered_is_one_the_server_was_seen_to_hold() -> None:
    """A server that drops whatever is beyond two in flight: three were sent, the third met
    overload; what is remembered is two (held, every one answered), not the widest reached."""
    width = AdaptiveWidth(start=2)
    first, second = width.sent(), width.sent()
    width.answered(ok=True, overloaded=False, ticket=first)  # two in flight, answered whole
    third, fourth = width.sent(), width.sent()  # the width grew to three: three in flight
    width.answered(ok=False, overloaded=True, ticket=fourth)  # dropped
    width.answered(ok=True, overloaded=False, ticket=third)
    width.answered(ok=True, overloaded=False, ticket=second)
    assert width.settled == 2
    # Nothing answered whole: one, never the start or the widest reached.
    nothing = AdaptiveWidth(start=4)
    nothing.answered(ok=False, overloaded=True, ticket=nothing.sent())
    assert nothing.settled == 1
    # A server that kept up with everything: the most that were in flight at once.
    kept = AdaptiveWidth(start=2)
    a, b = kept.sent(), kept.sent()
    kept.answered(ok=True, overloaded=False, ticket=a)  # one more at once from now on
    c, d = kept.sent(), kept.sent()  # three in flight
    for ticket in (b, c, d):
        kept.answered(ok=True, overloaded=False, ticket=ticket)
    assert kept.settled == 3


def test_overload_from_requests_sent_before_a_back_off_narrows_only_once() -> None:
    """Two requests sent at width four both dropped: one crowd, one back-off (to two, never
    again above three), not a second one to one."""
    width = AdaptiveWidth(start=4)
    tickets = [width.sent() for _ in range(4)]
    width.answered(ok=False, overloaded=True, ticket=tickets[2])
    width.answered(ok=False, overloaded=True, ticket=tickets[3])
    assert width.width == 2
    width.answered(ok=True, overloaded=False, ticket=tickets[0])
    width.answered(ok=True, overloaded=False, ticket=tickets[1])
    assert width.width == 3  # grown back, up to just under what showed overload
    later = width.sent()
    width.answered(ok=False, overloaded=True, ticket=later)  # sent after: it does narrow
    assert width.width == 1


def test_an_answer_reads_as_cut_from_its_text_or_its_usage() -> None:
    """Behind a proxy that calls a cut stream finished (LiteLLM: `stop`)."""
    from generator.completions import Completion, Message, PromptRequest, Usage
    from generator.synthesis.cuts import json_cut, looks_cut

    prose = PromptRequest(name="map", title="Map", kind="research_map", question="",
                          messages=(Message("user", "x"),), max_tokens=3000, temperature=0.3)

    def answer(text: str, tokens: int | None = None) -> Completion:
        return Completion(name="map", model="m", content=text, finish_reason="stop",
                          usage=Usage(completion_tokens=tokens))

    assert looks_cut(prose, answer("Here"))  # the recorded 2-token "answer"
    assert looks_cut(prose, answer("Work on testing splits into search and", 9))
    counted = Completion(name="map", model="m", content="A whole sentence.",
                         finish_reason="stop", usage=Usage(completion_tokens=900,
                                                           reasoning_tokens=0))
    assert looks_cut(prose, counted)  # usage counts far more than arrived
    # Reasoning counted but not returned, or a script of many bytes a token: not a cut.
    hidden = Completion(name="map", model="m", content="A whole answer. " * 100,
                        finish_reason="stop", usage=Usage(completion_tokens=3000,
                                                          reasoning_tokens=2600))
    assert not looks_cut(prose, hidden)
    assert not looks_cut(prose, answer("这是一个完整的回答。" * 150, 1200))
    assert not looks_cut(prose, answer("A short answer, complete."))
    assert not looks_cut(prose, answer("| Paper | Point |\n|---|---|\n| Paper 1 | first |"))
    assert not looks_cut(prose, answer("- Paper 3 trades cost for recall"))
    assert not looks_cut(prose, answer("word " * 3000))  # not far below its budget
    assert json_cut(answer('{"tldr": "A study of'), 300)
    assert not json_cut(answer('{"tldr": "A study."}'), 300)
    assert not json_cut(answer('{"tldr": "A study."} trailing'), 300)
    assert not json_cut(answer('```json\n{"themes": [{"title": "A"}]}\n```'), 300)
    assert json_cut(answer('```json\n{"themes": [{"title": "A"}'), 300)
