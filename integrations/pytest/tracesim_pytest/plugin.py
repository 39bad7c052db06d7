"""pytest plugin: score agent calls with tracesim's evaluators and report the results.

Installed with ``pip install 'tracesim[pytest]'`` (the ``tracesim-pytest`` distribution), loaded
by pytest (``pytest11`` entry point). A test that does not
ask for it pays nothing: no configuration, no spans, no table.

- The ``tracesim_eval`` fixture sends the test's spans to memory with inline scoring (see
  `tracesim.testing.capture_spans`), so a ``@tracesim.trace(evaluators=...)`` call is scored
  before it returns; ``tracesim_eval.score(output, expected, evaluators=[...])`` scores a
  value directly and ``tracesim_eval.assert_passes(...)`` also asserts on it. The output may be
  an agent's run (a ``tracesim.record_run`` block's, or a list of tool calls) and the expected
  value a `tracesim.Expected` or a list of tool calls: evaluators that score runs compare the
  calls, the others the run's output, and a failure lists the expected and actual calls, the
  missing and the extra ones.
- ``@pytest.mark.tracesim(**settings)`` gives the test that fixture (``settings`` go to
  `tracesim.configure`, e.g. rules that attach evaluators) and fails the test when a result
  recorded during it fails or errors.
- Every result is reported: a table at the end of the session (``--tracesim-no-summary``
  turns it off), ``--tracesim-json PATH``, JUnit ``<properties>`` (``tracesim.<evaluator>.score``,
  ``.passed``, ``.threshold``) and, when ``$GITHUB_STEP_SUMMARY`` is set, a Markdown table.
  All of them, and the failure messages, are redacted as spans are (`tracesim.plugin_support`), and
  show control characters and markup as text.

Example:
    >>> from tracesim.evaluators import EvalResult
    >>> assert_passes(EvalResult(name="levenshtein", score=0.92, passed=True, threshold=0.8))
    >>> assert_passes(EvalResult(name="levenshtein", score=0.79, passed=False, threshold=0.8))
    Traceback (most recent call last):
    ...
    AssertionError: 1 of 1 tracesim results did not pass:
      levenshtein on 'result': failed, score 0.79, threshold 0.8: the score is below the threshold
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tracesim import plugin_support
from tracesim.plugin_support import EXPECTED_TOOL_CALLS, visible
from tracesim.runs import NOT_GIVEN, Expected, Run
from tracesim_pytest import _report as reporting
from tracesim_pytest._calls import differences, listed_calls, run_calls, scores_runs

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.util.types import Attributes

    from tracesim.evaluators import EvalResult
    from tracesim.testing import CapturedSpans

__all__ = ["TracesimEval", "assert_passes"]

MARKER = "tracesim"
FIXTURE = "tracesim_eval"
_RECORDER = pytest.StashKey["TracesimEval"]()
_SESSION_PLUGIN = "tracesim-session-report"


def _raise_failures(rows: Sequence[reporting.Row], *, strict: bool, why: str = "") -> None:
    __tracebackhide__ = True  # pytest shows the message, not the plugin's frames
    bad = reporting.failures(rows, strict=strict)
    if bad:
        lines = "\n".join(f"  {reporting.describe(row)}" for row in bad)
        message = f"{len(bad)} of {len(rows)} tracesim results did not pass{why}:\n{lines}"
        raise AssertionError(plugin_support.redact_text(message))


def assert_passes(results: EvalResult | Iterable[EvalResult], *, source: str = "result") -> None:
    """Fail unless every result passed; the message names metric, score, threshold and reason.

    A skipped result (no expected output) and a result without a threshold fail too: they
    passed nothing. ``source`` names what was scored in the message.

    Example:
        >>> from tracesim.evaluators import Levenshtein
        >>> assert_passes(Levenshtein(threshold=0.8).evaluate("Hello World!", "Hello World"))
    """
    __tracebackhide__ = True
    from tracesim.evaluators import EvalResult

    items = [results] if isinstance(results, EvalResult) else list(results)
    rows = [reporting.Row.from_result("", source, r, calls=differences(r.details) or None) for r in items]
    _raise_failures(rows, strict=True)


class TracesimEval:
    """What the ``tracesim_eval`` fixture gives a test: direct scoring and the test's results.

    In a test: ``def test_answer(tracesim_eval): tracesim_eval.assert_passes(answer(q),
    expected, evaluators=["levenshtein:threshold=0.8"])``. The fixture builds it on a
    `tracesim.testing.capture_spans` block, as here:

    Example:
        >>> from tracesim.testing import capture_spans
        >>> with capture_spans() as captured:
        ...     check = TracesimEval(captured)
        ...     results = check.score("Hello World!", "Hello World", evaluators=["levenshtein"])
        >>> results[0].score, [r.name for r in check.results]
        (0.92, ['levenshtein'])
    """

    def __init__(self, captured: CapturedSpans) -> None:
        self._captured = captured
        self._scored: list[tuple[str, EvalResult]] = []
        self._calls: dict[int, dict[str, str]] = {}  # id of a scored result -> its tool-call lines
        # The test's redaction (its marker may set one): reports are made after the capture ends.
        self._redaction = plugin_support.redaction()

    def _redact(self, text: str) -> str:
        """``text`` with the secrets the test's spans would lose replaced (what its reports show)."""
        return self._redaction(text)

    @property
    def spans(self) -> CapturedSpans:
        """The spans finished in this test so far (`tracesim.testing.CapturedSpans`)."""
        return self._captured

    @property
    def results(self) -> list[EvalResult]:
        """Every result so far: those of `score` calls, then those on the test's spans."""
        return [result for _, result in self.scored()]

    def scored(self) -> list[tuple[str, EvalResult]]:
        """``(source, result)`` pairs: ``source`` is the span name, or the ``name`` given to `score`."""
        return [(source, result) for source, result, _ in self._entries()]

    def _entries(self) -> list[tuple[str, EvalResult, dict[str, str] | None]]:
        """`scored`, each result with its tool-call lines (for a run evaluator's result)."""
        own = [(source, result, self._calls.get(id(result))) for source, result in self._scored]
        return [*own, *_span_results(self._captured.otel_spans)]

    def _rows(self, test: str) -> list[reporting.Row]:
        return [
            reporting.Row.from_result(test, source, result, redact=self._redact, calls=calls)
            for source, result, calls in self._entries()
        ]

    def score(
        self,
        output: Any,
        expected: Any = None,
        *,
        evaluators: Any,
        input: Any = None,
        name: str = "score",
    ) -> list[EvalResult]:
        """Score ``output`` against ``expected`` now and record the results for this test.

        ``evaluators`` takes what ``@tracesim.trace`` takes: evaluator objects, config
        mappings (``{"type": "levenshtein", "threshold": 0.8}``) or spec strings
        (``"rouge:rouge_type=rouge1"``); a bad one raises `tracesim.ConfigError`.

        An agent's run scores as one: ``output`` may be a `tracesim.runs.Run` (or the
        ``tracesim.record_run`` block that holds it) or a list of tool calls, ``expected`` a
        `tracesim.Expected` or a list of tool calls. Evaluators that score runs
        (``trajectory_match``, ``tool_correctness``...) get them as they are (any other
        expected value is the expected output: they skip, no tool calls being expected); the
        others get the run's output and the expected output (and skip without one).

        The results come back redacted as the test's reports show them (name, label,
        explanation, error and details): pytest prints a result whose assertion fails, on the
        terminal and into the JUnit XML, and a secret the evaluator saw must not be there.
        """
        from tracesim import RecordedRun

        built = plugin_support.build_evaluators(evaluators, FIXTURE)
        run = output.run if isinstance(output, RecordedRun) else output
        results = []
        for evaluator in built:
            if scores_runs(evaluator):
                wanted_run = _expected_run(expected)
                result = self._redacted(evaluator.evaluate(run, wanted_run, input=input))
                self._calls[id(result)] = run_calls(wanted_run, run, result)
            else:
                value = run.output if isinstance(run, Run) else run
                wanted = expected.output if isinstance(expected, Expected) else expected
                given = None if wanted is NOT_GIVEN else wanted
                result = self._redacted(evaluator.evaluate(value, given, input=input))
            results.append(result)
        self._scored.extend((name, result) for result in results)
        return results

    def _redacted(self, result: EvalResult) -> EvalResult:
        """``result`` with its texts redacted by the test's redaction, its details made JSON
        data and redacted (during the test, the running redaction is the test's)."""
        update: dict[str, Any] = {
            key: self._redact(value)
            for key in ("name", "label", "explanation", "error", "error_type")
            if isinstance(value := getattr(result, key), str)
        }
        update["details"] = plugin_support.redact_data(plugin_support.to_jsonable(result.details))
        return result.model_copy(update=update)

    def assert_passes(
        self,
        output: Any,
        expected: Any = None,
        *,
        evaluators: Any,
        input: Any = None,
        name: str = "score",
    ) -> list[EvalResult]:
        """`score`, then fail unless every result passed (see `assert_passes`)."""
        __tracebackhide__ = True
        results = self.score(output, expected, evaluators=evaluators, input=input, name=name)
        rows = [
            reporting.Row.from_result("", name, r, redact=self._redact, calls=self._calls.get(id(r)))
            for r in results
        ]
        _raise_failures(rows, strict=True)
        return results


