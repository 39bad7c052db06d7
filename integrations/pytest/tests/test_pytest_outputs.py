"""What the pytest plugin writes and prints holds no secret and cannot drive its reader.

Real pytest sessions (``pytester.runpytest_subprocess``, plugin autoloading off) score values
that carry a secret of every kind, markdown and HTML, and terminal control sequences in every
field a result has: what was scored, what it was compared with, the explanation, the label,
the evaluator's, result's and span's names, and error messages. Then every output of the
session is read back: the ``--tracesim-json`` file, the JUnit XML (properties and failure
messages), the ``$GITHUB_STEP_SUMMARY`` file and the terminal.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import RAW_CONTROLS, TERMINAL_PAYLOADS
from markdown_it import MarkdownIt

from tracesim.plugin_support import visible

pytest_plugins = ["pytester"]

PLUGIN = "tracesim_pytest.plugin"

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3+XQ0qfT8wLVkGwvD3f\n"
    "Zq9PmTbXwA2vL0s8YkQ1f2JcR4mUo6hNbVtI7eWyGzKx\n-----END RSA PRIVATE KEY-----"
)
# One secret of each kind, with a fragment that must appear in no output (its distinctive body).
SECRETS: dict[str, tuple[str, str]] = {
    "openai": ("sk-proj-Abc123Def456Ghi789Jkl012Mno345", "Abc123Def456Ghi789"),
    "bearer": (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    "email": ("marie.curie@sorbonne.fr", "marie.curie@sorbonne"),
    "url_password": ("postgres://u:hunter2pass@host/db", "hunter2pass"),
    "pem": (PEM, "MIIEowIBAAKCAQEAq7BF"),
}

# The values live in a module the tests import, so that pytest's tracebacks (which print the
# test's source) show names, never the values: what is searched for is what tracesim wrote.
PLANTED = '''
import tracesim
from tracesim.evaluators import Evaluator, Measurement

VALUES = {values!r}


class Leaky(Evaluator):
    """Fails, with what it compared in its explanation and label."""

    type_name = "leaky"

    def measure(self, output, expected, *, input=None):
        return Measurement(0.25, {{"seen": output}}, explanation=f"compared {{output}} with {{expected}}",
                           label=f"label {{output}}")


class Raising(Evaluator):
    """Errors, as a judge answering 401 with the key echoed does."""

    type_name = "raising"

    def measure(self, output, expected, *, input=None):
        raise PermissionError(f"401 Incorrect API key provided: {{output}}")


def traced_call(value):
    """A traced call in a span named by ``value``, scored (failing) and annotated with ``value``."""
    with tracesim.span(f"span {{value}}") as span:
        span.set_output(f"out {{value}}")
    tracesim.score(span, name=f"result {{value}}", value=0.1, passed=False, label=f"label {{value}}",
                   explanation=f"because {{value}}")

    @tracesim.trace(name=f"call {{value}}", evaluators=[Leaky(threshold=0.5), Raising()],
                    expected=f"expected {{value}}")
    def call():
        return f"output {{value}}"

    call()
'''

TESTS = """
import pytest
import tracesim
from planted import VALUES, Leaky, Raising, traced_call
from tracesim_pytest import agent_test

KINDS = sorted(VALUES)


@pytest.mark.parametrize("kind", KINDS)
def test_score(tracesim_eval, kind):
    value = VALUES[kind]
    tracesim_eval.score(f"out {value}", f"expected {value}", evaluators=[Leaky(threshold=0.5), Raising()],
                        name=f"source {value}")
    tracesim_eval.assert_passes(f"out {value}", f"expected {value}", name=f"source {value}",
                                evaluators=[Leaky(name="asserted", threshold=0.5), Raising(name="erring")])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.tracesim
def test_marker(kind):
    traced_call(VALUES[kind])


@pytest.mark.parametrize("kind", KINDS)
@agent_test(criteria=["similarity"])
def test_agent(kind):
    value = VALUES[kind]
    return {"input": f"in {value}", "actual": f"actual {value}", "expected": f"expected {value}",
            "similarity_config": {"method": "exact"}}
"""

NAMED_EVALUATOR = """
import pytest
from planted import VALUES, Leaky

CODENAME = "orchid-" + "codename"  # no built-in pattern knows it: the test's hook hides it


def hide(value, attribute):
    return value.replace(CODENAME, "[hidden]")


@pytest.mark.tracesim(redact=hide)
def test_the_tests_own_redaction_holds(tracesim_eval):
    tracesim_eval.assert_passes(f"out {CODENAME}", "b", evaluators=[Leaky(threshold=0.5)],
                                name=f"source {CODENAME}")

def test_evaluator_named_by_a_key(tracesim_eval):
    # An evaluator's name can be an API key.
    tracesim_eval.assert_passes("a", "b", evaluators=[Leaky(name=VALUES["openai"], threshold=0.5)])
