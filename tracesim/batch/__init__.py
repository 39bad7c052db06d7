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

Importing this package is cheap: pandas, pyarrow and Dask (the ``dask`` extra,
``pip install 'tracesim[dask]'``) are imported when a function needs them. See ``docs/batch.md``.

Example:
    >>> import pandas as pd
    >>> from tracesim.batch import score_frame
    >>> scores = score_frame(pd.DataFrame({"output": ["Paris"], "expected": ["Paris"]}), ["exact"])
    >>> scores.loc[0, "exact.score"], scores.loc[0, "exact.status"]
    (np.float64(1.0), 'ok')
"""

from tracesim.batch._backfill import BackfillReport, backfill
from tracesim.batch._frame import FIELDS, result_schema, score_frame
from tracesim.batch._rows import EvaluatorSpec, build_evaluators, score_rows
from tracesim.batch._score import score
from tracesim.batch._sources import Records, SourceError, Spans
from tracesim.batch._summary import BatchReport, Tally

__all__ = [
    "FIELDS",
    "BackfillReport",
    "BatchReport",
    "EvaluatorSpec",
    "Records",
    "SourceError",
    "Spans",
    "Tally",
    "backfill",
    "build_evaluators",
    "result_schema",
    "score",
    "score_frame",
    "score_rows",
]
