"""`ExperimentReport`: the rows of a run, what they add up to, and the run as a file.

The JSON file holds everything a later comparison needs (the rows with their scores, the
evaluators' thresholds and directions) plus the computed summary for dashboards; loading it
recomputes the summary from the rows, so the two cannot disagree.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracesim import _outputs
from tracesim.experiments._case_results import CaseResult, EvaluatorInfo
from tracesim.experiments._stats import (
    CaseSummary,
    EvaluatorSummary,
    case_summaries,
    evaluator_summaries,
    worst_first,
)

if TYPE_CHECKING:
    # Imported when used: the evaluators package loads the metrics' libraries, and
    # ``import tracesim`` (which re-exports Dataset) must stay fast.
    from tracesim.experiments._compare import Comparison

__all__ = ["SCHEMA", "ExperimentReport"]

SCHEMA = "tracesim.experiment/1"


@dataclass(frozen=True)
class ExperimentReport:
    """The outcome of `Dataset.evaluate`: one row per case and repeat, and their summaries.

    ``str(report)`` is a plain-text table for a CI log; `to_json` / `load` keep a run as a
    file, `to_html` writes a self-contained page, `compare` sets it against a baseline.

    Example:
        >>> from tracesim.experiments import Case, Dataset
        >>> dataset = Dataset([Case("2+2", "4", id="add"), Case("2*3", "5", id="mul")], name="maths")
        >>> report = dataset.evaluate(lambda q: str(eval(q)), evaluators=["exact"])
        >>> report.pass_rate, report.summary["exact"].mean, report.row("mul").output
        (0.5, 0.5, '6')
        >>> [case.case_id for case in report.worst_first()]
        ['mul', 'add']
    """

    name: str
    dataset: str
    rows: tuple[CaseResult, ...]
    evaluators: tuple[EvaluatorInfo, ...]
    repeat: int = 1
    run_id: str = ""
    started_at: str = ""
    duration_s: float = 0.0

    # -- what the rows add up to -----------------------------------------------------------------

    @cached_property
    def summary(self) -> dict[str, EvaluatorSummary]:
        """Per evaluator: mean score, pass rate, passed, failed, errors, skipped."""
        return evaluator_summaries(self.rows, [e.name for e in self.evaluators])

    @cached_property
    def cases(self) -> tuple[CaseSummary, ...]:
        """Per case, in dataset order: its runs, pass counts, pass@k and score statistics."""
        return tuple(case_summaries(self.rows, [e.name for e in self.evaluators]))

    def worst_first(self) -> list[CaseSummary]:
        """The cases, most task errors first, then lowest pass rate, then lowest mean score."""
        return worst_first(self.cases, self.evaluators)

    @property
    def passed(self) -> int:
        """Runs that passed."""
        return sum(row.passed is True for row in self.rows)

    @property
    def failed(self) -> int:
        """Runs that failed (the task's errors included)."""
        return sum(row.passed is False for row in self.rows)

    @property
    def errors(self) -> int:
        """Runs in which the task raised or timed out."""
        return sum(row.error is not None for row in self.rows)

    @property
    def pass_rate(self) -> float | None:
        """Passed runs over decided runs; None when no run was decided."""
        decided = self.passed + self.failed
        return self.passed / decided if decided else None

    @property
    def pass_at_1(self) -> float | None:
        """The mean over cases of pass@1 (each case's share of passed runs)."""
        return _mean(c.pass_rate for c in self.cases)

    @property
    def pass_at_k(self) -> float | None:
        """The mean over cases of pass@k, k = ``repeat``: the share of cases that passed at least once."""
        return _mean(c.pass_at_k for c in self.cases)

    @property
    def pass_hat_k(self) -> float | None:
        """The mean over cases of pass^k, k = ``repeat``: the share of cases that passed every time."""
        return _mean(c.pass_hat_k for c in self.cases)

    def row(self, case_id: str, repeat: int = 0) -> CaseResult:
        """The run of case ``case_id`` (its ``repeat``-th, from 0)."""
        for row in self.rows:
            if row.case_id == case_id and row.repeat == repeat:
                return row
        raise KeyError(f"no run of case {case_id!r} with repeat={repeat}")

    # -- views --------------------------------------------------------------------------------

    def table(self, *, max_cases: int | None = None, width: int = 40) -> str:
        """A plain-text summary and per-case table, worst cases first, for a CI log.

        Secrets are redacted (see `redacted`): the text is safe to print or keep.
        """
        from tracesim.experiments._text_view import render_text

        return _outputs.text(render_text(self.redacted(), max_cases=max_cases, width=width))

    def __str__(self) -> str:
        return self.table()

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write a self-contained HTML page (no scripts, nothing fetched), secrets redacted
        (see `redacted`), and return its path."""
        from tracesim.experiments._html_view import render_html

        target = Path(path)
        _outputs.write_text(target, render_html(self.redacted()))
        return target

    def redacted(self) -> ExperimentReport:
        """This report with every secret in it redacted, as `to_json`, `to_html` and `table` write it.

        Every string of every row (case id, input, expected, output, error, metadata, each
        result's label, explanation and error) and the run's and evaluators' names pass through
        the configured redaction (``redact_patterns`` and the ``redact`` hook, as spans do). The
        data is redacted before it is rendered, so a secret cut short in a table cell, or wrapped
        over two lines, is gone too. Case ids (and evaluator names) that redact to the same
        text are kept apart by a suffix made from a keyed hash of the original, the same in
        every run (``[REDACTED:email]-1f0e9c2a``), so they are still different cases and a later
        run is compared case by case (docs/experiments.md, "Redacted case ids").

        Example:
            >>> from tracesim.experiments import Case, Dataset
            >>> report = Dataset([Case("q", "a", id="q1")]).evaluate(lambda q: "mail marie@curie.org")
            >>> report.redacted().row("q1").output
            'mail [REDACTED:email]'
        """
        ids = _distinct(row.case_id for row in self.rows)
        names = _distinct([*(e.name for e in self.evaluators), *(n for row in self.rows for n in row.scores)])
        return replace(
            self,
            name=_outputs.text(self.name),
            dataset=_outputs.text(self.dataset),
            rows=tuple(replace(row.redacted(names), case_id=ids[row.case_id]) for row in self.rows),
            evaluators=tuple(replace(e, name=names[e.name]) for e in self.evaluators),
            run_id=_outputs.text(self.run_id),
        )

    def compare(
        self, baseline: ExperimentReport, *, tolerance: float = 0.0, per_case: bool = True
    ) -> Comparison:
        """What got better or worse than ``baseline``, per evaluator and case by case.

        A change counts when it is larger than ``tolerance`` (absolute, on scores and rates).
        With ``per_case=False`` only the run-wide numbers can make ``comparison.ok`` false;
        the cases' changes are still listed.
        """
        from tracesim.experiments._compare import compare

        return compare(self, baseline, tolerance=tolerance, per_case=per_case)

    # -- as a file ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The whole run as JSON-ready data (the file `to_json` writes)."""
        return {
            "schema": SCHEMA,
            "name": self.name,
            "dataset": self.dataset,
            "run_id": self.run_id,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "repeat": self.repeat,
            "evaluators": [vars(e).copy() for e in self.evaluators],
            "summary": self._summary_dict(),
            "rows": [row.to_dict() for row in self.rows],
        }

    def _summary_dict(self) -> dict[str, Any]:
        return {
            "runs": len(self.rows),
            "cases": len(self.cases),
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "pass_rate": self.pass_rate,
            "pass_at_1": self.pass_at_1,
            "pass_at_k": self.pass_at_k,
            "pass_hat_k": self.pass_hat_k,
            "evaluators": {name: {**vars(s), "pass_rate": s.pass_rate} for name, s in self.summary.items()},
        }

    def to_json(self, path: str | os.PathLike[str]) -> Path:
        """Write the run to ``path`` as one JSON document (strict JSON) and return the path.

        Secrets are redacted (see `redacted`): the file is meant to be committed as a baseline.
        A case id that held a secret is written redacted with its keyed suffix (see `redacted`),
        so a later run made with the same key matches it.
        """
        target = Path(path)
        _outputs.write_json(target, self._dict_with_distinct_ids(), indent=1)
        return target

    def _dict_with_distinct_ids(self) -> dict[str, Any]:
        """`to_dict`, with the case ids and evaluator names `redacted` gives: the rest is
        redacted as it is written."""
        data = self.to_dict()
        ids = _distinct(row.case_id for row in self.rows)
        names = _distinct([*(e.name for e in self.evaluators), *(n for row in self.rows for n in row.scores)])
        for row in data["rows"]:
            row["case_id"] = ids[row["case_id"]]
            row["scores"] = {names[name]: {**r, "name": names[name]} for name, r in row["scores"].items()}
        for info in data["evaluators"]:
            info["name"] = names[info["name"]]
        data["summary"]["evaluators"] = {names[n]: s for n, s in data["summary"]["evaluators"].items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExperimentReport:
        """A report from `to_dict` data; raises ValueError for data of another shape."""
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
            raise ValueError(f"not a tracesim experiment run (schema {found!r}, expected {SCHEMA!r})")
        try:
            return cls(
                name=str(data["name"]),
                dataset=str(data.get("dataset", "")),
                rows=tuple(CaseResult.from_dict(row) for row in data["rows"]),
                evaluators=tuple(EvaluatorInfo(**e) for e in data["evaluators"]),
                repeat=int(data.get("repeat", 1)),
                run_id=str(data.get("run_id", "")),
                started_at=str(data.get("started_at", "")),
                duration_s=float(data.get("duration_s") or 0.0),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a damaged experiment run ({type(exc).__name__}: {exc})") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ExperimentReport:
        """Read a run `to_json` wrote.

        Raises:
            OSError: the file cannot be read.
            ValueError: it is not a tracesim experiment run; the message names the file.
        """
        from tracesim import _inputs

        data = _inputs.read_json(path)  # InputError (a ValueError) names the file, line and limit
        try:
            return cls.from_dict(data)
        except ValueError as exc:  # the shape check above
            raise ValueError(f"{os.fspath(path)}: {exc}") from None


def _distinct(names: Iterable[str]) -> dict[str, str]:
    """Each name as written: redacted, with a suffix kept apart by a keyed hash of the name,
    the same in every run (see `tracesim.experiments._case_ids`).

    Example:
        >>> ids = _distinct(["a@b.io", "c@d.io", "plain"])
        >>> ids["plain"], ids["a@b.io"][:17], ids["a@b.io"] != ids["c@d.io"]
        ('plain', '[REDACTED:email]-', True)
    """
    from tracesim.experiments._case_ids import written_ids

    return written_ids(names)


def _mean(values: Any) -> float | None:
    numbers = [v for v in values if v is not None and math.isfinite(v)]
    return sum(numbers) / len(numbers) if numbers else None
