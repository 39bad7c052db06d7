"""Evaluators never freeze the host: a megabyte pair is cut, scored fast, and other threads run.

Each evaluator scores a 1 MB pair in a worker thread while the test's own thread ticks every
millisecond; the longest gap between two ticks is how long the host was frozen. The 100 ms
bound is the one timed assertion the issue asks for (run ``tests/evaluators/stall_meter.py`` for
the full table).

A call that holds the GIL freezes the caller on every run; a busy machine (other processes
on the same cores) freezes it now and then, for any code. So a run over the bound is
repeated, up to ATTEMPTS times, and the least stall is the evaluator's: noise passes, a
real stall fails every attempt. ``test_the_ticker_sees_a_call_that_holds_the_gil`` checks
that the measurement does catch one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import pytest
from rapidfuzz.distance import Levenshtein as RapidLevenshtein
from stall_meter import ALL, CORE, MB, GcPauses, call_for, pair, random_unicode, run_while_ticking

from tracesim import ConfigError
from tracesim.evaluators import EvalResult, ExactMatch, from_config
from tracesim.evaluators._builtin_types import BUILTIN_TYPES
from tracesim.runs import Run, Step, ToolCall

MAX_STALL_S = 0.100
# the options an evaluator cannot be built without
REQUIRED: dict[str, dict[str, Any]] = {
    "llm_judge": {"rubric": "r"},
    "tool_arguments": {"tool": "search", "arguments": {"q": "a"}},
    "run_budget": {"max_tool_calls": 5},
}
ATTEMPTS = 5

# Where each entry cuts its texts on a scoring thread in the host's interpreter, where
# run_while_ticking runs it (None: it never cuts; elsewhere the bounds are higher, see
# test_long_texts_exact.py). Compat results with no room for it (Azure's dicts, Agenta's
# bool/int, 2Signal's score/label) are left out.
CUT_AT: dict[str, int | None] = {
    "exact": None,
    "levenshtein": 10_000,
    "levenshtein_distance": 40_000,
    "jaccard": 100_000,
    "cosine": 100_000,
    "content_similarity": 100_000,
    "f1": 100_000,
    "bleu": 20_000,
    "gleu": 20_000,
    "meteor": 10_000,
    **{name: 50_000 for name in CORE if name.startswith("rouge:")},
    "rouge:rougeLsum": 10_000,
    "agenttest.cosine": 100_000,
    "agenttest.levenshtein": 40_000,
    "agenttest.jaccard": 100_000,
    "agenttest.exact": None,
    "mastra.ContentSimilarity": 100_000,
}


@functools.cache
def _pair(kind: str) -> tuple[str, str]:
    return pair(kind, MB)


@functools.cache
def _call(name: str) -> Any:
    call = call_for(name)
    call("warm up", "warm up")  # loads NLTK data, WordNet, regexes: not part of the stall
    return call


def _least_stall(work: Callable[[], Any]) -> tuple[Any, float, list[str]]:
    """Run ``work`` while ticking, again while the stall is over the bound; the least stall.

    Also returns each attempt's stall and longest garbage collection, for the failure message.
    """
    stalls: list[float] = []
    notes: list[str] = []
    for _ in range(ATTEMPTS):
        with GcPauses() as pauses:
            result, stall_s = run_while_ticking(work)
        stalls.append(stall_s)
        notes.append(f"{stall_s * 1000:.0f} ms (longest GC {pauses.longest_s * 1000:.0f} ms)")
        if stall_s < MAX_STALL_S:
            break
    return result, min(stalls), notes


def _truncated_to(result: Any) -> Any:
    if isinstance(result, EvalResult):
        return result.details.get("truncated_to")
    if isinstance(getattr(result, "details", None), dict):  # AgentTest's EvaluationResult
        return result.details.get("truncated_to")
    for key in ("details", "info"):  # Mastra, and the results as dicts
        if isinstance(result, dict) and isinstance(result.get(key), dict):
            return result[key].get("truncated_to")
    raise AssertionError(f"no place for truncated_to in {result!r}")


@pytest.mark.parametrize("kind", ["english", "unicode"])
@pytest.mark.parametrize("name", ALL)
def test_a_megabyte_pair_does_not_stall_the_host(name: str, kind: str) -> None:
    call = _call(name)
    output, expected = _pair(kind)
    result, stall_s, notes = _least_stall(lambda: call(output, expected))
    assert stall_s < MAX_STALL_S, f"{name} froze the calling thread on every run: {', '.join(notes)}"
    if isinstance(result, EvalResult):
        assert result.status == "ok", result.error
    if name in CUT_AT:
        assert _truncated_to(result) == CUT_AT[name]


def test_exact_json_refuses_to_parse_megabytes() -> None:
    document = json.dumps([{"id": i, "text": "x" * 50} for i in range(20_000)])
    assert len(document) > MB
    result, stall_s, notes = _least_stall(lambda: ExactMatch(json=True).evaluate(document, document))
    assert stall_s < MAX_STALL_S, ", ".join(notes)
    assert (result.status, result.error_type) == ("error", "JsonTooLongError")
    assert "max_json_chars=100000" in (result.error or "")
    assert ExactMatch(json=True, max_json_chars=None).evaluate(document, document).score == 1.0


def test_the_ticker_sees_a_call_that_holds_the_gil() -> None:
    # The old levenshtein_distance: rapidfuzz called directly holds the GIL for the whole
    # distance (about half a second for these on this machine).
    a, b = random_unicode(60_000, 1), random_unicode(60_000, 2)
    _, stall_s = run_while_ticking(lambda: RapidLevenshtein.distance(a, b))
    assert stall_s > MAX_STALL_S


@pytest.mark.parametrize("type_name", sorted(BUILTIN_TYPES))
def test_each_default_cap_is_in_the_docstring(type_name: str) -> None:
    evaluator = from_config({"type": type_name, **REQUIRED.get(type_name, {})})
    text_cap = "max_json_chars" if type_name == "exact" else "max_chars"
    cap = getattr(evaluator, "max_calls" if hasattr(evaluator, "max_calls") else text_cap)
    assert f"{cap:,}" in (type(evaluator).__doc__ or ""), f"{type_name}: document the default cap {cap:,}"


@pytest.mark.parametrize("name", sorted(name for name, config in CORE.items() if config["type"] != "exact"))
def test_below_the_cap_nothing_is_cut_and_above_it_the_prefix_is_scored(name: str) -> None:
    config = CORE[name]
    capped, uncapped = from_config({**config, "max_chars": 60}), from_config({**config, "max_chars": None})
    output, expected = pair("english", 61)
    at_cap = capped.evaluate(output[:60], expected[:60])
    assert "truncated_to" not in at_cap.details
    assert at_cap.score == uncapped.evaluate(output[:60], expected[:60]).score
    above = capped.evaluate(output, expected)
    assert above.details["truncated_to"] == 60
    assert above.score == at_cap.score


# -- run evaluators: a runaway agent's 100,000 tool calls ----------------------------------

# trajectory_judge asks a model: its bounds are tested in tests/evaluators/models
RUN_TYPES = sorted(
    name
    for name, cls in BUILTIN_TYPES.items()
    if getattr(cls, "scores_runs", False) and name != "trajectory_judge"
)
MANY_CALLS = 100_000


@functools.cache
def _many_calls(kind: str) -> Any:
    calls = [{"name": f"tool{i % 7}", "arguments": {"q": f"v{i}", "n": i}} for i in range(MANY_CALLS)]
    if kind == "json":
        return json.dumps(calls)
    if kind == "run":
        return Run(
            steps=tuple(
                Step(kind="tool", name=call["name"], tool_call=ToolCall(call["name"], call["arguments"]))
                for call in calls
            )
        )
    return calls


@functools.cache
def _other_calls() -> list[dict[str, Any]]:
    return [{"name": f"tool{i % 5}", "arguments": {"q": f"v{i}", "n": i + 1}} for i in range(MANY_CALLS)]


@pytest.mark.parametrize("kind", ["list", "json", "run"])
@pytest.mark.parametrize("type_name", RUN_TYPES)
def test_a_hundred_thousand_calls_do_not_stall_the_host(type_name: str, kind: str) -> None:
    evaluator = from_config({"type": type_name, **REQUIRED.get(type_name, {})})
    output, expected = _many_calls(kind), _other_calls()
    result, stall_s, notes = _least_stall(lambda: evaluator.evaluate(output, expected))
    assert stall_s < MAX_STALL_S, f"{type_name} froze the calling thread on every run: {', '.join(notes)}"
    assert result.status == "ok", result.error
    whole = type_name == "run_budget" and kind == "run"  # a Run's counts are exact: read whole
    assert result.details.get("truncated_to") == (None if whole else 1_000)


@pytest.mark.parametrize("type_name", RUN_TYPES)
def test_below_the_call_cap_nothing_is_cut_and_above_it_the_first_calls_are_scored(type_name: str) -> None:
    calls = [{"name": f"tool{i % 3}", "arguments": {"n": i}} for i in range(12)]
    expected = [{"name": f"tool{i % 2}", "arguments": {"n": i}} for i in range(12)]
    options = {"type": type_name, **REQUIRED.get(type_name, {})}
    if type_name == "run_budget":
        options["max_tool_calls"] = 5
    capped = from_config({**options, "max_calls": 10})
    uncapped = from_config({**options, "max_calls": None})
    at_cap = capped.evaluate(calls[:10], expected[:10])
    assert "truncated_to" not in at_cap.details
    assert at_cap.score == uncapped.evaluate(calls[:10], expected[:10]).score
    above = capped.evaluate(calls, expected)
    assert above.details["truncated_to"] == 10
    assert above.score == at_cap.score
    assert capped.evaluate(json.dumps(calls), expected).score == at_cap.score


def test_run_budget_needs_its_tool_call_limit_below_the_cap() -> None:
    with pytest.raises(ConfigError) as info:
        from_config({"type": "run_budget", "max_tool_calls": 1_000})
    assert info.value.setting == "run_budget.max_calls"
    assert from_config({"type": "run_budget", "max_tool_calls": 1_000, "max_calls": None}).max_calls is None
    many = [{"name": "a"}] * 5_000  # counted to the cap: still over a limit below it
    result = from_config({"type": "run_budget", "max_tool_calls": 999}).evaluate(many, None)
    assert (result.score, result.details["truncated_to"]) == (0.0, 1_000)
