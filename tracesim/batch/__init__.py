"""Batch scoring: evaluators over files, datasets and trace files, on a Dask cluster or any engine.

Two levels:

- `score_frame` is the engine-agnostic core: a pandas DataFrame in, one column per evaluator
  and result field out. Evaluators given as configs are built once per process and kept, so
  Dask, Ray Data (``map_batches``), Spark (``mapInPandas``) or Daft can call it per batch.
- `score` runs a whole source (JSONL, CSV or Parquet files, local or fsspec URLs, or the
  spans of trace files) on a Dask cluster, one task per part, and writes partitioned Parquet
  or JSONL results; ``tracesim eval --engine dask`` is its command line.
- `backfill` sends the scores of trace files' spans back to where those spans are: carrier
  spans to a trace file or OTLP endpoint, span annotations to Phoenix; never twice
  (``tracesim backfill``).
- `replay` sends the spans of local trace files to an OTLP/HTTP endpoint, and their evaluation
  results to Phoenix as annotations; never twice (``tracesim replay``). Replay and backfill
  keep one kind of ledger (`tracesim.batch._ledger`) of what reached where.

Run evaluators (``trajectory_match``, ``tool_correctness``, ``run_budget``...) score agents'
runs in all of them: a span's run rebuilt from its trace in the file, a data row's
``tool_calls`` column against its ``expected_tool_calls``.

This is tracesim's offline work: what runs on files after the traced process, never inside it.

Importing this package is cheap: replay (and httpx) load when first used; pandas, pyarrow and
Dask (the ``dask`` extra, ``pip install 'tracesim[dask]'``) are imported when a function needs
them. See ``docs/batch.md``.

Example:
    >>> import pandas as pd
    >>> from tracesim.batch import score_frame
    >>> scores = score_frame(pd.DataFrame({"output": ["Paris"], "expected": ["Paris"]}), ["exact"])
    >>> scores.loc[0, "exact.score"], scores.loc[0, "exact.status"]
    (np.float64(1.0), 'ok')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracesim.batch._backfill import BackfillReport, backfill
from tracesim.batch._frame import FIELDS, result_schema, score_frame
from tracesim.batch._score import score
from tracesim.batch._score_rows import EvaluatorSpec, build_evaluators, score_rows
from tracesim.batch._sources import Records, SourceError, Spans
from tracesim.batch._summary import BatchReport, Tally

if TYPE_CHECKING:
    from tracesim.batch._replay import ReplayReport, replay

__all__ = [
    "FIELDS",
    "BackfillReport",
    "BatchReport",
    "EvaluatorSpec",
    "Records",
    "ReplayReport",
    "SourceError",
    "Spans",
    "Tally",
    "backfill",
    "build_evaluators",
    "replay",
    "result_schema",
    "score",
    "score_frame",
    "score_rows",
]


def __getattr__(name: str) -> Any:
    if name in ("ReplayReport", "replay"):  # httpx and the replay client, only when replay is used
        from tracesim.batch import _replay

        value = getattr(_replay, name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'tracesim.batch' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
