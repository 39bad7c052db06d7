"""The results a pytest session scored, and how they are reported.

Every scored result of a test (a traced call's, a ``tracesim_eval.score()``'s, an
``@agent_test``'s) becomes a `Row` in the test item's stash. The plugin copies the rows onto
the test's teardown report, so they also reach the controller under pytest-xdist, and builds
the session's summary from the reports: the terminal table, ``--tracesim-json``, JUnit
properties and the GitHub step summary all read the same rows.

A row is redacted when it is made (`tracesim.plugin_support`: the secrets a span would lose, a
row loses), and every output is written through `tracesim.plugin_support` again. What reads an output
is not steered by it: the terminal table shows control characters as `tracesim show` does
(`visible`), and each cell of the step summary is escaped for GitHub-flavoured Markdown and
HTML (`markdown_cell`), so a name cannot add a line, a heading, an image, a link or a tag.

Example:
    >>> from tracesim.evaluators import EvalResult
    >>> row = Row.from_result("t.py::test_a", "answer", EvalResult(name="levenshtein", score=0.79,
    ...                       passed=False, threshold=0.8))
    >>> row.verdict, describe(row)
    ('fail', "levenshtein on 'answer': failed, score 0.79, threshold 0.8: the score is below the threshold")
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tracesim import plugin_support
from tracesim.plugin_support import visible

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult

__all__ = [
    "AGENT_TEST_ATTRIBUTE",
    "ROWS",
    "Row",
    "Summary",
    "call_lines",
    "describe",
    "failures",
    "markdown_cell",
    "properties",
    "record",
]

AGENT_TEST_ATTRIBUTE = "__tracesim_agent_test__"
"""Where ``@agent_test`` keeps its arguments on a test; here so the plugin need not import it."""

VERDICTS = ("pass", "fail", "error", "skipped", "no_verdict")
# What a result says. The test's node id is pytest's own (it keys the test's outcome); each
# output redacts it where it writes it.
_TEXT_FIELDS = ("source", "evaluator", "label", "reason")

Redact = Callable[[str], str]
"""Text in, the same text with its secrets replaced out (`tracesim.plugin_support.redact_text` by default)."""


@dataclass(frozen=True)
class Row:
    """One result of one test, as the summary, the JSON file and JUnit properties show it."""

    test: str
    source: str
    evaluator: str
    score: float | None
    passed: bool | None
    threshold: float | None
    status: str
    label: str | None = None
    reason: str | None = None
    calls: Mapping[str, str] | None = None
    """For an evaluator that scores runs: the expected and actual tool calls and how they differ
    (``missing``, ``extra``...), one line each (`tracesim_pytest._calls.run_calls`)."""

    @classmethod
    def from_result(
        cls,
        test: str,
        source: str,
        result: EvalResult,
        *,
        redact: Redact | None = None,
        calls: Mapping[str, str] | None = None,
    ) -> Row:
        """The row of an `EvalResult` (its error message is the reason of an error), redacted.

        ``redact`` is the redaction of the test's configuration; outputs' is used without one.
        ``calls`` are the tool-call lines of a run evaluator's result.
        """
        reason = result.error if result.status == "error" else result.explanation
        if result.status == "error" and result.error_type and reason and result.error_type not in reason:
            reason = f"{result.error_type}: {reason}"
        row = cls(
            test=test,
            source=source,
            evaluator=result.name,
            score=result.score,
            passed=result.passed,
            threshold=result.threshold,
            status=result.status,
            label=result.label,
            reason=reason,
            calls=dict(calls) if calls else None,
        )
        return row.redacted(redact if redact is not None else plugin_support.redact_text)

    def redacted(self, redact: Redact) -> Row:
        """This row with ``redact`` applied to what the result says (names, label, reason)."""
        changes: dict[str, Any] = {
            name: redact(getattr(self, name)) for name in _TEXT_FIELDS if getattr(self, name) is not None
        }
        if self.calls:
            changes["calls"] = {label: redact(text) for label, text in self.calls.items()}
        return replace(self, **changes)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Row:
        """Read back what `to_json` wrote (rows travel on reports as plain JSON)."""
        fields: dict[str, Any] = {key: data.get(key) for key in cls.__dataclass_fields__}
        calls = fields.get("calls")
        fields["calls"] = (
            {str(k): str(v) for k, v in calls.items()} if isinstance(calls, Mapping) and calls else None
        )
        return cls(**fields)

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object (a non-finite score becomes null; ``calls`` only when there are some)."""
        data = asdict(self)
        if not self.calls:
            del data["calls"]
        if self.score is not None and not math.isfinite(self.score):
            data["score"] = None
        return data

    @property
    def verdict(self) -> str:
        """``pass``, ``fail``, ``error``, ``skipped`` or ``no verdict`` (a score without a threshold)."""
        if self.status in ("error", "skipped"):
            return self.status
        if self.passed is None:
            return "no_verdict"
        return "pass" if self.passed else "fail"


