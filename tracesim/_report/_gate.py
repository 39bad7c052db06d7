"""``--fail-under EVALUATOR=RATE``: pass-rate gates for CI.

A gate holds when the evaluator's pass rate over all files, groups and spans is at least
``RATE``. It fails when the rate is lower, and also when the evaluator is in the files but none
of its results had a pass/fail decision (all skipped, errored, unsampled or without a
threshold): a gate that cannot be checked must not pass silently. An evaluator that does not
occur in the files at all is reported as ``missing``; the command treats that as a usage error
(exit 2), since it is usually a misspelt name or the wrong file.

``tracesim report`` and ``tracesim eval`` parse gates with `parse_gate`, decide them with
`decide` and print them with `gate_line`, so they accept and say the same things.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tracesim._report._report_data import Report
from tracesim._terminal import visible

__all__ = ["Gate", "GateResult", "check_gates", "decide", "gate_line", "parse_gate"]

Outcome = Literal["pass", "fail", "undecided", "missing"]


@dataclass(frozen=True)
class Gate:
    """Require evaluator ``evaluator`` to pass at least ``min_rate`` (0-1) of its decided results."""

    evaluator: str
    min_rate: float


@dataclass(frozen=True)
class GateResult:
    """How one gate fared: ``outcome`` is ``pass``, ``fail``, ``undecided`` or ``missing``."""

    evaluator: str
    min_rate: float
    pass_rate: float | None
    passed: int
    decided: int
    outcome: Outcome

    @property
    def ok(self) -> bool:
        """Whether the gate holds."""
        return self.outcome == "pass"

    def describe(self) -> str:
        """One line for people, e.g. ``levenshtein: pass rate 0.750 < 0.800 (12 of 16 passed)``."""
        if self.outcome == "missing":
            return f"{self.evaluator}: no results or unsampled spans of this evaluator in the files"
        if self.outcome == "undecided" or self.pass_rate is None:
            return f"{self.evaluator}: no result with a pass/fail decision to check >= {self.min_rate:.3f}"
        sign = ">=" if self.ok else "<"
        return (
            f"{self.evaluator}: pass rate {self.pass_rate:.3f} {sign} {self.min_rate:.3f} "
            f"({self.passed} of {self.decided} passed)"
        )

    def to_dict(self) -> dict[str, Any]:
        """The gate as it appears under ``"gates"`` in ``--json`` output."""
        return {
            "evaluator": self.evaluator,
            "min_rate": self.min_rate,
            "pass_rate": self.pass_rate,
            "passed": self.passed,
            "decided": self.decided,
            "outcome": self.outcome,
        }


def parse_gate(spec: str) -> Gate:
    """Parse ``EVALUATOR=RATE``; ``RATE`` is a fraction (``0.9``) or a percentage (``90%``).

    Raises:
        ValueError: the spec is malformed; the message says what is accepted.

    Example:
        >>> parse_gate("levenshtein=0.8")
        Gate(evaluator='levenshtein', min_rate=0.8)
        >>> parse_gate("rougeL=95%").min_rate
        0.95
    """
    name, sep, raw = spec.rpartition("=")
    name, raw = name.strip(), raw.strip()
    if not sep or not name or not raw:
        raise ValueError(f"expected EVALUATOR=RATE, such as levenshtein=0.8 or levenshtein=80%, got {spec!r}")
    percent = raw.endswith("%")
    try:
        rate = float(raw[:-1] if percent else raw) / (100 if percent else 1)
    except ValueError:
        raise ValueError(
            f"rate in {spec!r} is not a number; use a fraction (0.8) or percentage (80%)"
        ) from None
    if not 0 <= rate <= 1:
        raise ValueError(f"rate in {spec!r} must be between 0 and 1 (or 0% and 100%)")
    return Gate(name, rate)


def check_gates(report: Report, gates: list[Gate]) -> list[GateResult]:
    """Check each gate against the report's per-evaluator totals, in the order given.

    Example:
        >>> from tracesim._report import summarize
        >>> check_gates(summarize([]), [parse_gate("levenshtein=0.8")])[0].outcome
        'missing'
    """
    out = []
    for gate in gates:
        stats = report.evaluator(gate.evaluator)
        if stats is None:
            out.append(GateResult(gate.evaluator, gate.min_rate, None, 0, 0, "missing"))
        else:
            out.append(decide(gate, stats.passed, stats.passed + stats.failed))
    return out


def decide(gate: Gate, passed: int, decided: int) -> GateResult:
    """The gate's outcome for ``passed`` of ``decided`` results; none decided is ``undecided``.

    Example:
        >>> decide(parse_gate("exact=75%"), 3, 4).outcome, decide(parse_gate("exact=0.8"), 3, 4).outcome
        ('pass', 'fail')
    """
    rate = passed / decided if decided else None
    outcome: Outcome = "undecided" if rate is None else "pass" if rate >= gate.min_rate else "fail"
    return GateResult(gate.evaluator, gate.min_rate, rate, passed, decided, outcome)


_VERDICTS: dict[Outcome, str] = {"pass": "ok", "fail": "FAILED", "undecided": "FAILED", "missing": "ERROR"}


def gate_line(result: GateResult) -> str:
    """How the commands report a gate, evaluator names made `visible`.

    Example:
        >>> gate_line(decide(parse_gate("exact=0.8"), 3, 4))
        '--fail-under exact: pass rate 0.750 < 0.800 (3 of 4 passed): FAILED'
    """
    return f"--fail-under {visible(result.describe())}: {_VERDICTS[result.outcome]}"