"""


@pytest.fixture
def step_summary(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Subprocess sessions load only our plugin; the step summary goes to a file of ours."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    path = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    return path


def _session(pytester: pytest.Pytester, values: dict[str, str], **tests: str) -> pytest.RunResult:
    pytester.makepyfile(planted=PLANTED.format(values=values), **tests)
    return pytester.runpytest_subprocess(
        "-p",
        PLUGIN,
        "-p",
        "no:cacheprovider",
        "--color=no",
        "--tracesim-json",
        "results.json",
        "--junitxml",
        "junit.xml",
    )


def _unescaped(text: str) -> list[str]:
    """``text`` and what a reader decodes from it: JSON, XML and HTML escapes, markdown backslashes."""
    decoded = html.unescape(text.replace("\\n", "\n").replace('\\"', '"').replace("\\/", "/"))
    return [
        text,
        decoded,
        re.sub(r"\\(.)", r"\1", decoded),
        " ".join(re.sub(r"\\(.)", r"\1", decoded).split()),
    ]


def _markdown_html(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def test_no_secret_reaches_any_output(pytester: pytest.Pytester, step_summary: Path) -> None:
    values = {kind: secret for kind, (secret, _) in SECRETS.items()}
    result = _session(pytester, values, test_leaks=TESTS, test_named=NAMED_EVALUATOR)
    result.assert_outcomes(failed=17)

    outputs = {
        "json": (pytester.path / "results.json").read_text(encoding="utf-8"),
        "junit": (pytester.path / "junit.xml").read_text(encoding="utf-8"),
        "step summary": step_summary.read_text(encoding="utf-8"),
        "terminal": result.stdout.str() + result.stderr.str(),
    }
    fragments = {kind: fragment for kind, (_, fragment) in SECRETS.items()}
    fragments["codename (the test's redact hook)"] = "orchid-codename"
    outputs["step summary (rendered)"] = _markdown_html(outputs["step summary"])
    leaks = [
        f"{kind} in {output}"
        for kind, fragment in fragments.items()
        for output, text in outputs.items()
        if any(fragment in form for form in _unescaped(text))
    ]
    assert leaks == []

    # Each output got the results, redacted rather than dropped.
    document = json.loads(outputs["json"])
    assert document["summary"]["results"] == 47
    sources = {row["source"] for test in document["tests"] for row in test["results"]}
    assert "source [REDACTED:api_key]" in sources
    assert "span [REDACTED:email]" in sources
    assert "source [hidden]" in sources
    evaluators = {row["evaluator"] for test in document["tests"] for row in test["results"]}
    assert "[REDACTED:api_key]" in evaluators
    reasons = " ".join(str(row["reason"]) for test in document["tests"] for row in test["results"])
    assert "401 Incorrect API key provided: out [REDACTED:api_key]" in reasons
    assert "compared out postgres://u:[REDACTED:password]@host/db with expected" in reasons
    labels = {row["label"] for test in document["tests"] for row in test["results"]}
    assert "label out [REDACTED:email]" in labels
    assert "tracesim.[REDACTED:api_key].score" in outputs["junit"]
    # Values are redacted before they are cut for a message: the rest of the line survives.
    assert (
        "actual 'actual [REDACTED:private_key]', expected 'expected [REDACTED:private_key]'"
        in outputs["terminal"]
    )
    assert "[REDACTED:private_key]" in outputs["terminal"]
    assert "REDACTED" in outputs["step summary"]


# -- markdown and HTML in the step summary -------------------------------------------------------

MARKUP = (
    "line one\n# heading\n\n| a | b |\n|---|---|\r\n"
    "![x](http://evil.example/x.png) [link](http://evil.example) <img src=x onerror=alert(1)> "
    "<script>alert(1)</script> www.evil.example http://evil.example `code` *bold* _em_ \\| &amp; &#124;"
)
MARKUP_TESTS = """
import pytest
from planted import VALUES, Leaky, traced_call

@pytest.mark.tracesim
def test_marker():
    traced_call(VALUES["markup"])

@pytest.mark.parametrize("kind", [pytest.param("markup", id="a|b <img src=x> [l](http://e.example) # h")])
def test_score(tracesim_eval, kind):
    tracesim_eval.score("a", "b", evaluators=[Leaky(threshold=0.5)], name=f"source {VALUES[kind]}")
