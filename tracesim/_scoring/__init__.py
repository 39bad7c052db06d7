"""Online scoring: evaluators run off the caller's path and their results land on the span.

- `_pipeline`: the bounded queue, worker threads, the asyncio loop for async evaluators.
- `_jobs`: a scored call (`Job`), its evaluator runs and the results made for them.
- `_watchdog`: one thread acting on deadlines (``timeout_s``, ``max_defer_s``).
- `_workqueue`: the FIFO producers use without waking a thread per call.
- `_selection`: which evaluators score a span (attached, configured rules) and sampling.
- `_expect`: where expected outputs come from (values, callables, `Golden`, ``expect()``).
- `_results`: how a result is written (span event, flat attributes, carrier span).
- `_sinks`: optional extra destinations for results (OTLP log records, Phoenix annotations).
- `_held_spans`: rules on spans other instrumentations made, each held until it is scored.

The pipeline knows spans only through OpenTelemetry's API and the `Job` it is given; its
tracer and its redaction (for the names in result attribute keys) are handed in by the runtime,
which this package never imports.
"""
