"""`score`: a whole source scored part by part on a Dask cluster (or in this process), to files.

The driver scans the source into parts, submits one task per part and adds up the small
summaries the tasks return, in the order they finish; it never holds rows. Tasks that raise
are retried by Dask (``retries``); a task whose worker dies is run again on another worker by
Dask's scheduler. Either way its results file is replaced whole, so every record is in the
output once. A part that still fails is reported in `BatchReport.failed_parts`, and the run
goes on with the others.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal

from tracesim import _outputs
from tracesim.batch._files import is_url
from tracesim.batch._partition import Job, OutputFormat, Sink, run_part
from tracesim.batch._score_rows import EvaluatorSpec, build_evaluators, scores_runs
from tracesim.batch._sources import PathLike, Records, Spans
from tracesim.batch._summary import BatchReport, Tally

if TYPE_CHECKING:
    from distributed import Client

    from tracesim.batch._parts import Part

__all__ = ["ADDRESS_ENV", "score"]

ADDRESS_ENV = "TRACESIM_DASK_ADDRESS"
_RETRIES = 2
_INSTALL = "pip install 'tracesim[dask]'"


def score(
    source: PathLike | Sequence[PathLike] | Records | Spans,
    *,
    evaluators: Sequence[EvaluatorSpec],
    output: PathLike,
    client: Client | str | None = None,
    engine: Literal["dask", "local"] = "dask",
    output_format: OutputFormat | None = None,
    workers: int | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
) -> BatchReport:
    """Score every record of ``source`` with ``evaluators``; write the results under ``output``.

    ``source`` is a path, glob or fsspec URL of JSONL, CSV or Parquet files (or a list of
    them), a `Records` for other column names, or `Spans` for the spans of trace files.
    ``output`` is a directory (or URL prefix) that gets one ``part-NNNNN.parquet`` file per
    part (``.jsonl`` with ``output_format="jsonl"``, or an ``output`` ending in ``.jsonl``):
    each record's keys, ``bad_row`` (why it was not scored, or null) and `score_frame`'s
    columns. A directory that already holds results is refused unless ``overwrite``.

    Run evaluators (``trajectory_match``, ``tool_correctness``, ``run_budget``...) score a
    span's run, rebuilt from the spans of its trace (each part then holds whole traces), against
    its ``tracesim.expected.tool_calls``; a data row's ``tool_calls`` column against its
    ``expected_tool_calls``. Their results add ``<name>.details`` (JSON: the missing, extra and
    mismatched calls), and the results the ``tool_calls`` and ``expected_tool_calls`` columns.

    The cluster: ``client`` (a ``distributed.Client`` or a scheduler address), else the
    address in ``TRACESIM_DASK_ADDRESS``, else a ``LocalCluster`` of ``workers`` processes
    (one per core by default) started for this call and closed after it. ``engine="local"``
    scores the parts one after another in this process instead. The progress bar shows on a
    terminal (``progress`` forces it on or off).

    Raises:
        tracesim.ConfigError: a bad evaluator. SourceError: no file matches, no output column.
        FileExistsError: ``output`` holds results and ``overwrite`` is false.

    Example:
        >>> from tracesim import batch
        >>> report = batch.score("answers/*.jsonl", evaluators=["levenshtein", "rouge", "bleu"],
        ...                      output="scores/")  # doctest: +SKIP
        >>> report.records, report.tallies["rouge"].mean  # doctest: +SKIP
        (1000000, 0.4127)
    """
    records = source if isinstance(source, (Records, Spans)) else Records(source)
    specs = tuple(_portable(spec) for spec in ([evaluators] if isinstance(evaluators, str) else evaluators))
    built = build_evaluators(specs)  # a bad config fails here, not in every task
    root = os.fspath(output)
    fmt: OutputFormat = output_format or ("jsonl" if root.rstrip("/").endswith(".jsonl") else "parquet")
    runs = any(scores_runs(ev) for ev in built)
    # A run is rebuilt from its trace's spans: with run evaluators, a part keeps its traces whole.
    parts = records.parts(whole_traces=True) if runs and isinstance(records, Spans) else records.parts()
    _prepare(root, overwrite)
    job = Job(records, specs, Sink(root, fmt))
    report = BatchReport(root, {ev.name: Tally(ev.threshold) for ev in built})
    known = [part.rows for part in parts]
    total = None if None in known else sum(n for n in known if n is not None)
    with _progress(total, progress) as advance:
        if engine == "local":
            for index, part in enumerate(parts):
                summary = run_part(job, index, part)
                report.add(summary)
                advance(summary.records)
        else:
            with _client(client, workers) as dask_client:
                _run(dask_client, job, parts, report, advance)
    _remove_leftovers(root)
    return report


def _portable(spec: EvaluatorSpec) -> EvaluatorSpec:
    """A ``"TYPE:key=value"`` spec as its config mapping: what workers build (and cache) from."""
    from tracesim.evaluators import parse_spec

    return parse_spec(spec) if isinstance(spec, str) else spec


def _run(
    client: Client, job: Job, parts: list[Part], report: BatchReport, advance: Callable[[int], None]
) -> None:
    from distributed import as_completed

    futures = {
        client.submit(run_part, job, i, part, retries=_RETRIES, pure=False): i for i, part in enumerate(parts)
    }
    for future in as_completed(futures):  # type: ignore[no-untyped-call]
        index = futures[future]
        if future.status == "error":
            error = future.exception()
            report.failed_parts[index] = f"{type(error).__name__}: {error}"
            continue
        summary = future.result()
        report.add(summary)
        advance(summary.records)
        future.release()  # the summary is counted: let the cluster forget it


@contextmanager
def _client(client: Client | str | None, workers: int | None) -> Iterator[Client]:
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise ImportError(f"scoring on Dask needs the 'dask' extra: {_INSTALL}") from exc
    if isinstance(client, Client):
        yield client  # the caller's: neither closed nor resized here
        return
    # Read here rather than in tracesim's settings, so that a cluster is chosen per call.
    address = client or os.environ.get(ADDRESS_ENV) or None
    if address is not None:
        with Client(address) as remote:  # type: ignore[no-untyped-call]
            yield remote
        return
    # One single-threaded process per core: the text metrics are Python code that holds the GIL.
    # The dashboard on any free port: its default, 8787, may be taken (and None does not turn it off).
    size = workers or os.cpu_count() or 1
    options = {"n_workers": size, "threads_per_worker": 1, "processes": True, "dashboard_address": ":0"}
    with LocalCluster(**options) as cluster, Client(cluster) as local:  # type: ignore[no-untyped-call]
        yield local


def _prepare(root: str, overwrite: bool) -> None:
    """Create the results directory; refuse (or, with ``overwrite``, clear) earlier results in it."""
    if is_url(root):
        import fsspec  # type: ignore[import-untyped,unused-ignore]

        fs, path = fsspec.core.url_to_fs(root)
        fs.makedirs(path, exist_ok=True)
        earlier = fs.glob(f"{path.rstrip('/')}/part-*")
        remove: Callable[[str], Any] = fs.rm
    else:
        os.makedirs(root, exist_ok=True)
        earlier = glob.glob(os.path.join(glob.escape(root), "part-*"))
        remove = os.unlink
    if earlier and not overwrite:
        raise FileExistsError(
            f"{root} already holds results ({len(earlier)} part files); pass overwrite=True"
        )
    for path in earlier:
        remove(path)  # an earlier run's parts would mix with this one's: no stale row survives


def _remove_leftovers(root: str) -> None:
    """Delete the temporary files of tasks killed while writing (their part was written again)."""
    if not is_url(root):
        for pattern in ("part-*.tmp", ".part-*"):  # `tracesim._outputs.write_bytes_of` names its own
            for path in glob.glob(os.path.join(glob.escape(root), pattern)):
                with suppress(FileNotFoundError):  # a task still running renamed it in place
                    os.unlink(path)


@contextmanager
def _progress(total: int | None, show: bool | None) -> Iterator[Callable[[int], None]]:
    from rich.console import Console
    from rich.progress import Progress

    console = Console(file=_outputs.stream(sys.stderr))
    disable = not console.is_terminal if show is None else not show
    with Progress(console=console, disable=disable) as bar:
        task = bar.add_task("scoring", total=total)
        yield lambda rows: bar.advance(task, rows)