def _expected_run(expected: Any) -> Any:
    """What a run evaluator is given of ``expected``: a list of tool calls or an `Expected` as
    they are, a mapping with ``output``/``tool_calls`` as an `Expected`, any other value as the
    expected output (so the evaluator skips, saying no tool calls were expected).

    Example:
        >>> _expected_run("12 C")
        Expected(output='12 C', tool_calls=None)
        >>> _expected_run([{"name": "lookup"}])
        [{'name': 'lookup'}]
    """
    if expected is None or isinstance(expected, (Expected, list, tuple)):
        return expected
    if isinstance(expected, Mapping) and set(expected) <= {"output", "tool_calls"} and expected:
        return Expected.of(expected)
    return Expected(output=expected)


def _span_results(spans: Sequence[ReadableSpan]) -> Iterator[tuple[str, EvalResult, dict[str, str] | None]]:
    """The evaluation results written on spans, each with the name of the span it scored and,
    when its details name missing or extra tool calls, its tool-call lines (the expected calls
    from the span's ``tracesim.expected.tool_calls``)."""
    sc = plugin_support  # the names tracesim writes results with
    by_id = {span.context.span_id: span for span in spans if span.context is not None}
    for span in spans:
        target = span
        attributes = span.attributes or {}
        if attributes.get(sc.SPAN_KIND) == "EVALUATOR" and len(span.links) == 1:
            target = by_id.get(span.links[0].context.span_id, span)  # a carrier: name its target
        for event in span.events:
            if event.name == sc.EVALUATION_EVENT:
                result = _decode(event.attributes)
                found = differences(result.details)
                calls = None
                if found:
                    wanted = listed_calls((target.attributes or {}).get(EXPECTED_TOOL_CALLS))
                    calls = {**({"expected": wanted} if wanted is not None else {}), **found}
                yield target.name, result, calls


