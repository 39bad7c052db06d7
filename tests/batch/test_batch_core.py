"""The batch core in one process: `score_frame` and `score_rows`, as every engine calls them."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tracesim.batch import FIELDS, build_evaluators, score_frame, score_rows
from tracesim.evaluators import Evaluator, Levenshtein, evaluator, register, unregister

pd = pytest.importorskip("pandas", reason="the 'dask' extra is not installed")


def test_score_frame_gives_the_evaluators_numbers_as_columns_on_the_frames_index() -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "output": ["Hello World!", "Paris", "Lyon", "Rome"],
            "expected": ["Hello World", None, float("nan"), pd.NA],
            "other": [1, 2, 3, 4],
        },
        index=[10, 20, 30, 40],
    )
    scores = score_frame(frame, ["levenshtein:threshold=0.8", {"type": "exact"}])
    expected_columns = ["id"] + [f"{name}.{field}" for name in ("levenshtein", "exact") for field in FIELDS]
    assert list(scores.columns) == expected_columns
    assert list(scores.index) == [10, 20, 30, 40]
    first = Levenshtein(threshold=0.8).evaluate("Hello World!", "Hello World")
    assert scores.loc[10, "levenshtein.score"] == first.score == 0.92
    assert scores.loc[10, "levenshtein.passed"]
    assert scores.loc[10, "levenshtein.label"] == "pass"
    # None, NaN and pd.NA all mean "no expected output": skipped, never a made-up score
    assert scores["levenshtein.status"].tolist() == ["ok", "skipped", "skipped", "skipped"]
    assert scores["exact.score"].isna().tolist() == [False, True, True, True]
    assert scores["exact.passed"].tolist() == [False, pd.NA, pd.NA, pd.NA]


def test_an_empty_frame_gives_the_result_columns_and_dtypes_dask_asks_for() -> None:
    rows = pd.DataFrame({"output": ["a"], "expected": ["a"]})
    full = score_frame(rows, ["exact"])
    empty = score_frame(rows.iloc[:0], ["exact"])
    assert len(empty) == 0
    assert empty.dtypes.to_dict() == full.dtypes.to_dict()
    assert str(full.dtypes["exact.passed"]) == "boolean"


def test_a_frame_without_the_output_column_is_refused_with_its_columns() -> None:
    with pytest.raises(KeyError, match=r"no 'answer' column to score \(columns: output, expected\)"):
        score_frame(pd.DataFrame({"output": ["a"], "expected": ["a"]}), ["exact"], output="answer")


@pytest.fixture
def counting() -> Iterator[list[int]]:
    """A registered evaluator type that counts how many times it is built."""
    built: list[int] = []

    class Counting(Evaluator):
        type_name = "counting"

        def __init__(self, **shared: Any) -> None:
            built.append(1)
            super().__init__(**shared)

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            return float(output == expected)

    register("counting", Counting)
    yield built
    unregister("counting")


def test_evaluators_given_as_configs_are_built_once_per_process(counting: list[int]) -> None:
    frame = pd.DataFrame({"output": ["a", "b"], "expected": ["a", "a"]})
    for _ in range(5):  # five batches, as an engine would hand them out
        scores = score_frame(frame, [{"type": "counting", "threshold": 0.5}])
        assert scores["counting.score"].tolist() == [1.0, 0.0]
    assert (
        build_evaluators(["counting:threshold=0.5"])[0]
        is build_evaluators([{"threshold": 0.5, "type": "counting"}])[0]
    )
    assert len(counting) == 1
    score_frame(frame, ["counting:threshold=0.9"])  # another config is another evaluator
    assert len(counting) == 2


def test_an_evaluator_that_raises_costs_its_rows_not_the_batch() -> None:
    class Broken(Evaluator):
        type_name = "broken"

        def evaluate(self, output: Any, expected: Any, *, input: Any = None) -> Any:
            if output == "boom":
                raise RuntimeError("boom")
            return super().evaluate(output, expected, input=input)

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            return 1.0

    results = score_rows([Broken(), Levenshtein()], [("ok", "ok", None), ("boom", "ok", None)])
    assert [r.status for r in results[0]] == ["ok", "ok"]
    assert results[1][0].status == "error"
    assert results[1][0].error == "RuntimeError: boom"
    assert results[1][1].status == "ok"


def test_async_evaluators_run_together_within_their_concurrency_limit() -> None:
    in_flight, peak = 0, 0
    gate = asyncio.Event()

    @evaluator(max_concurrency=3, threshold=0.5)
    async def judged(output: str, expected: str) -> float:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if peak == 3:
            gate.set()  # the limit is reached: let every call finish
        await gate.wait()
        in_flight -= 1
        return float(output == expected)

    rows = [(f"o{i}", "o0", None) for i in range(10)]
    results = score_rows([judged, Levenshtein()], rows)
    assert peak == 3
    assert [r[0].score for r in results] == [1.0] + [0.0] * 9
    assert all(r[1].status == "ok" for r in results)


def test_importing_tracesim_batch_imports_neither_dask_nor_pandas() -> None:
    code = (
        "import sys, tracesim, tracesim.batch; "
        "print(sorted(m for m in ('pandas', 'dask', 'distributed', 'pyarrow') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_the_public_names_are_pinned_and_documented() -> None:
    import tracesim.batch

    assert sorted(tracesim.batch.__all__) == [
        "BackfillReport",
        "BatchReport",
        "EvaluatorSpec",
        "FIELDS",
        "Records",
        "ReplayReport",
        "SourceError",
        "Spans",
        "Tally",
        "backfill",
        "build_evaluators",
        "replay",
        "result_schema",
        "score",
        "score_frame",
        "score_rows",
    ]
    for name in tracesim.batch.__all__:
        if name not in ("FIELDS", "EvaluatorSpec"):  # a tuple and a type alias: documented where defined
            assert getattr(tracesim.batch, name).__doc__, name


@pytest.mark.parametrize(
    "module",
    [
        "tracesim.batch",
        "tracesim.batch._frame",
        "tracesim.batch._records",
        "tracesim.batch._score_rows",
        "tracesim.batch._sources",
        "tracesim.batch._spans",
        "tracesim.batch._summary",
    ],
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    outcome = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0
    assert outcome.failed == 0