ROWS = pytest.StashKey[list[Row]]()
"""The rows recorded for a test item, in the order they were scored."""


def record(
    item: pytest.Item,
    source: str,
    results: Iterable[EvalResult],
    *,
    redact: Redact | None = None,
    calls: Mapping[str, str] | None = None,
) -> None:
    """Add results scored for ``item`` (``source`` names what was scored: a span, a call);
    ``calls`` are the tool-call lines of a run evaluator's result (`Row.calls`)."""
    rows = item.stash.setdefault(ROWS, [])
    rows.extend(
        Row.from_result(item.nodeid, source, result, redact=redact, calls=calls) for result in results
    )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def describe(row: Row) -> str:
    """One line naming the metric, what was scored, the verdict, score, threshold and reason;
    then, for a run evaluator's result that did not pass, a line per part of its tool calls
    (expected, actual, missing, extra...), indented.

    The names and the reason show control characters visibly (the line is printed by pytest).

    Example:
        >>> print(describe(Row("t", "agent", "tool_names", 0.0, False, 1.0, "ok",
        ...                    calls={"expected": "lookup({})", "actual": "none", "missing": "lookup ×1"})))
        tool_names on 'agent': failed, score 0, threshold 1: the score is below the threshold
            expected: lookup({})
            actual:   none
            missing:  lookup ×1
    """
    reason = row.reason
    if reason is None and row.verdict == "fail" and row.score is not None and row.threshold is not None:
        side = "below" if row.score < row.threshold else "above" if row.score > row.threshold else "at"
        reason = f"the score is {side} the threshold"
    if reason is None and row.verdict == "no_verdict":
        reason = "the evaluator has no threshold; give it threshold=... to get a verdict"
    verdict = {"pass": "passed", "fail": "failed"}.get(row.verdict, row.verdict)
    text = f"{visible(row.evaluator)} on {visible(repr(row.source))}: {verdict}, score {_number(row.score)}"
    text += f", threshold {_number(row.threshold)}"
    text = f"{text}: {visible(reason)}" if reason else text
    return text + "".join(f"\n    {line}" for line in call_lines(row))


def call_lines(row: Row) -> list[str]:
    """The tool-call lines of a row that did not pass (none for one that did), labels aligned."""
    if not row.calls or row.verdict == "pass":
        return []
    width = max(len(label) for label in row.calls) + 1
    return [f"{(label + ':').ljust(width)} {visible(text)}" for label, text in row.calls.items()]


def failures(rows: Iterable[Row], *, strict: bool) -> list[Row]:
    """Rows that failed or errored; ``strict`` also counts skipped rows and rows without a verdict."""
    bad = {"fail", "error", "skipped", "no_verdict"} if strict else {"fail", "error"}
    return [row for row in rows if row.verdict in bad]


def properties(rows: Iterable[Row]) -> list[tuple[str, object]]:
    """JUnit ``<property>`` pairs: ``tracesim.<evaluator>.score``, ``.passed``, ``.threshold``, ``.status``.

    Example:
        >>> properties([Row("t", "s", "rouge", 0.5, True, 0.5, "ok")])
        [('tracesim.rouge.score', 0.5), ('tracesim.rouge.passed', 'true'), ('tracesim.rouge.threshold', 0.5)]
    """
    pairs: list[tuple[str, object]] = []
    for row in rows:
        prefix = f"tracesim.{row.evaluator}"
        if row.score is not None:
            pairs.append((f"{prefix}.score", row.score))
        if row.passed is not None:
            pairs.append((f"{prefix}.passed", "true" if row.passed else "false"))
        if row.threshold is not None:
            pairs.append((f"{prefix}.threshold", row.threshold))
        if row.status != "ok":
            pairs.append((f"{prefix}.status", row.status))
    return pairs