def _decode(attributes: Attributes) -> EvalResult:
    from tracesim.evaluators import EvalResult

    sc = plugin_support

    attrs = dict(attributes or {})

    def number(key: str) -> float | None:
        value = attrs.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def text(key: str) -> str | None:
        value = attrs.get(key)
        return value if isinstance(value, str) else None

    status = text(sc.EVALUATION_STATUS)
    status = status if status in ("ok", "skipped", "error") else "error" if sc.ERROR_TYPE in attrs else "ok"
    passed = attrs.get(sc.EVALUATION_PASSED)
    explanation = text(sc.EVALUATION_EXPLANATION)
    try:
        details = json.loads(text(sc.EVALUATION_DETAILS) or "{}")
    except ValueError:  # cut to max_value_chars: keep the result, drop the details
        details = {}
    return EvalResult(
        name=text(sc.EVALUATION_NAME) or "unnamed",
        score=number(sc.EVALUATION_SCORE_VALUE),
        passed=passed if isinstance(passed, bool) else None,
        label=text(sc.EVALUATION_SCORE_LABEL),
        threshold=number(sc.EVALUATION_THRESHOLD),
        explanation=None if status == "error" else explanation,
        details=details if isinstance(details, dict) else {},
        status=status,  # type: ignore[arg-type]  # checked against the three statuses above
        error=explanation if status == "error" else None,
        error_type=text(sc.ERROR_TYPE),
        duration_s=number(sc.EVALUATION_DURATION),
    )


