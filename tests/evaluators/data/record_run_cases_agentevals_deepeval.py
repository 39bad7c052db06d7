"""Record agentevals' and deepeval's scores on the run cases (not run by the test suite).

Writes ``run_cases_agentevals_deepeval.jsonl`` beside this file: one JSON object a line,
``{"evaluator", "options", "output", "expected", "score", "passed"?, "package"}``, where
``options`` are tracesim's options, ``output``/``expected`` are tool calls as tracesim takes
them (an inner list is one assistant message) and ``score`` is the package's.

Run it with a Python that has the packages (not tracesim's venv), e.g.::

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install agentevals==0.0.9 deepeval==4.3.1
    cd tests/evaluators/data
    DEEPEVAL_TELEMETRY_OPT_OUT=1 /tmp/peers/bin/python record_run_cases_agentevals_deepeval.py
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("run_cases_agentevals_deepeval.jsonl")


def call(name: str, arguments: Any = None, output: Any = None) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    if output is not None:
        data["output"] = output
    return data


A1 = call("search", {"q": "warsaw"})
B1 = call("weather", {"city": "Warsaw", "unit": "C"})

# (label, actual, expected): an item that is a list is one message holding those calls.
TRAJECTORIES: list[tuple[str, list[Any], list[Any]]] = [
    ("identical", [A1, B1], [A1, B1]),
    ("swapped", [B1, A1], [A1, B1]),
    ("both empty", [], []),
    ("actual empty", [], [A1]),
    ("expected empty", [A1], []),
    ("extra call", [A1, B1, call("answer")], [A1, B1]),
    ("missing call", [A1], [A1, B1]),
    (
        "int float bool",
        [call("f", {"x": 1, "y": 1.0, "z": True})],
        [call("f", {"x": 1.0, "y": True, "z": 1})],
    ),
    ("string vs number", [call("f", {"x": "1"})], [call("f", {"x": 1})]),
    (
        "nested lists as numbers",
        [call("f", {"v": [1, 2], "o": {"a": 1}})],
        [call("f", {"v": [1.0, 2.0], "o": {"a": True}})],
    ),
    ("list order", [call("f", {"v": [1, 2]})], [call("f", {"v": [2, 1]})]),
    ("actual args subset", [call("f", {"x": 1})], [call("f", {"x": 1, "y": 2})]),
    ("actual args superset", [call("f", {"x": 1, "y": 2})], [call("f", {"x": 1})]),
    ("args differ", [call("f", {"x": 1, "y": 3})], [call("f", {"x": 1, "y": 2})]),
    ("null vs absent", [call("f", {"x": None})], [call("f", {})]),
    (
        "greedy no backtracking",
        [call("f", {"x": 1, "y": 2}), call("f", {"x": 1})],
        [call("f", {"x": 1}), call("f", {"x": 1, "y": 2})],
    ),
    (
        "greedy reversed",
        [call("f", {"x": 1}), call("f", {"x": 1, "y": 2})],
        [call("f", {"x": 1, "y": 2}), call("f", {"x": 1})],
    ),
    ("duplicate actual", [A1, A1], [A1]),
    ("duplicate expected", [A1], [A1, A1]),
    ("case differs", [call("Search", {"q": "warsaw"})], [A1]),
    ("trailing space", [call("search ", {"q": "warsaw"})], [A1]),
    ("unicode forms", [call("caf\u00e9")], [call("cafe\u0301")]),
    ("parallel same message any order", [[A1, B1]], [[B1, A1]]),
    ("parallel vs sequential", [[A1, B1]], [A1, B1]),
    ("sequential vs parallel", [A1, B1], [[A1, B1]]),
    ("messages mixed", [[A1, B1], call("answer", {"t": "x"})], [[B1, A1], call("answer", {"t": "x"})]),
    ("message sizes differ", [[A1, B1], call("answer")], [[A1], [B1, call("answer")]]),
    ("subset of expected", [A1], [A1, B1, call("answer")]),
    ("outside expected", [A1, call("delete_all")], [A1, B1]),
    (
        "same names other args",
        [call("f", {"x": 2}), call("f", {"x": 1})],
        [call("f", {"x": 1}), call("f", {"x": 2})],
    ),
]

ARG_MODES = ("exact", "ignore", "subset", "superset")
MODES = ("strict", "unordered", "subset", "superset")

# (label, options with tool_args, actual, expected)
OVERRIDES: list[tuple[str, dict[str, Any], list[Any], list[Any]]] = [
    (
        "key path equal",
        {"tool_args": {"search": ["q"]}},
        [call("search", {"q": "a", "n": 1})],
        [call("search", {"q": "a", "n": 2})],
    ),
    (
        "key path differs",
        {"tool_args": {"search": ["q"]}},
        [call("search", {"q": "a"})],
        [call("search", {"q": "b"})],
    ),
    (
        "nested key path",
        {"tool_args": {"w": ["filter.city"]}},
        [call("w", {"filter": {"city": "X", "d": 1}})],
        [call("w", {"filter": {"city": "X", "d": 2}})],
    ),
    (
        "key path missing both",
        {"tool_args": {"w": ["nope.deep"]}},
        [call("w", {"a": 1})],
        [call("w", {"a": 2})],
    ),
    ("key path null vs absent", {"tool_args": {"w": ["x"]}}, [call("w", {"x": None})], [call("w", {})]),
    (
        "key path through non-dict",
        {"tool_args": {"w": ["x.y"]}},
        [call("w", {"x": 5})],
        [call("w", {"x": [1]})],
    ),
    (
        "key path int vs float",
        {"tool_args": {"w": ["x", "y"]}},
        [call("w", {"x": 1, "y": True})],
        [call("w", {"x": 1.0, "y": 1})],
    ),
    (
        "override ignore one tool",
        {"tool_args": {"search": "ignore"}},
        [call("search", {"q": "a"}), call("w", {"c": 1})],
        [call("search", {"q": "b"}), call("w", {"c": 1})],
    ),
    (
        "override ignore other tool differs",
        {"tool_args": {"search": "ignore"}},
        [call("search", {"q": "a"}), call("w", {"c": 2})],
        [call("search", {"q": "b"}), call("w", {"c": 1})],
    ),
    (
        "override exact over ignore",
        {"args": "ignore", "tool_args": {"w": "exact"}},
        [call("search", {"q": "a"}), call("w", {"c": 2})],
        [call("search", {"q": "b"}), call("w", {"c": 1})],
    ),
    ("override subset", {"tool_args": {"w": "subset"}}, [call("w", {"c": 1})], [call("w", {"c": 1, "d": 2})]),
    (
        "override superset",
        {"tool_args": {"w": "superset"}},
        [call("w", {"c": 1})],
        [call("w", {"c": 1, "d": 2})],
    ),
    (
        "override for absent tool",
        {"tool_args": {"zzz": "ignore"}},
        [call("w", {"c": 1})],
        [call("w", {"c": 2})],
    ),
]


def messages(items: list[Any]) -> list[dict[str, Any]]:
    out = []
    for n, item in enumerate(items):
        group = item if isinstance(item, list) else [item]
        out.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call_{n}_{k}",
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                    }
                    for k, c in enumerate(group)
                ],
            }
        )
    return out


def trajectory_cases() -> list[dict[str, Any]]:
    from agentevals.trajectory.match import create_trajectory_match_evaluator

    cases = []
    runs: list[tuple[str, dict[str, Any], list[Any], list[Any]]] = []
    for (label, actual, expected), mode, args in itertools.product(TRAJECTORIES, MODES, ARG_MODES):
        runs.append((label, {"mode": mode, "args": args}, actual, expected))
    for (label, options, actual, expected), mode in itertools.product(OVERRIDES, MODES):
        runs.append((label, {"mode": mode, "args": "exact", **options}, actual, expected))
    for label, options, actual, expected in runs:
        evaluator = create_trajectory_match_evaluator(
            trajectory_match_mode=options["mode"],
            tool_args_match_mode=options["args"],
            tool_args_match_overrides=options.get("tool_args"),
        )
        result = evaluator(outputs=messages(actual), reference_outputs=messages(expected))
        cases.append(
            {
                "evaluator": "trajectory_match",
                "label": label,
                "options": options,
                "output": actual,
                "expected": expected,
                "score": 1.0 if result["score"] else 0.0,
                "package": "agentevals 0.0.9",
            }
        )
    return cases


def flat(items: list[Any]) -> list[dict[str, Any]]:
    return [c for item in items for c in (item if isinstance(item, list) else [item])]


# (label, actual, expected) for deepeval; outputs matter there.
CORRECTNESS: list[tuple[str, list[Any], list[Any]]] = [
    ("identical", [A1, B1], [A1, B1]),
    ("swapped", [B1, A1], [A1, B1]),
    ("both empty", [], []),
    ("actual empty", [], [A1, B1]),
    ("expected empty", [A1], []),
    ("extra calls", [call("x"), A1, call("y"), B1], [A1, B1]),
    ("missing one of three", [A1, B1], [A1, B1, call("answer")]),
    ("share of keys", [call("f", {"a": 1, "b": 5, "d": 4})], [call("f", {"a": 1, "b": 2, "c": 3})]),
    (
        "nested share",
        [call("f", {"o": {"x": 1, "y": 3}, "q": 1})],
        [call("f", {"o": {"x": 1, "y": 2}, "q": 1})],
    ),
    (
        "deep nested thirds",
        [call("f", {"o": {"x": 1, "y": {"a": 1, "b": 2, "c": 9}, "z": 0}, "q": 2, "r": 3})],
        [call("f", {"o": {"x": 1, "y": {"a": 1, "b": 2, "c": 3}, "z": 1}, "q": 1, "r": 3})],
    ),
    (
        "seven keys",
        [call("f", {k: (1 if k in "abcde" else 2) for k in "abcdefg"})],
        [call("f", dict.fromkeys("abcdefg", 1))],
    ),
    (
        "int float bool",
        [call("f", {"x": 1, "y": 1.0, "z": True})],
        [call("f", {"x": 1.0, "y": True, "z": 1})],
    ),
    ("string vs number", [call("f", {"x": "1", "y": 2})], [call("f", {"x": 1, "y": 2})]),
    ("list order", [call("f", {"v": [1, 2], "w": 1})], [call("f", {"v": [2, 1], "w": 1})]),
    ("no shared keys", [call("f", {"a": 1})], [call("f", {"b": 1})]),
    ("empty vs some", [call("f", {})], [call("f", {"b": 1})]),
    ("identical duplicates count once", [A1, A1], [A1, A1]),
    (
        "duplicates with other outputs",
        [call("search", {"q": "warsaw"}, "r1"), call("search", {"q": "warsaw"}, "r2")],
        [A1, A1],
    ),
    ("outputs equal", [call("f", {"x": 1}, "12 C")], [call("f", {"x": 1}, "12 C")]),
    ("outputs differ", [call("f", {"x": 1}, "12 C")], [call("f", {"x": 1}, "13 C")]),
    ("output expected none", [call("f", {"x": 1}, "12 C")], [call("f", {"x": 1})]),
    (
        "best credit wins",
        [call("f", {"x": 1, "y": 2}), call("f", {"x": 1, "y": 1})],
        [call("f", {"x": 1, "y": 1})],
    ),
    (
        "first on ties",
        [call("f", {"x": 1, "y": 2}), call("f", {"x": 1, "y": 3})],
        [call("f", {"x": 1, "y": 9}), call("f", {"x": 1, "y": 3})],
    ),
    (
        "greedy takes the better one early",
        [call("f", {"a": 1, "b": 1})],
        [call("f", {"a": 1, "b": 2}), call("f", {"a": 1, "b": 1})],
    ),
    (
        "ordering partial credits",
        [call("f", {"a": 1, "b": 2, "c": 0}), call("g", {"a": 1}), call("f", {"a": 1, "b": 0, "c": 0})],
        [call("f", {"a": 1, "b": 2, "c": 3}), call("g", {"a": 1}), call("f", {"a": 1, "b": 2, "c": 3})],
    ),
    ("ordering cross", [B1, A1, B1], [A1, B1, A1]),
    ("case differs", [call("Search", {"q": "warsaw"})], [A1]),
    ("unicode forms", [call("caf\u00e9")], [call("cafe\u0301")]),
    ("null vs absent", [call("f", {"x": None, "y": 1})], [call("f", {"y": 1})]),
]


def correctness_cases() -> list[dict[str, Any]]:
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

    class NoModel(DeepEvalBaseLLM):  # never called: no available tools are given
        def __init__(self) -> None:
            super().__init__("none")

        def load_model(self) -> None:
            return None

        def generate(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("no model")

        async def a_generate(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("no model")

        def get_model_name(self) -> str:
            return "none"

    def tc(c: dict[str, Any]) -> Any:
        return ToolCall(name=c["name"], input_parameters=c["arguments"], output=c.get("output"))

    names = {"input_parameters": ToolCallParams.INPUT_PARAMETERS, "output": ToolCallParams.OUTPUT}
    param_sets: list[list[str]] = [[], ["input_parameters"], ["output"], ["input_parameters", "output"]]
    cases = []
    model = NoModel()
    for (label, actual, expected), ordering, exact, params, strict in itertools.product(
        CORRECTNESS, (False, True), (False, True), param_sets, (False, True)
    ):
        metric = ToolCorrectnessMetric(
            model=model,
            async_mode=False,
            evaluation_params=[names[p] for p in params],
            should_consider_ordering=ordering,
            should_exact_match=exact,
            strict_mode=strict,
        )
        case = LLMTestCase(
            input="q",
            actual_output="a",
            tools_called=[tc(c) for c in actual],
            expected_tools=[tc(c) for c in expected],
        )
        score = metric.measure(case, _show_indicator=False)
        options: dict[str, Any] = {
            "consider_ordering": ordering,
            "exact_match": exact,
            "params": params,
            "strict_mode": strict,
        }
        cases.append(
            {
                "evaluator": "tool_correctness",
                "label": label,
                "options": options,
                "output": actual,
                "expected": expected,
                "score": float(score),
                "passed": bool(metric.success),
                "package": "deepeval 4.3.1",
            }
        )
    return cases


def main() -> None:
    cases = trajectory_cases() + correctness_cases()
    with OUT.open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(json.dumps(case, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
