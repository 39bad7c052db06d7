"""A row redacted alone keeps every evaluator's result, and redacts every field (issue 23 review).

`CaseResult.redacted` without names from its report redacted each evaluator's name on its own:
two names that redact alike (two keys) became one key of ``scores`` and one result was lost.
"""

from __future__ import annotations

from secret_kinds import KINDS, leaked

from tracesim.evaluators import Evaluator, Measurement
from tracesim.experiments import Case, Dataset

FIRST, SECOND = "sk-proj-Abc123Def456Ghi789Jkl0", "sk-proj-Zyx987Wvu654Tsr321Qpo0"


class Echo(Evaluator):
    """Scores ``value``; echoes what it saw in its label, explanation and details."""

    type_name = "echo_for_row_names"

    def __init__(self, value: float, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.value = value

    def measure(self, output: object, expected: object, *, input: object = None) -> Measurement:
        seen = {"output": output, str(output): "as a key"}
        return Measurement(self.value, seen, explanation=f"saw {output}", label=f"label {output}")


def test_a_row_redacted_alone_keeps_both_results_of_names_that_redact_alike() -> None:
    evaluators = [Echo(0.25, name=FIRST), Echo(0.75, name=SECOND)]
    report = Dataset([Case("q", "a", id="q1")]).evaluate(lambda q: "out", evaluators=evaluators)
    row = report.row("q1").redacted()
    assert {name: result.score for name, result in row.scores.items()} == {
        "[REDACTED:api_key]": 0.25,
        "[REDACTED:api_key]-2": 0.75,
    }
    assert [result.name for result in row.scores.values()] == list(row.scores)


def test_a_row_redacted_alone_holds_no_secret_in_any_field() -> None:
    secrets = " ".join(secret for secret, _ in KINDS.values())

    def task(question: str) -> str:
        return f"out {secrets}"

    case = Case(f"in {secrets}", f"exp {secrets}", metadata={secrets: secrets}, id=f"id {secrets}")
    report = Dataset([case]).evaluate(task, evaluators=[Echo(0.5, name="echo")])
    row = report.rows[0]
    assert set(leaked(str(row.to_dict()))) == set(KINDS)
    redacted = row.redacted()
    assert leaked(str(redacted.to_dict())) == []
    assert redacted.scores["echo"].details["output"].startswith("out [REDACTED:")