# -- the fixture and the marker -----------------------------------------------------------------


@pytest.fixture
def tracesim_eval(request: pytest.FixtureRequest) -> Iterator[TracesimEval]:
    """Capture this test's spans with inline scoring; score values; collect the results."""
    from tracesim.testing import capture_spans

    marker = request.node.get_closest_marker(MARKER)
    if marker is not None and marker.args:
        raise TypeError("@pytest.mark.tracesim takes tracesim.configure settings as keyword arguments only")
    with capture_spans(**(marker.kwargs if marker is not None else {})) as captured:
        recorder = TracesimEval(captured)
        request.node.stash[_RECORDER] = recorder
        yield recorder
    # After the capture is drained, so that late results are in too.
    for source, result, calls in recorder._entries():
        reporting.record(request.node, source, [result], redact=recorder._redact, calls=calls)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tracesim", "tracesim evaluations")
    group.addoption(
        "--tracesim-json",
        metavar="PATH",
        default=None,
        help="write every tracesim evaluation result of the session to PATH as JSON",
    )
    group.addoption(
        "--tracesim-no-summary",
        action="store_true",
        default=False,
        help="do not print the table of tracesim evaluation results at the end of the session",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "tracesim(**settings): capture the test's spans with inline scoring (settings go to "
        "tracesim.configure) and fail the test when a scored result fails",
    )
    config.pluginmanager.register(_SessionReport(config), _SESSION_PLUGIN)


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.pluginmanager.get_plugin(_SESSION_PLUGIN)
    if plugin is not None:
        config.pluginmanager.unregister(plugin)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        if item.get_closest_marker(MARKER) is not None and FIXTURE not in item.fixturenames:
            # Last, so that settings are resolved after autouse fixtures set up the environment and cwd.
            item.fixturenames.append(FIXTURE)
        spec = getattr(item.obj, reporting.AGENT_TEST_ATTRIBUTE, None)
        if spec is not None:
            item.extra_keyword_matches.update(
                getattr(spec, "tags", ())
            )  # AgentTest's `--tag core` is `-k core`


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    __tracebackhide__ = True
    yield  # a test that raised stays failed with its own error
    recorder = item.stash.get(_RECORDER, None)
    if recorder is not None and item.get_closest_marker(MARKER) is not None:
        rows = recorder._rows(item.nodeid)
        _raise_failures(rows, strict=False, why=" (@pytest.mark.tracesim fails a test whose results fail)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    rows = item.stash.get(reporting.ROWS, None) if call.when == "teardown" else None
    if rows:
        # --junitxml writes them
        item.user_properties.extend(plugin_support.redact_data(reporting.properties(rows)))
    report = yield
    if rows:
        # On the report, the rows reach the summary, also across pytest-xdist workers.
        # They are redacted already (`Row.from_result`), the node id apart, as on the report itself.
        report.tracesim_results = [row.to_json() for row in rows]  # type: ignore[attr-defined]
    return report


class _SessionReport:
    """The session's rows, gathered from the test reports, and the reports made of them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.summary = reporting.Summary()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.summary.add_report(report)

    def pytest_sessionfinish(self) -> None:
        if hasattr(self.config, "workerinput"):  # a pytest-xdist worker: the controller reports
            return
        path = self.config.getoption("tracesim_json")
        if path:
            self.summary.write_json(Path(self.config.invocation_params.dir, path))
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary and self.summary.rows:
            self.summary.append_markdown(Path(step_summary))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.summary.rows or self.config.getoption("tracesim_no_summary"):
            return
        terminalreporter.write_sep("=", "tracesim evaluations")
        for line in self.summary.terminal_lines():
            terminalreporter.write_line(plugin_support.redact_text(line))
        path = self.config.getoption("tracesim_json")
        if path:
            written = f"tracesim results written to {visible(path)}"
            terminalreporter.write_line(plugin_support.redact_text(written))
