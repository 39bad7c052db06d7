"""The rows of an experiment: `CaseResult` (one run of the task on one case) and `EvaluatorInfo`.

They are plain data: the statistics (`tracesim.experiments._stats`), the report, its views and
the runner all read them, so they stand below them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tracesim import _outputs
from tracesim._capture import to_jsonable
from tracesim.experiments._case import expected_data

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult

__all__ = ["CaseResult", "EvaluatorInfo"]


@dataclass(frozen=True)
class CaseResult:
    """One run of the task on one case: what went in, what came out, how it scored.

    ``error`` is ``"Type: message"`` when the task raised (or ran past ``timeout_s``); the
    evaluators did not run then. ``trace_id`` is the run's trace when tracesim was configured.
    ``run`` holds the case's run when an evaluator that scores runs failed or errored on it:
    its first steps, values cut (see `tracesim.experiments._run_steps`), for the report to
    show why; None otherwise.

    Example:
        >>> from tracesim.evaluators import ExactMatch
        >>> row = CaseResult("q1", 0, "2+2", "4", "4", {"exact": ExactMatch().evaluate("4", "4")}, 0.01)
        >>> row.passed, row.score("exact")
        (True, 1.0)
    """

    case_id: str
    repeat: int
    input: Any
    expected: Any
    output: Any
    scores: Mapping[str, EvalResult]
    duration_s: float
    error: str | None = None
    error_type: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    run: Mapping[str, Any] | None = None

    @property
    def passed(self) -> bool | None:
        """False when the task failed, an evaluator failed or errored; True when one passed and
        none failed; None when no evaluator decided (skipped, or no threshold)."""
        if self.error is not None:
            return False
        decided = False
        for result in self.scores.values():
            if result.status == "error" or result.passed is False:
                return False
            decided = decided or result.passed is True
        return True if decided else None

    def score(self, name: str) -> float | None:
        """The score evaluator ``name`` gave, or None (skipped, errored, not run)."""
        result = self.scores.get(name)
        return None if result is None else result.score

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data (values converted as tracesim captures them)."""
        return {
            "case_id": self.case_id,
            "repeat": self.repeat,
            "input": to_jsonable(self.input),
            "expected": expected_data(self.expected),
            "output": to_jsonable(self.output),
            "metadata": to_jsonable(dict(self.metadata)),
            "scores": {name: to_jsonable(r.model_dump(mode="json")) for name, r in self.scores.items()},
            "passed": self.passed,
            "duration_s": self.duration_s,
            "error": self.error,
            "error_type": self.error_type,
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "run": None if self.run is None else to_jsonable(dict(self.run)),
        }

    def redacted(self, names: Mapping[str, str] | None = None) -> CaseResult:
        """This row with every string in it redacted (`tracesim._outputs`), values as JSON data.

        ``names`` gives the evaluators' names as written (`ExperimentReport.redacted` keeps
        two names apart that redact to the same text); by default each name redacted, kept
        apart by `tracesim._outputs.distinct`.
        """
        written = names if names is not None else _outputs.distinct(self.scores)
        strings = {
            "case_id": self.case_id,
            "input": to_jsonable(self.input),
            "expected": expected_data(self.expected),
            "output": to_jsonable(self.output),
            "error": self.error,
            "error_type": self.error_type,
            "metadata": to_jsonable(dict(self.metadata)),
            "run": None if self.run is None else to_jsonable(dict(self.run)),
        }
        return replace(
            self,
            **_cleaned(strings),
            scores={written[name]: _redacted_result(r, written[name]) for name, r in self.scores.items()},
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseResult:
        """A row read back from `to_dict` data."""
        from tracesim.evaluators import EvalResult

        return cls(
            case_id=str(data["case_id"]),
            repeat=int(data.get("repeat", 0)),
            input=data.get("input"),
            expected=data.get("expected"),
            output=data.get("output"),
            scores={name: EvalResult.model_validate(r) for name, r in data.get("scores", {}).items()},
            duration_s=float(data.get("duration_s") or 0.0),
            error=data.get("error"),
            error_type=data.get("error_type"),
            trace_id=data.get("trace_id"),
            span_id=data.get("span_id"),
            metadata=data.get("metadata") or {},
            run=run if isinstance(run := data.get("run"), Mapping) else None,
        )


@dataclass(frozen=True)
class EvaluatorInfo:
    """What a comparison needs to know about an evaluator: its threshold and direction.

    Example:
        >>> from tracesim.evaluators import LevenshteinDistance
        >>> EvaluatorInfo.of(LevenshteinDistance(threshold=3)).higher_is_better
        False
    """

    name: str
    type: str
    threshold: float | None
    higher_is_better: bool = True

    @classmethod
    def of(cls, evaluator: Any) -> EvaluatorInfo:
        """The description of an `Evaluator`."""
        return cls(evaluator.name, evaluator.type_name, evaluator.threshold, bool(evaluator.higher_is_better))


def _redacted_result(result: EvalResult, name: str) -> EvalResult:
    """``result`` named ``name``, its label, explanation, details and error redacted."""
    strings = {key: getattr(result, key) for key in ("label", "explanation", "error", "error_type")}
    update = _cleaned({**strings, "details": to_jsonable(result.details)})
    return result.model_copy(update={**update, "name": name})


def _cleaned(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields' values redacted by `tracesim._outputs.clean`; their names, ours, kept as they are."""
    return dict(zip(fields, _outputs.clean(list(fields.values())), strict=True))
