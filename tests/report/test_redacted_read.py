"""``read_report(..., redact=True)``: a report of a file holding secrets holds none, whatever it shows.

``tracesim report`` reads this way (the files another program wrote may hold secrets
tracesim's exporter would have redacted). The report takes each value when it reads it; the
texts it never reads (the inputs and outputs of spans that are no worst case, stack traces)
are never scanned: the last test counts the texts the redaction sees.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.trace import Status, StatusCode
from rich.console import Console
from secret_kinds import KINDS, leaked

import tracesim
from tracesim import _semconv as sc
from tracesim._report import print_report, read_report, render_html
from tracesim._report._redacted import RedactedAttributes, redacted_spans
from tracesim.tracefile import SpanRecord

from .tracefiles import T0_NS, TraceWriter, result


def _file_with(secret: str, writer: Callable[..., TraceWriter]) -> Path:
    """A trace file with ``secret`` in every field a report shows, unredacted."""
    w = writer(service=f"svc {secret}")
    verdicts = [
        result(f"judge {secret}", 0.1, passed=False, threshold=0.5, label=f"label {secret}")
        | {sc.EVALUATION_EXPLANATION: f"because {secret}"},
        result(f"erring {secret}", status="error", error_type=f"Denied {secret}"),
    ]
    answer = w.span(
        f"answer {secret}",
        kind="AGENT",
        attributes={
            "user.id": f"user {secret}",
            sc.INPUT_VALUE: f"in {secret}",
            sc.OUTPUT_VALUE: f"out {secret}",
            sc.EXPECTED_VALUE: f"exp {secret}",
            "gen_ai.request.model": f"model {secret}",
            "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 2,
        },
        results=verdicts,
        not_sampled=[f"sampled {secret}"],
    )
    w.carrier(answer, [result(f"late {secret}", 0.0, passed=False)])
    failing = w.tracer.start_span(
        f"tool {secret}", start_time=T0_NS, attributes={"user.id": f"user {secret}"}
    )
    failing.record_exception(PermissionError(f"denied for {secret}"))
    failing.set_status(Status(StatusCode.ERROR, f"PermissionError: denied for {secret}"))
    failing.end(end_time=T0_NS + 10**6)
    status_only = w.tracer.start_span("status", start_time=T0_NS)
    status_only.set_status(Status(StatusCode.ERROR, f"closed by {secret}"))
    status_only.end(end_time=T0_NS + 10**6)
    w.close()
    with w.path.open("a", encoding="utf-8") as handle:
        handle.write(f'{{"torn line": "{secret[:20]}\n')
    assert leaked(w.path.read_text(encoding="utf-8")), "the file was redacted: nothing to test"
    return w.path


def _rendered(path: Path, *, redact: bool, group_by: str | None) -> dict[str, str]:
    report = read_report([path], group_by=group_by, redact=redact)
    shown: dict[str, str] = {"json": json.dumps(report.to_dict()), "html": render_html(report)}
    for width in (40, 200):  # a narrow table cuts and wraps cells mid-secret
        out = io.StringIO()
        print_report(report, Console(file=out, width=width, highlight=False, soft_wrap=False))
        shown[f"table {width}"] = out.getvalue()
    return shown


@pytest.mark.parametrize("group_by", [None, "user.id", "service.name"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_report_read_with_redact_shows_no_secret_in_any_field(
    kind: str, group_by: str | None, writer: Callable[..., TraceWriter]
) -> None:
    path = _file_with(KINDS[kind][0], writer)
    redacted = _rendered(path, redact=True, group_by=group_by)
    leaks = {where: leaked(text) for where, text in redacted.items() if leaked(text)}
    assert not leaks, f"secrets in the report: {leaks}"
    assert "[REDACTED:" in redacted["json"]
    # Read without it, the same report shows the secret: the test plants where the report looks.
    raw = _rendered(path, redact=False, group_by=group_by)
    assert all(kind in leaked(text) for text in raw.values())


def test_the_redacted_view_redacts_whatever_way_a_reader_reads_it() -> None:
    secret = KINDS["email"][0]
    span = SpanRecord(
        "t", "s", None, f"ask {secret}", "INTERNAL", 0, 1,
        {"q": f"to {secret}", secret: "a key that is an address", "n": 3, "list": [secret, 1]},
        resource={"service.name": secret},
    )  # fmt: skip
    (shown,) = redacted_spans([span])
    attributes = shown.attributes
    assert isinstance(attributes, RedactedAttributes)
    read = [
        shown.name,
        attributes["q"],
        attributes.get("q"),
        repr(dict(attributes)),
        repr(list(attributes.items())),
        repr(list(attributes.values())),
        repr(list(attributes)),
        repr(attributes),
        repr(dict(shown.resource)),
    ]
    assert not [text for text in read if leaked(text)]
    assert attributes.get("n") == 3
    assert attributes.get("absent") is None
    assert "q" in attributes
    with pytest.raises(KeyError):
        attributes["absent"]


def test_a_report_redacts_what_it_reads_not_every_long_text_of_every_span(
    writer: Callable[..., TraceWriter],
) -> None:
    """The eager redaction scanned every attribute of every span: 2 long texts per span here."""
    spans = 300
    w = writer()
    for i in range(spans):
        passed = i % 3 != 0
        w.span(
            "answer",
            kind="AGENT",
            start_s=i,
            attributes={
                sc.INPUT_VALUE: f"question {i} " + "x" * 2000,
                sc.OUTPUT_VALUE: f"answer {i} " + "y" * 2000,
            },
            results=[result("judge", 0.9 if passed else 0.1, passed=passed, threshold=0.5)],
        )
    w.close()
    seen: list[int] = []

    def hook(value: str, attribute: str) -> str:
        seen.append(len(value))
        return value

    tracesim.configure(exporters=[], redact=hook)
    report = read_report([w.path], redact=True)
    judge = report.evaluator("judge")
    assert judge is not None
    assert judge.results == spans
    long_texts = sum(n > 1000 for n in seen)
    cases = len(report.worst_cases)
    assert 0 < cases < spans // 10
    assert long_texts <= 2 * cases  # the worst cases' inputs and outputs, no others