@dataclass
class Summary:
    """The rows of a whole session, with the outcome of each test that has rows."""

    rows: list[Row] = field(default_factory=list)
    # Only tests that did not pass are remembered, so a session that scores nothing keeps nothing.
    not_passed: dict[str, str] = field(default_factory=dict)

    def add_report(self, report: pytest.TestReport) -> None:
        """Take the outcome of a report, and its rows when it carries some."""
        if report.failed:
            self.not_passed[report.nodeid] = "failed" if report.when == "call" else "error"
        elif report.skipped and report.nodeid not in self.not_passed:
            self.not_passed[report.nodeid] = "skipped"
        data = getattr(report, "tracesim_results", None)
        if isinstance(data, list):
            self.rows.extend(Row.from_json(item) for item in data if isinstance(item, Mapping))

    def counts(self) -> dict[str, int]:
        """How many results got each verdict, and how many tests scored them."""
        counts = dict.fromkeys(VERDICTS, 0)
        for row in self.rows:
            counts[row.verdict] += 1
        return {"tests": len({row.test for row in self.rows}), "results": len(self.rows), **counts}

    def headline(self) -> str:
        """``12 results in 5 tests: 9 pass, 2 fail, 1 error``."""
        counts = self.counts()
        parts = [f"{counts[v]} {v}" for v in VERDICTS if counts[v]]
        return f"{counts['results']} results in {counts['tests']} tests: {', '.join(parts)}"

    def table(self) -> list[list[str]]:
        """Header and one line per row: test, source, evaluator, score, verdict, threshold.

        The node id is redacted here, before a cell is escaped or made visible (after that, a
        secret no longer reads as one).
        """
        lines = [["test", "source", "evaluator", "score", "verdict", "threshold"]]
        for row in self.rows:
            score, threshold = _number(row.score), _number(row.threshold)
            test = plugin_support.redact_text(row.test)
            lines.append([test, row.source, row.evaluator, score, row.verdict, threshold])
        return lines

    def terminal_lines(self) -> list[str]:
        """The table laid out in aligned columns, then the headline; control characters shown visibly."""
        table = [[visible(cell) for cell in line] for line in self.table()]
        widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
        text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in table]
        return [*(line.rstrip() for line in text), *self._call_lines(), "", self.headline()]

    def _call_lines(self) -> list[str]:
        """The tool calls of the run evaluators' results that did not pass, under their test."""
        lines = []
        for row in self.rows:
            shown = call_lines(row)
            if shown:
                test = visible(plugin_support.redact_text(row.test))
                scored = f"{visible(row.evaluator)} on {visible(repr(row.source))}"
                lines.append(f"{test}: {scored}, {row.verdict}:")
                lines.extend(f"    {line}" for line in shown)
        return ["", "tool calls of the failed run evaluators:", *lines] if lines else []

    def markdown(self) -> str:
        """A GitHub-flavoured Markdown section with the same table, then the tool calls of the
        failed run evaluators as a list (every piece escaped as a table cell is)."""
        table = self.table()

        def cells(line: list[str]) -> str:
            return "| " + " | ".join(markdown_cell(cell) for cell in line) + " |"

        body = [cells(line) for line in table]
        body.insert(1, "|" + "---|" * len(table[0]))
        calls = []
        for row in self.rows:
            if not call_lines(row) or not row.calls:
                continue
            test = plugin_support.redact_text(row.test)
            scored = f"{test}: {row.evaluator} on {row.source!r}, {row.verdict}"
            calls.append(f"- {markdown_cell(scored)}")
            calls.extend(f"  - {markdown_cell(k)}: {markdown_cell(v)}" for k, v in row.calls.items())
        if calls:
            calls = ["", "Tool calls of the failed run evaluators:", "", *calls]
        return "\n".join(["### tracesim evaluations", "", self.headline(), "", *body, *calls, ""]) + "\n"

    def to_json(self) -> dict[str, Any]:
        """Every test with its outcome and its rows, and the counts."""
        tests: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows:
            data = row.to_json()
            tests.setdefault(data.pop("test"), []).append(data)
        listing = [
            {"nodeid": nodeid, "outcome": self.not_passed.get(nodeid, "passed"), "results": results}
            for nodeid, results in tests.items()
        ]
        return {"summary": self.counts(), "tests": listing}

    def write_json(self, path: Path) -> None:
        """Write `to_json` to ``path`` (redacted, whole), creating its folder."""
        path.parent.mkdir(parents=True, exist_ok=True)
        plugin_support.write_json(path, self.to_json(), indent=2)

    def append_markdown(self, path: Path) -> None:
        """Append `markdown` to ``path`` (GitHub Actions' ``$GITHUB_STEP_SUMMARY`` file), redacted."""
        # One write: redaction sees the whole section.
        with plugin_support.open_text(path, "a") as out:
            out.write(self.markdown())


# ASCII punctuation is what GitHub-flavoured Markdown gives a meaning to (emphasis, code, links,
# images, tables, autolinks, math); a backslash makes each a plain character. The characters
# of HTML become entities, which stay text for a reader that takes the file as HTML too.
_MARKDOWN = {ord(c): "\\" + c for c in string.punctuation}
_MARKDOWN.update(
    {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;", ord('"'): "&quot;", ord("'"): "&#39;"}
)


def markdown_cell(text: str) -> str:
    """``text`` as one cell of a GitHub-flavoured Markdown table: shown as written, never obeyed.

    Line breaks (and runs of white space) fold into one space, control characters are shown
    as `tracesim show` shows them, ``<``, ``>``, ``&`` and quotes become HTML entities and every
    other ASCII punctuation character is backslash-escaped: ``\\|`` stays in its cell, and no
    heading, link, image, emphasis, autolink or tag can start.

    Example:
        >>> print(markdown_cell("# a|b\\n![x](http://e.example/i.png) <img src=x>"))
        \\# a\\|b \\!\\[x\\]\\(http\\:\\/\\/e\\.example\\/i\\.png\\) &lt;img src\\=x&gt;
    """
    return visible(" ".join(text.split())).translate(_MARKDOWN)
