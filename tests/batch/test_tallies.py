"""Errors count: in a tally, in tallies merged from parts, and in the pass-rate gates built on them.

An evaluator that errors on a row has not passed it: ``--fail-under`` divides the passes by
every decided result, errors included, in ``tracesim eval`` and in `tracesim.batch.score`,
whose parts' tallies are merged on the driver.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tracesim.batch._summary import BatchReport, PartSummary, Tally
from tracesim.cli import main
from tracesim.evaluators import Evaluator, register, unregister


class Flaky(Evaluator):
    """Passes the output "ok", raises on any other, as a judge whose endpoint fails often does."""

    type_name = "flaky_tally"

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        if output != "ok":
            raise ConnectionError("the judge's endpoint went away")
        return 1.0


@pytest.fixture(autouse=True)
def _flaky() -> Iterator[None]:
    register("flaky_tally", Flaky, replace=True)
    yield
    unregister("flaky_tally")


def _data(path: Path, outputs: list[str]) -> Path:
    path.write_text(
        "".join(json.dumps({"output": o, "expected": "ok"}) + "\n" for o in outputs), encoding="utf-8"
    )
    return path


def test_a_tally_counts_an_error_as_a_decided_result_that_did_not_pass() -> None:
    tally = Tally(threshold=0.5)
    tally.add("ok", 1.0, True)
    tally.add("error", None, None)
    tally.add("skipped", None, None)
    assert (tally.count, tally.passed, tally.judged, tally.errors, tally.skipped) == (1, 1, 2, 1, 1)
    assert tally.pass_rate == 0.5


def test_merged_tallies_keep_every_count_errors_included() -> None:
    first, second = Tally(threshold=0.5), Tally(threshold=0.5)
    first.add("ok", 1.0, True)
    first.add("error", None, None)
    second.add("error", None, None)
    second.add("error", None, None)
    second.add("ok", 0.0, False)
    second.add("skipped", None, None, tokens=7)
    first.merge(second)
    assert (first.count, first.passed, first.judged, first.errors, first.skipped, first.tokens) == (
        2,
        1,
        5,
        3,
        1,
        7,
    )
    assert first.pass_rate == 0.2


def test_a_batch_report_adds_up_its_parts_errors() -> None:
    report = BatchReport("out", {"flaky": Tally(threshold=0.5)})
    for index, (passes, errors) in enumerate([(1, 2), (0, 3)]):
        tally = Tally(threshold=0.5)
        for _ in range(passes):
            tally.add("ok", 1.0, True)
        for _ in range(errors):
            tally.add("error", None, None)
        report.add(PartSummary(index, records=passes + errors, tallies={"flaky": tally}))
    assert (report.tallies["flaky"].errors, report.tallies["flaky"].judged) == (5, 6)
    assert report.records == 6


def test_batch_score_over_several_parts_keeps_the_errors_of_each(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="the 'dask' extra is not installed")
    from tracesim import batch

    _data(tmp_path / "a.jsonl", ["ok", "boom", "boom"])
    _data(tmp_path / "b.jsonl", ["boom", "ok", "boom", "boom"])
    report = batch.score(
        str(tmp_path / "*.jsonl"),
        evaluators=["flaky_tally:threshold=0.5"],
        output=tmp_path / "out",
        engine="local",
    )
    assert report.parts == 2  # one per file: their tallies were merged
    tally = report.tallies["flaky_tally"]
    assert (tally.passed, tally.errors, tally.judged) == (2, 5, 7)


def test_tracesim_eval_gate_counts_errors_as_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _data(tmp_path / "data.jsonl", ["ok", "boom", "boom", "boom"])
    argv = ["eval", str(data), "-e", "flaky_tally:threshold=0.5", "--workers", "1", "--no-progress"]
    # 1 pass in 4 decided results: 0.25 < 0.5. Were errors left out, it would read 1 of 1.
    assert main([*argv, "-o", str(tmp_path / "scores.jsonl"), "--fail-under", "flaky_tally=0.5"]) == 1
    assert "flaky_tally: pass rate 0.250 < 0.500 (1 of 4 passed)" in capsys.readouterr().err
    assert main([*argv, "-o", str(tmp_path / "scores.jsonl"), "--fail-under", "flaky_tally=0.25"]) == 0
