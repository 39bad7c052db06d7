"""Records from spans: one block of a trace file, decoded, with the spans a rule selects.

Each line of a trace file is an OTLP/JSON ``ExportTraceServiceRequest``; a line that is not
(torn by a crash, not JSON, not OTLP) is one bad row with its line number, and the rest of the
block is read, as ``tracesim show`` and ``report`` skip such lines. A selected span is a record
when it has an output; one without, or with a value cut at capture time
(``max_value_chars``: a score of the cut text would be a score of something else), is a bad
row with that reason and the span's ids. Values recorded as JSON are decoded, so a span
scores here as it scored online. Lines are read within the limits of `tracesim._inputs` (64 MiB
a line, 256 levels of nesting), and tracesim's own ``tracesim.export.dropped`` records are not
rows. For run evaluators, each selected span also gets its run, rebuilt from the spans of its
trace in the block, and its expected tool calls (`span_runs`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tracesim import _inputs
from tracesim._semconv import (
    EXPECTED_MIME_TYPE,
    EXPECTED_ORIGINAL_CHARS,
    EXPECTED_TOOL_CALLS,
    EXPECTED_VALUE,
    EXPORT_DROPPED,
    INPUT_MIME_TYPE,
    INPUT_VALUE,
    MIME_JSON,
    OUTPUT_MIME_TYPE,
    OUTPUT_ORIGINAL_CHARS,
    OUTPUT_VALUE,
)
from tracesim.batch._files import open_binary
from tracesim.batch._score_rows import RunValues

if TYPE_CHECKING:
    from tracesim._scoring import Golden, Rule
    from tracesim.batch._parts import Chunk, Part
    from tracesim.tracefile import SpanRecord

__all__ = ["read_spans", "span_record", "span_runs"]

NO_OUTPUT = "the span has no output"
CUT = "a value was cut when traced (max_value_chars)"


def read_spans(
    part: Part, rule: Rule, chunk: Chunk, *, runs: bool = False, golden: Golden | None = None
) -> None:
    """Add the records (and bad rows) of one block of a trace file to ``chunk``.

    A line longer than 64 MiB or nested more than 256 levels deep is a bad row naming the
    limit, read past without being held whole. Spans named ``tracesim.export.dropped`` are
    not rows: they are tracesim's records of spans its export queue dropped (their count is in
    ``tracesim report``), not spans of the traced program.

    With ``runs``, every span of the block is kept until the block is read; then each selected
    span gets its run (`span_runs`), rebuilt from its own trace's spans, grouped once. With
    ``golden``, a span that recorded no expected value gets the one ``golden`` has for its
    input (`golden_expected`): an expected output, expected tool calls, or both.
    """
    from tracesim.tracefile import spans_from_request

    kept: list[SpanRecord] = []
    selected: list[tuple[int, SpanRecord]] = []
    looked_up: dict[int, Any] = {}  # a span's place: the expected tool calls golden gave it
    block = part.block
    with open_binary(part.path) as handle:
        handle.seek(block.start)
        lines = _inputs.json_records(
            handle, name=part.path, first_line=block.first_line, size=block.stop - block.start
        )
        for number, request in lines:
            if isinstance(request, _inputs.InputError):
                chunk.add(_unread(part, number), (None, None, None), _bad_line(request))
                continue
            try:
                if not isinstance(request, dict):
                    raise ValueError(f"expected a JSON object, got {type(request).__name__}")
                spans = list(spans_from_request(request))  # all of a line, or none of it
            except ValueError as exc:  # the OTLP decoder's errors
                chunk.add(_unread(part, number), (None, None, None), f"not OTLP/JSON ({exc})")
                continue
            if runs:
                kept += spans
            for span in spans:
                if span.name != EXPORT_DROPPED and rule.selects(span.name, _kinds(span), span.attributes):
                    triple, bad = span_record(span)
                    if golden is not None and bad is None and not _has_expected(span):
                        triple, looked_up[len(chunk.bad)] = golden_expected(golden, triple)
                    if runs and bad is None:
                        selected.append((len(chunk.bad), span))
                    chunk.add(
                        (part.path, number, span.trace_id, span.span_id, span.name, _end_ns(span)),
                        triple,
                        bad,
                    )
    if selected:
        span_runs(chunk, selected, kept, part.split, looked_up)


def _has_expected(span: SpanRecord) -> bool:
    return EXPECTED_VALUE in span.attributes or EXPECTED_TOOL_CALLS in span.attributes


def golden_expected(golden: Golden, triple: tuple[Any, Any, Any]) -> tuple[tuple[Any, Any, Any], Any]:
    """``triple`` with the expected output ``golden`` has for its input, and the expected tool
    calls (None when it has none).

    The span's input is the traced call's: its arguments as a JSON object (looked up by the
    golden file's key argument), or its one argument's value.
    """
    from tracesim.runs import NOT_GIVEN, Expected

    output, _, input_value = triple
    if isinstance(input_value, dict):
        found = golden.lookup((), input_value, input_value)
    else:
        key = golden.key if isinstance(golden.key, str) else "input"
        found = golden.lookup((input_value,), {}, {key: input_value})
    if isinstance(found, Expected):
        expected_output = None if found.output is NOT_GIVEN else found.output
        return (output, expected_output, input_value), found.tool_calls
    return (output, found, input_value), None


def span_runs(
    chunk: Chunk,
    selected: list[tuple[int, SpanRecord]],
    spans: list[SpanRecord],
    split: frozenset[str],
    looked_up: dict[int, Any] | None = None,
) -> None:
    """Give each selected span (by its place in ``chunk``) its run and expected tool calls.

    The runs come from `tracesim._runs.RunIndex` over ``spans`` (the traces grouped once per
    block); the expected value run evaluators get is an `Expected` of the span's expected output
    and its ``tracesim.expected.tool_calls`` (JSON), or the tool calls ``looked_up`` in a golden
    file for it. That attribute, when it is not a list of tool calls, makes the span a bad row
    naming it. A span of a trace in ``split`` (a trace the
    block holds only part of) gets its run marked truncated.
    """
    import dataclasses

    from tracesim._errors import ConfigError
    from tracesim._runs import RunIndex
    from tracesim.runs import NOT_GIVEN, Expected

    index = RunIndex(spans)
    looked_up = looked_up or {}
    for place, span in selected:
        try:
            if place in looked_up:
                calls = looked_up[place]
            else:
                calls = _expected_calls(span.attributes.get(EXPECTED_TOOL_CALLS))
        except ConfigError as exc:
            chunk.triples[place] = (None, None, None)
            chunk.bad[place] = f"bad {EXPECTED_TOOL_CALLS} ({exc.setting}: {exc.accepted})"
            continue
        run = index.run(span)
        if span.trace_id in split:
            reason = "the trace was split between batch parts (longer than max_trace_bytes)"
            run = dataclasses.replace(run, truncated=True, truncated_reason=run.truncated_reason or reason)
        expected_output = chunk.triples[place][1]
        expected = Expected(
            output=NOT_GIVEN if expected_output is None else expected_output, tool_calls=calls
        )
        chunk.runs[place] = RunValues(run, expected)


def _expected_calls(value: Any) -> Any:
    from tracesim.runs import tool_calls

    if value is None:
        return None
    return tool_calls(value, EXPECTED_TOOL_CALLS)


def _bad_line(error: _inputs.InputError) -> str:
    """A bad row's reason: a limit of `tracesim._inputs` as it names it, else ``invalid JSON (...)``."""
    if error.limit is not None:
        return error.problem
    if error.problem.startswith("not valid JSON ("):
        return "invalid JSON" + error.problem.removeprefix("not valid JSON")
    return f"invalid JSON ({error.problem})"


def _end_ns(span: SpanRecord) -> int | None:
    """The span's end for the int64 results column; None for a time no clock gives (0, 2**64 - 1)."""
    end = span.end_time_unix_nano
    return end if 0 < end < 2**63 else None


def _unread(part: Part, number: int) -> tuple[Any, ...]:
    """The keys of a line that could not be read: where it is, and no span."""
    return (part.path, number, None, None, None, None)


def _kinds(span: SpanRecord) -> tuple[str | None, ...]:
    from tracesim._foreign_spans import span_kinds

    return span_kinds(span.attributes)


def span_record(span: SpanRecord) -> tuple[tuple[Any, Any, Any], str | None]:
    """The ``(output, expected, input)`` of a span, and why it cannot be scored (or None).

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> span = SpanRecord("0" * 32, "1" * 16, None, "answer", "INTERNAL", 0, 1,
        ...                   {"input.value": "Capital?", "output.value": "Paris",
        ...                    "tracesim.expected.value": "Paris"})
        >>> span_record(span)
        (('Paris', 'Paris', 'Capital?'), None)
    """
    from tracesim._foreign_spans import span_input, span_output

    attributes = span.attributes
    output = span_output(attributes)
    if output is None:
        return (None, None, None), NO_OUTPUT
    if OUTPUT_ORIGINAL_CHARS in attributes or EXPECTED_ORIGINAL_CHARS in attributes:
        return (None, None, None), CUT
    return (
        _decoded(attributes, output, OUTPUT_VALUE, OUTPUT_MIME_TYPE),
        _decoded(attributes, attributes.get(EXPECTED_VALUE), EXPECTED_VALUE, EXPECTED_MIME_TYPE),
        _decoded(attributes, span_input(attributes), INPUT_VALUE, INPUT_MIME_TYPE),
    ), None


def _decoded(attributes: Mapping[str, Any], value: Any, key: str, mime_key: str) -> Any:
    """A value recorded as JSON (a dict, a list, ``null``) as the Python value the span had.

    Online scoring saw that value, not its JSON text, and the text metrics turn a dict into
    their own canonical text (keys sorted), so the batch score is the online score.
    """
    if value is None or attributes.get(mime_key) != MIME_JSON or attributes.get(key) != value:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value
