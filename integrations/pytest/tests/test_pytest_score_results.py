"""What ``tracesim_eval.score()`` returns is redacted as the test's reports are.

A test reads the results it scored (``r = tracesim_eval.score(...)[0]; assert r.passed``); when
the assertion fails, pytest prints the result's repr on the terminal and into the JUnit XML.
The plugin's own outputs were redacted, but the results it handed back held the raw secret
(an evaluator raising ``PermissionError("401 ... sk-proj-...")``), so plain ``pytest
--junitxml``, without any tracesim option, wrote it out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from secret_kinds import KINDS, leaked
from tracesim_pytest.plugin import TracesimEval

from tracesim.evaluators import Evaluator, Measurement
from tracesim.testing import capture_spans

pytest_plugins = ["pytester"]

PLUGIN = "tracesim_pytest.plugin"

PLANTED = '''
from tracesim.evaluators import Evaluator, Measurement

VALUES = {values!r}


class Raising(Evaluator):
    """Errors, as a judge answering 401 with the key echoed does."""

    type_name = "raising"

    def measure(self, output, expected, *, input=None):
        raise PermissionError(f"401 Incorrect API key provided: {{output}}")


class Telling(Evaluator):
    """Fails, with what it compared in its explanation, label and details."""

    type_name = "telling"

    def measure(self, output, expected, *, input=None):
        return Measurement(0.25, {{"seen": output, output: "as a key"}}, explanation=f"compared {{output}}",
                           label=f"label {{output}}")
'''

# The test's own assertions, as a user writes them: pytest prints the result when they fail.
TESTS = """
import pytest
from planted import VALUES, Raising, Telling

KINDS = sorted(VALUES)


@pytest.mark.parametrize("kind", KINDS)
def test_raising(tracesim_eval, kind):
    r = tracesim_eval.score(f"out {VALUES[kind]}", "expected", evaluators=[Raising()])[0]
    assert r.passed


@pytest.mark.parametrize("kind", KINDS)
def test_telling(tracesim_eval, kind):
    [r] = tracesim_eval.score(f"out {VALUES[kind]}", "expected", evaluators=[Telling(threshold=0.5)])
    assert r.passed


def test_named(tracesim_eval):
    # An evaluator's name can be an API key (names take letters, digits, '_', '.', '-').
    [r] = tracesim_eval.assert_passes("a", "a", evaluators=[Telling(name=VALUES["openai"], threshold=0.1)])
    assert r.name == "n"
"""


def test_a_failing_assertion_on_a_scored_result_prints_no_secret(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    values = {kind: secret for kind, (secret, _) in KINDS.items()}
    pytester.makepyfile(planted=PLANTED.format(values=values), test_user=TESTS)
    # plain pytest: no tracesim option, only the plugin loaded (as its entry point does)
    result = pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", "--junitxml", "junit.xml")
    result.assert_outcomes(failed=2 * len(KINDS) + 1)
    terminal = result.stdout.str() + result.stderr.str()
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert leaked(terminal) == []
    assert leaked(junit) == []
    # the results are printed, redacted rather than dropped
    assert "where None = EvalResult(" in terminal
    assert "provided: out [REDACTED:api_key]'" in terminal  # pytest cuts the middle of a repr
    assert "label out [REDACTED:email]" in terminal
    assert junit.count("[REDACTED:api_key]") >= 2


class Telling(Evaluator):
    type_name = "telling"

    def measure(self, output: object, expected: object, *, input: object = None) -> Measurement:
        return Measurement(0.25, {"seen": output, str(output): [output]}, explanation=f"compared {output}")


class Raising(Evaluator):
    type_name = "raising"

    def measure(self, output: object, expected: object, *, input: object = None) -> Measurement:
        raise PermissionError(f"401 Incorrect API key provided: {output}")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_score_returns_results_without_the_secret_in_any_field(kind: str) -> None:
    secret, _ = KINDS[kind]
    with capture_spans() as captured:
        check = TracesimEval(captured)
        results = check.score(
            f"out {secret}",
            "expected",
            evaluators=[Telling(name=KINDS["openai"][0], threshold=0.5), Raising()],
        )
    for result in [*results, *check.results]:
        assert leaked(repr(result)) == [], result
        assert leaked(result.model_dump_json()) == []
    told, raised = results
    assert (told.name, told.score, told.passed, told.status) == ("[REDACTED:api_key]", 0.25, False, "ok")
    assert told.explanation is not None
    assert told.explanation.startswith("compared out ")
    assert "[REDACTED:" in told.explanation
    assert len(told.details) == 2
    assert "seen" in told.details
    assert (raised.status, raised.error_type) == ("error", "PermissionError")
    assert raised.error is not None
    assert raised.error.startswith("PermissionError: 401 Incorrect API key provided: out ")
    assert "[REDACTED:" in raised.error


def test_the_tests_own_redact_hook_applies_to_the_returned_results(tmp_path: Path) -> None:
    def hide(value: str, attribute: str) -> str:
        return value.replace("orchid-codename", "[hidden]")

    with capture_spans(redact=hide) as captured:
        check = TracesimEval(captured)
        [result] = check.score("out orchid-codename", "b", evaluators=[Telling(threshold=0.5)])
    assert result.explanation == "compared out [hidden]"
    assert "orchid-codename" not in repr(result)
