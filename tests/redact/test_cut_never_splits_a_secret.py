"""What the run writers cut is cut whole: a secret in a tool call's arguments near the cut is
either kept (and redacted whole later) or left out, never kept in part.

Three writers show tool calls as cut text: the batch and ``tracesim eval`` summary
(`call_differences`), the pytest plugin's failure lines (`run_calls`), and the experiment
report's kept run (`run_data`). Each is tried with the secret at every position around its cut.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from secret_kinds import SECRETS

from tracesim import _outputs
from tracesim.batch._summary import call_differences
from tracesim.evaluators import EvalResult
from tracesim.experiments._case_results import CaseResult
from tracesim.experiments._run_steps import run_data
from tracesim.runs import Run, Step, ToolCall

KINDS = ("openai", "github_pat", "aws_temporary", "email", "url_password")


def _summary(call: dict[str, object]) -> str:
    result = EvalResult(name="tool_correctness", details={"missing": [call]})
    return _outputs.text(call_differences(result) or "")


def _pytest_lines(call: dict[str, object]) -> str:
    from tracesim_pytest import _report as reporting
    from tracesim_pytest._calls import run_calls

    result = EvalResult(name="trajectory_match", score=0.0, passed=False, details={"extra": [call]})
    row = reporting.Row.from_result("t", "s", result, calls=run_calls([], [call], result))  # redacted
    return " ".join((row.calls or {}).values())


def _experiment_row(call: dict[str, object]) -> str:
    tool_call = ToolCall(str(call["name"]), call["arguments"])
    data = run_data(Run(steps=(Step(kind="tool", name="lookup", tool_call=tool_call),)), ["trajectory_match"])
    row = CaseResult(
        case_id="c", repeat=0, input="i", expected=None, output="o", scores={}, duration_s=0.1, run=data
    )
    return str(row.redacted().run)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("writer", "limit"),
    [(_summary, 300), (_pytest_lines, 500), (_experiment_row, 300)],
    ids=["summary", "pytest", "experiment"],
)
def test_a_secret_at_the_cut_is_never_kept_in_part(
    writer: Callable[[dict[str, object]], str], limit: int, kind: str
) -> None:
    secret, fragment = SECRETS[kind]
    prefix = fragment[:8]  # the start of its distinctive part: what a cut through it would leave
    for pad in range(limit - 80, limit + 5):
        call = {"name": "lookup", "arguments": {"q": "x" * pad, "note": secret}}
        text = writer(call)
        assert prefix not in text, f"{kind} at pad {pad}: {text[-60:]!r}"
