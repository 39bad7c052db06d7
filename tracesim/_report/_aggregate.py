"""Aggregate span and result samples into a `Report`.

Definitions (also in ``docs/report.md``):

- latency percentiles interpolate linearly between closest ranks (numpy's default method);
- ``error_rate = errors / count``, errors being spans with status ``ERROR``;
- ``mean_score`` averages the finite scores of results with status ``ok``; skipped and errored
  results never contribute a score;
- ``pass_rate = passed / (passed + failed)`` over ``ok`` results that carry
  ``tracesim.evaluation.passed``; ``None`` when there is no such result;
- span status ``OK`` and ``UNSET`` are both "not an error"; scoring markers are counted per span
  (a dropped span names no evaluator), deferred evaluators also per evaluator;
- scores and latency over time: see `tracesim._report._timeline`;
- LLM usage and cost: see `tracesim._report._usage`;
- agents' runs (tool calls, per-tool counts, worst runs): see `tracesim._report._agents`.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from warnings import catch_warnings, simplefilter, warn_explicit

from tracesim import _outputs
from tracesim._pricing import PriceTable
from tracesim._report._agents import agent_stats
from tracesim._report._collect import Collected, Judged, ResultSample, SpanSample, collect, evaluator_name
from tracesim._report._drill import error_types, worst_cases
from tracesim._report._format import iso_utc
from tracesim._report._math import histogram, histogram_edges, percentile
from tracesim._report._redacted import Texts
from tracesim._report._report_data import (
    EvaluatorStats,
    LatencyStats,
    Report,
    ScoringCounts,
    SpanStats,
    StatusCounts,
    Totals,
)
from tracesim._report._timeline import timeline
from tracesim._report._usage import llm_usage
from tracesim.tracefile import SpanRecord, TraceFileWarning, load_spans

__all__ = ["TOP", "read_report", "summarize"]

TOP = 10
"""Traces and calls listed in the LLM usage section, most expensive first."""

_EvalKey = tuple[str | None, str, str | None]  # group, evaluator, evaluated span name


def summarize(
    spans: Iterable[SpanRecord],
    *,
    group_by: str | None = None,
    files: Sequence[str] = (),
    warnings: Sequence[str] = (),
    prices: PriceTable | None = None,
    top: int = TOP,
    redact: bool = False,
) -> Report:
    """Summarise spans: latency and errors per span name, scores per evaluator, LLM usage.

    ``group_by`` names a span attribute, or a resource attribute such as ``service.name``;
    rows are then split by its value (``"(none)"`` where it is missing). Results on carrier
    spans count for the span they link to, in that span's group. LLM calls without a cost of
    their own are priced with ``prices`` (default: the shipped table); ``top`` traces and calls
    are listed. With ``redact``, every text the report takes from the spans passes the
    redaction of `tracesim._outputs` as it is taken, before anything is grouped or cut (see
    `read_report`); ``warnings`` are kept as given.

    Example:
        >>> import tracesim
        >>> from tracesim.evaluators import ExactMatch
        >>> from tracesim.testing import capture_spans
        >>> @tracesim.trace(evaluators=[ExactMatch()], expected="Warsaw")
        ... def answer(question: str) -> str:
        ...     return "Warsaw" if "Curie" in question else "Paris"
        >>> with capture_spans() as captured:
        ...     answers = [answer("Marie Curie?"), answer("Pierre?"), answer("Curie again?")]
        >>> report = summarize(captured.spans)
        >>> [(s.name, s.count) for s in report.spans]
        [('answer', 3)]
        >>> round(report.evaluator("exact").pass_rate, 3)
        0.667
    """
    collected = collect(spans, group_by, Texts(redact=redact))
    rows, totals = _evaluator_rows(collected)
    span_rows = _span_rows(collected.spans)
    return Report(
        files=tuple(files),
        group_by=group_by,
        totals=_totals(collected, len(files), span_rows),
        spans=span_rows,
        evaluators=rows,
        evaluator_totals=totals,
        warnings=tuple(warnings),
        llm_usage=llm_usage(collected, prices if prices is not None else PriceTable(), top),
        worst_cases=worst_cases(collected.judged, text=collected.text),
        error_types=error_types(collected.failed, text=collected.text),
        timeline=timeline(collected),
        agents=agent_stats(
            collected.agents, collected.agent_traces, collected.judged, text=collected.text, prices=prices
        ),
    )


def read_report(
    paths: Iterable[str | os.PathLike[str]],
    *,
    group_by: str | None = None,
    prices: PriceTable | None = None,
    top: int = TOP,
    redact: bool = False,
) -> Report:
    """Load trace files and summarise them (see `summarize` for ``prices`` and ``top``).

    Lines that cannot be read (a torn last line after a crash) are skipped; their
    `~tracesim.tracefile.TraceFileWarning` messages are kept in `Report.warnings` instead of
    being raised as warnings.

    With ``redact``, every text the report takes from the files, and the warnings, pass the
    redaction of `tracesim._outputs` as they are taken, whole, before anything is grouped or
    cut (`~tracesim._report._redacted.Texts`): the report holds no secret a table could then
    cut or wrap past the patterns. ``tracesim report`` reads so. Only what the report shows is
    redacted (names, groups, evaluators, labels, models, errors, the worst cases' texts), not
    every attribute of every span: a report of 100,000 spans scans a few distinct names and a
    few dozen long texts, not 100,000 inputs and outputs.

    Example:
        >>> report = read_report([".tracesim/traces.jsonl"])  # doctest: +SKIP
        >>> report.evaluator("levenshtein").pass_rate  # doctest: +SKIP
        0.82
    """
    files = [os.fspath(p) for p in paths]
    with catch_warnings(record=True) as caught:
        simplefilter("always", TraceFileWarning)
        spans = load_spans(files)
    kept = []
    for w in caught:
        if issubclass(w.category, TraceFileWarning):
            kept.append(_outputs.text(str(w.message)) if redact else str(w.message))
        else:  # not ours to keep: pass it on as it came
            warn_explicit(w.message, w.category, w.filename, w.lineno)
    return summarize(
        spans, group_by=group_by, files=files, warnings=kept, prices=prices, top=top, redact=redact
    )


def _span_rows(samples: Iterable[SpanSample]) -> tuple[SpanStats, ...]:
    by_key: dict[tuple[str | None, str], list[SpanSample]] = defaultdict(list)
    for sample in samples:
        by_key[(sample.group, sample.name)].append(sample)
    rows = []
    for (group, name), items in sorted(by_key.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        errors = sum(s.error for s in items)
        rows.append(
            SpanStats(
                group=group,
                name=name,
                kinds=tuple(sorted({s.kind for s in items if s.kind is not None})),
                count=len(items),
                errors=errors,
                error_rate=errors / len(items),
                latency_s=_latency(sorted(s.duration_s for s in items)),
                status=_status_counts(items),
                scoring=_scoring_counts(items),
            )
        )
    return tuple(rows)


def _status_counts(samples: Iterable[SpanSample]) -> StatusCounts:
    ok = error = total = 0
    for sample in samples:
        total += 1
        ok += sample.status == "OK"
        error += sample.error
    return StatusCounts(ok=ok, unset=total - ok - error, error=error)


def _scoring_counts(samples: Iterable[SpanSample]) -> ScoringCounts:
    dropped = deferred = not_sampled = 0
    for sample in samples:
        dropped += sample.dropped
        deferred += sample.deferred
        not_sampled += sample.not_sampled
    return ScoringCounts(dropped=dropped, deferred=deferred, not_sampled=not_sampled)


def _added(rows: Sequence[SpanStats]) -> tuple[StatusCounts, ScoringCounts]:
    """The status and scoring counts of all spans: the sums of the span table's rows."""
    return (
        StatusCounts(*(sum(getattr(r.status, f) for r in rows) for f in ("ok", "unset", "error"))),
        ScoringCounts(
            *(sum(getattr(r.scoring, f) for r in rows) for f in ("dropped", "deferred", "not_sampled"))
        ),
    )


def _latency(durations: Sequence[float]) -> LatencyStats:
    return LatencyStats(
        min=durations[0],
        mean=sum(durations) / len(durations),
        p50=percentile(durations, 50),
        p95=percentile(durations, 95),
        p99=percentile(durations, 99),
        max=durations[-1],
    )


def _thresholds(results: Iterable[ResultSample]) -> tuple[float, ...]:
    return tuple(sorted({r.threshold for r in results if r.threshold is not None}))


def _evaluator_rows(collected: Collected) -> tuple[tuple[EvaluatorStats, ...], tuple[EvaluatorStats, ...]]:
    results: dict[_EvalKey, list[ResultSample]] = defaultdict(list)
    by_name: dict[str, list[ResultSample]] = defaultdict(list)
    not_sampled: Counter[_EvalKey] = Counter(collected.not_sampled)
    deferred, missing = _deferred(collected)
    for r in collected.results:
        results[(r.group, r.evaluator, r.span)].append(r)
        by_name[r.evaluator].append(r)
    # One set of bin edges per evaluator, so its charts and groups compare bin by bin.
    edges = {name: histogram_edges(_ok_scores(items), _thresholds(items)) for name, items in by_name.items()}
    keys = sorted(set(results) | set(not_sampled) | set(deferred), key=_sort_key)
    rows = tuple(
        _evaluator_stats(key, results.get(key, []), (not_sampled[key], deferred[key], missing[key]), edges)
        for key in keys
    )
    names = sorted({key[1] for key in keys})
    totals = tuple(
        _evaluator_stats((None, name, None), by_name.get(name, []), _by_name(name, keys, rows), edges)
        for name in names
    )
    return rows, totals


def _by_name(name: str, keys: Sequence[_EvalKey], rows: Sequence[EvaluatorStats]) -> tuple[int, int, int]:
    """The not-sampled, deferred and missing counts of evaluator ``name``, over its rows."""
    mine = [row for key, row in zip(keys, rows, strict=True) if key[1] == name]
    return (
        sum(r.not_sampled for r in mine),
        sum(r.deferred for r in mine),
        sum(r.deferred_missing for r in mine),
    )


def _deferred(collected: Collected) -> tuple[Counter[_EvalKey], Counter[_EvalKey]]:
    """Per (group, evaluator, span name): evaluators a span ended without, and those never found."""
    deferred: Counter[_EvalKey] = Counter()
    missing: Counter[_EvalKey] = Counter()
    if not collected.deferred:
        return deferred, missing
    arrived = {_judged_key(item, collected.text) for item in collected.judged}
    for group, evaluator, span, trace_id, span_id in collected.deferred:
        deferred[(group, evaluator, span)] += 1
        if (trace_id, span_id, evaluator) not in arrived:
            missing[(group, evaluator, span)] += 1
    return deferred, missing


def _judged_key(item: Judged, text: Texts) -> tuple[str, str, str]:
    """(trace id, span id, evaluator) of the span a result judged, also when it is not in the files."""
    evaluator = evaluator_name(item.attributes, text)
    where = item.target or (item.carrier.links[0] if len(item.carrier.links) == 1 else item.carrier)
    return where.trace_id, where.span_id, evaluator


def _ok_scores(results: Iterable[ResultSample]) -> list[float]:
    return [r.score for r in results if r.status == "ok" and r.score is not None]


def _sort_key(key: _EvalKey) -> tuple[str, str, bool, str]:
    group, evaluator, span = key
    return (group or "", evaluator, span is None, span or "")


def _evaluator_stats(
    key: _EvalKey,
    results: Sequence[ResultSample],
    unscored: tuple[int, int, int],
    edges: dict[str, tuple[float, ...]],
) -> EvaluatorStats:
    """One row; ``unscored`` holds its not-sampled, deferred and deferred-but-missing counts."""
    group, name, span = key
    not_sampled, deferred, missing = unscored
    ok = [r for r in results if r.status == "ok"]
    scored = [r for r in ok if r.score is not None]
    scores = [r.score for r in scored if r.score is not None]
    passed = sum(r.passed is True for r in ok)
    failed = sum(r.passed is False for r in ok)
    labels = Counter(r.label for r in ok if r.label is not None)
    return EvaluatorStats(
        group=group,
        name=name,
        span=span,
        results=len(results),
        ok=len(ok),
        skipped=sum(r.status == "skipped" for r in results),
        errors=sum(r.status == "error" for r in results),
        not_sampled=not_sampled,
        from_carriers=sum(r.from_carrier for r in results),
        scored=len(scores),
        mean_score=sum(scores) / len(scores) if scores else None,
        passed=passed,
        failed=failed,
        pass_rate=passed / (passed + failed) if passed + failed else None,
        thresholds=_thresholds(results),
        labels=dict(sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))),
        histogram=histogram(scores, edges.get(name) or histogram_edges([]), [r.passed for r in scored]),
        deferred=deferred,
        deferred_missing=missing,
    )


def _totals(collected: Collected, files: int, rows: Sequence[SpanStats]) -> Totals:
    status, scoring = _added(rows)
    return Totals(
        files=files,
        spans=len(collected.spans),
        traces=len(collected.trace_ids),
        errors=sum(s.error for s in collected.spans),
        evaluator_spans=collected.evaluator_spans,
        results=len(collected.results),
        duplicate_spans=collected.duplicate_spans,
        unresolved_links=collected.unresolved_links,
        export_dropped=collected.export_dropped,
        start=iso_utc(collected.start_ns),
        end=iso_utc(collected.end_ns),
        status=status,
        scoring=scoring,
    )