"""


def _cells(html_text: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", html_text, flags=re.S)
    return [
        [
            html.unescape(re.sub(r"<[^>]*>", "", cell))
            for cell in re.findall(r"<t[hd]>(.*?)</t[hd]>", row, re.S)
        ]
        for row in rows
    ]


def test_markup_in_names_stays_text_in_the_step_summary(
    pytester: pytest.Pytester, step_summary: Path
) -> None:
    result = _session(pytester, {"markup": MARKUP}, test_markup=MARKUP_TESTS)
    result.assert_outcomes(failed=1, passed=1)
    markdown = step_summary.read_text(encoding="utf-8")

    lines = markdown.splitlines()
    assert [line for line in lines if line.startswith("#")] == ["### tracesim evaluations"]
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + 4  # header, delimiter, 4 results: nothing else broke out of a row
    assert lines[lines.index(table[0]) :][: len(table)] == table  # one block: no row split in two
    assert all(len(re.findall(r"(?<!\\)\|", line)) == 7 for line in table)  # 6 cells each
    for raw in ("<img", "<script", "](", "\r"):
        assert raw not in markdown

    rendered = _markdown_html(markdown)
    assert rendered.count("<table>") == 1
    for tag in ("<img", "<a ", "<script", "<h1", "<h2", "<code", "<em", "<strong", "<hr"):
        assert tag not in rendered
    cells = _cells(rendered)
    assert len(cells) == 5
    assert all(len(row) == 6 for row in cells)
    shown = " ".join(MARKUP.split())  # what a cell can show: the text, its line breaks folded
    assert {f"span {shown}", f"call {shown}"} <= {row[1] for row in cells}
    assert f"result {shown}" in {row[2] for row in cells}
    assert f"source {shown}" in {row[1] for row in cells}
    assert "test_markup.py::test_score[a|b <img src=x> [l](http://e.example) # h]" in {
        row[0] for row in cells
    }


# -- control characters on the terminal ---------------------------------------------------------

TERMINAL_TESTS = """
import pytest
from planted import VALUES, Leaky, Raising, traced_call

@pytest.mark.parametrize("kind", sorted(VALUES))
@pytest.mark.tracesim
def test_marker(kind):
    traced_call(VALUES[kind])

@pytest.mark.parametrize("kind", sorted(VALUES))
def test_score(tracesim_eval, kind):
    value = VALUES[kind]
    tracesim_eval.assert_passes(f"out {value}", "b", evaluators=[Leaky(threshold=0.5), Raising()],
                                name=f"source {value}")
"""


def test_control_characters_are_shown_not_obeyed_on_the_terminal(
    pytester: pytest.Pytester, step_summary: Path
) -> None:
    extra = {
        "c1-nel": "a\x85b",
        "bidi-isolate": "x\u2066y\u2069z",
        "line-separator": "a\u2028b",
        "del": "a\x7fb",
    }
    payloads = {**TERMINAL_PAYLOADS, **extra}
    raw = (*RAW_CONTROLS, "\x85", "\u2066", "\u2069", "\u2028", "\x7f")
    pytester.makepyfile(planted=PLANTED.format(values=payloads), test_terminal=TERMINAL_TESTS)
    # Run directly: pytester's output is read with universal newlines and split into lines,
    # which would turn a raw CR, NEL or line separator into a line break and hide it.
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider", "--color=no"],
        cwd=pytester.path,
        capture_output=True,
        timeout=300,
    )
    terminal = (run.stdout + run.stderr).decode("utf-8")
    assert f"{2 * len(payloads)} failed" in terminal
    assert [c for c in raw if c in terminal] == []

    table = terminal.split("= tracesim evaluations =")[1]
    for payload in payloads.values():
        assert f"span {visible(payload)}" in table  # the span's name, as `tracesim show` shows it
        assert f"result {visible(payload)}" in table
        assert f"source {visible(payload)}" in table
        # Failure messages show what was compared, visibly too.
        assert f"compared out {visible(payload)} with b" in terminal

    markdown = step_summary.read_text(encoding="utf-8")
    assert [c for c in raw if c in markdown] == []


def test_a_node_id_with_a_secret_keeps_its_outcome_and_loses_the_secret(tmp_path: Path) -> None:
    from tracesim_pytest._report import Row, Summary

    from tracesim.evaluators import EvalResult

    secret, fragment = SECRETS["email"]
    nodeid = f"t.py::test_a[{secret}]"  # a parametrized id: pytest's own, printed by pytest too
    result = EvalResult(name="exact", score=0.0, passed=False, threshold=1.0, explanation=f"to {secret}")
    row = Row.from_result(nodeid, "answer", result)
    assert row.test == nodeid  # pytest's key for the test's outcome
    assert row.reason == "to [REDACTED:email]"
    summary = Summary()
    for when, outcome in (("call", "failed"), ("teardown", "passed")):
        extra = {"tracesim_results": [row.to_json()]} if when == "teardown" else {}
        summary.add_report(pytest.TestReport(nodeid, ("t.py", 0, "x"), {}, outcome, None, when, **extra))
    summary.write_json(tmp_path / "out" / "results.json")
    summary.append_markdown(tmp_path / "summary.md")
    document = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert document["tests"][0]["nodeid"] == "t.py::test_a[[REDACTED:email]]"
    assert document["tests"][0]["outcome"] == "failed"
    for written in (tmp_path / "out" / "results.json", tmp_path / "summary.md"):
        assert not [t for t in _unescaped(written.read_text(encoding="utf-8")) if fragment in t]
