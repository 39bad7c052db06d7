"""``tracesim eval``: score a JSONL or CSV file of outputs offline, on all cores.

Each row needs an output column and usually an expected column (names configurable). One
JSON line per row goes to the results file; a summary table per evaluator (count, mean,
pass rate, skipped, errors) goes to the terminal. ``--fail-under NAME=RATE`` turns the run
into a CI gate, parsed and worded as ``tracesim report`` does. A bad row (not JSON, nested too
deeply to parse, not an object) is reported with its line number and skipped; the rest is
scored. Every results line is strict JSON: a value JSON cannot hold (NaN, an infinity from
``1e999``, a list nested 64 levels deep) is written as ``null``. Exit 2 for usage errors,
unreadable data and an unwritable results file.

Agents' runs: run evaluators (``trajectory_match``, ``tool_correctness``, ``run_budget``...)
score a row's ``tool_calls`` column (the calls the agent made, JSON ``[{"name", "arguments"}]``)
against its ``expected_tool_calls``; string evaluators keep scoring the output. A cell there
that is not a list of tool calls is a bad row naming the column and the item. The results line
carries both lists beside each result's details (the missing, extra and mismatched calls), and
the summary names the first failed runs and how they differ.

``--engine dask`` scores the data on a Dask cluster instead (``tracesim.batch.score``): a
``LocalCluster`` of ``--workers`` processes, or the cluster at ``--scheduler`` or
``TRACESIM_DASK_ADDRESS``. It also reads Parquet, globs and fsspec URLs, and trace files
(``--format traces`` with ``--span``/``--kind``), and writes a directory of Parquet (or
JSONL) parts; bad rows are counted by reason. See docs/batch.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tracesim import _outputs
from tracesim.batch import Tally
from tracesim.batch._summary import print_table, tokens_of
from tracesim.cli._eval_io import (
    BadRow,
    Columns,
    Row,
    UsageError,
    count_rows,
    dumps,
    finite,
    read_rows,
    visible,
)

if TYPE_CHECKING:
    from tracesim._report import Gate

__all__ = ["add_arguments", "run"]

DEFAULT_EVALUATORS = ("levenshtein", "f1", "rouge")
_CHUNK = 64
_MAX_REPORTED_BAD_ROWS = 20

# per result: name, status, score, passed, model tokens used, how a failed run differs (or None)
Summary = list[tuple[str, str, float | None, bool | None, int, str | None]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``tracesim eval``."""
    parser.add_argument(
        "data",
        nargs="?",
        help="a .jsonl or .csv file with output and expected columns (with --engine dask also .parquet, "
        "a glob, a URL, or a trace file)",
    )
    parser.add_argument(
        "-e",
        "--evaluator",
        dest="evaluators",
        action="append",
        metavar="SPEC",
        help="TYPE or TYPE:key=value,... e.g. levenshtein:threshold=0.8 (repeatable; "
        f"default: {' '.join(DEFAULT_EVALUATORS)})",
    )
    parser.add_argument(
        "--output-col", default="output", help="column holding the output to score (default: output)"
    )
    parser.add_argument(
        "--expected-col", default="expected", help="column holding the reference (default: expected)"
    )
    parser.add_argument(
        "--input-col", default="input", help="column passed as input= when present (default: input)"
    )
    parser.add_argument(
        "--id-col", default="id", help="column copied into each result line when present (default: id)"
    )
    parser.add_argument(
        "--tool-calls-col",
        default="tool_calls",
        help="column of the tool calls an agent made, JSON [{name, arguments}, ...], that run evaluators "
        "(trajectory_match, tool_correctness, ...) score (default: tool_calls)",
    )
    parser.add_argument(
        "--expected-tool-calls-col",
        default="expected_tool_calls",
        help="column of the tool calls expected, compared with --tool-calls-col "
        "(default: expected_tool_calls)",
    )
    parser.add_argument(
        "--format",
        choices=("jsonl", "csv", "parquet", "traces"),
        help="file format (default: from the file suffix); parquet and traces need --engine dask",
    )
    parser.add_argument(
        "-o",
        "--out",
        help="results file, one JSON line per row with its input, output, expected and results "
        "(default: DATA.scores.jsonl beside DATA; - for stdout)",
    )
    parser.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    parser.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="EVALUATOR=RATE",
        help="exit 1 when EVALUATOR's pass rate is below RATE (0.8 or 80%%); errors count as failures "
        "(repeatable)",
    )
    parser.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    _add_dask_arguments(parser)
    parser.add_argument("--list", action="store_true", help="list the evaluator types and exit")


def _add_dask_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("batch scoring on Dask (the 'dask' extra)")
    group.add_argument(
        "--engine", choices=("local", "dask"), default="local", help="where to score (default: local)"
    )
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: $TRACESIM_DASK_ADDRESS, "
        "else a local cluster of --workers processes)",
    )
    group.add_argument("--span", metavar="GLOB", help="--format traces: score the spans with this name")
    group.add_argument("--kind", help="--format traces: score the spans of this kind (agent, llm, chat...)")
    group.add_argument(
        "--golden",
        metavar="FILE",
        help="--format traces: expected outputs and expected_tool_calls (JSONL or CSV, as tracesim.Golden "
        "reads it) for the spans that recorded none, looked up by the span's input",
    )
    group.add_argument(
        "--golden-key",
        default="input",
        metavar="ARG",
        help="--golden: the traced function's argument to look up, and the file's column (default: input)",
    )
    group.add_argument(
        "--out-format",
        choices=("parquet", "jsonl"),
        help="--engine dask: results as Parquet or JSONL parts (default: parquet, or jsonl for -o X.jsonl)",
    )
    group.add_argument(
        "--overwrite", action="store_true", help="--engine dask: replace the results already in -o DIR"
    )


# -- scoring (in worker processes, or inline) --------------------------------------------------

_worker_evaluators: list[Any] = []


def _init_worker(configs: list[dict[str, Any]]) -> None:
    from tracesim.evaluators import from_config

    _worker_evaluators[:] = [from_config(config) for config in configs]


def _warm_up() -> int:
    return os.getpid()


def _score_chunk(chunk: list[Row | BadRow]) -> list[tuple[str, Summary | None, int]]:
    """Score rows; return each row's JSON line, (name, status, score, passed...) per evaluator, and
    its line number."""
    from tracesim.batch import score_rows

    # the core every engine shares: the same numbers as `--engine dask` and tracesim.batch
    from tracesim.batch._partition import run_calls
    from tracesim.batch._score_rows import scores_runs

    run_scorers = {ev.name for ev in _worker_evaluators if scores_runs(ev)}

    rows = [row for row in chunk if len(row) != 2]
    runs = [row[5] if len(row) == 6 else None for row in rows]
    triples = [(row[2], row[3], row[4]) for row in rows]
    results = iter(score_rows(_worker_evaluators, triples, runs if any(runs) else None))
    scored: list[tuple[str, Summary | None, int]] = []
    for row in chunk:
        if len(row) == 2:
            bad = {"line": row[0], "status": "bad_row", "error": row[1]}
            scored.append((dumps(_outputs.clean(bad)), None, row[0]))
            continue
        number, row_id = row[0], row[1]
        found = next(results)
        line: dict[str, Any] = {"line": number}
        if row_id is not None:
            line["id"] = row_id
        # What was scored sits beside its scores: finding the failing rows needs no join.
        if row[4] is not None:
            line["input"] = row[4]
        line["output"], line["expected"] = row[2], row[3]
        if len(row) == 6:  # the calls the run made and those expected, as the run evaluators read them
            line["tool_calls"], line["expected_tool_calls"] = run_calls(row[5])
        line["results"] = {r.name: r.model_dump(mode="json", exclude={"name"}) for r in found}
        summary: Summary = [
            (r.name, r.status, finite(r.score), r.passed, tokens_of(r), _differences(r, run_scorers))
            for r in found
        ]
        # Redacted as data here (a secret JSON escapes is still found), and again as a line when written.
        scored.append((dumps(_outputs.clean(line)), summary, number))
    return scored


def _differences(result: Any, run_scorers: set[str]) -> str | None:
    """How a failed run differs from the expected one (`call_differences`), for the summary."""
    from tracesim.batch._summary import call_differences

    return call_differences(result) if result.passed is False and result.name in run_scorers else None


# -- summary ----------------------------------------------------------------------------------


@dataclass
class Run:
    tallies: dict[str, Tally]
    source: str = ""
    rows: int = 0
    bad_rows: list[tuple[int, str]] = field(default_factory=list)
    failed_runs: list[tuple[int, str, str]] = field(default_factory=list)

    def record(self, summary: Summary | None, number: int = 0) -> None:
        if summary is None:
            return
        self.rows += 1
        for name, status, score, passed, tokens, differences in summary:
            self.tallies[name].add(status, score, passed, tokens)
            if differences is not None and len(self.failed_runs) < _MAX_REPORTED_BAD_ROWS:
                self.failed_runs.append((number, name, differences))


def _print_summary(run: Run, console: Any, out_label: str) -> None:
    from rich.text import Text

    from tracesim.batch._summary import print_failed_runs

    print_table(run.tallies, run.rows, console)
    print_failed_runs([(run.source, number, name, why) for number, name, why in run.failed_runs], console)
    if run.bad_rows:
        lines = ", ".join(str(number) for number, _ in run.bad_rows[:_MAX_REPORTED_BAD_ROWS])
        more = "" if len(run.bad_rows) <= _MAX_REPORTED_BAD_ROWS else ", ..."
        console.print(f"{len(run.bad_rows)} bad rows skipped (lines {lines}{more})")
    # Redacted here, not only by the console's stream: rich may wrap the path over two lines.
    console.print(Text(f"results: {visible(_outputs.text(out_label))}"))


# -- the command ------------------------------------------------------------------------------


def _build(specs: list[str]) -> tuple[list[dict[str, Any]], list[Any]]:
    from tracesim._errors import TracesimError
    from tracesim.evaluators import from_config, parse_spec

    configs, evaluators = [], []
    for spec in specs:
        try:
            config = parse_spec(spec)
            evaluators.append(from_config(config, source=f"-e {spec}"))
        except TracesimError as exc:
            raise UsageError(str(exc)) from None
        configs.append(config)
    seen: set[str] = set()
    for ev in evaluators:
        missing = getattr(ev, "missing_data", ())
        if missing:  # online, its results would be errors; offline, every row would be: say so now
            from tracesim.evaluators import MissingNLTKDataError

            raise UsageError(str(MissingNLTKDataError(missing, ev.type_name)))
        if ev.name in seen:
            raise UsageError(
                f"two evaluators are named {ev.name!r}; give one a name, e.g. -e {ev.type_name}:name=..."
            )
        seen.add(ev.name)
    return configs, evaluators


def _gates(items: list[str], evaluators: list[Any]) -> list[Gate]:
    """Parse ``--fail-under`` as ``tracesim report`` does; the evaluator must exist and have a threshold."""
    from tracesim._report import parse_gate

    by_name = {ev.name: ev for ev in evaluators}
    gates = []
    for item in items:
        try:
            gate = parse_gate(item)
        except ValueError as exc:
            raise UsageError(f"--fail-under: {exc}") from None
        name = gate.evaluator
        if name not in by_name:
            raise UsageError(
                f"--fail-under {item!r}: no evaluator named {name!r} (have: {', '.join(by_name)})"
            )
        if by_name[name].threshold is None:
            raise UsageError(
                f"--fail-under {item!r}: {name!r} has no threshold; set one, e.g. -e ...:threshold=0.8"
            )
        gates.append(gate)
    return gates


def _mp_context() -> Any:
    import multiprocessing
    import threading

    # fork reuses the loaded NLTK data, but is only safe while no other thread runs.
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _chunks(rows: Iterator[Row | BadRow], run: Run, errors: TextIO) -> Iterator[list[Row | BadRow]]:
    chunk: list[Row | BadRow] = []
    for row in rows:
        if len(row) == 2:
            number, message = row
            run.bad_rows.append((number, message))
            if len(run.bad_rows) <= _MAX_REPORTED_BAD_ROWS:
                line = _outputs.text(f"tracesim eval: line {number}: {message}; row skipped")
                _outputs.echo(visible(line), file=errors)  # redacted before the escape, as every line here
        chunk.append(row)
        if len(chunk) == _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _score_all(
    chunks: Iterator[list[Row | BadRow]], configs: list[dict[str, Any]], workers: int, emit: Any, advance: Any
) -> None:
    if workers <= 1:
        _init_worker(configs)
        for chunk in chunks:
            emit(_score_chunk(chunk))
            advance(len(chunk))
        return
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(
        workers, mp_context=_mp_context(), initializer=_init_worker, initargs=(configs,)
    ) as pool:
        pool.submit(_warm_up).result()  # start the workers before any other thread exists
        pending: deque[Any] = deque()
        for chunk in chunks:
            pending.append((pool.submit(_score_chunk, chunk), len(chunk)))
            while len(pending) >= 2 * workers:
                future, size = pending.popleft()
                emit(future.result())
                advance(size)
        while pending:
            future, size = pending.popleft()
            emit(future.result())
            advance(size)


def run(args: argparse.Namespace) -> int:
    """Run ``tracesim eval``; 0 ok, 1 a ``--fail-under`` gate failed, 2 usage or config error."""
    try:
        return _run(args)
    except UsageError as exc:
        _outputs.echo(f"tracesim eval: error: {visible(_outputs.text(str(exc)))}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    if args.list:
        from tracesim.evaluators import available_types

        _outputs.echo("\n".join(available_types()))
        return 0
    if args.data is None:
        raise UsageError("give a data file: tracesim eval DATA.jsonl -e levenshtein (see --help)")
    if args.engine == "dask":
        return _run_dask(args)
    _refuse_dask_options(args)
    data = Path(args.data)
    if data.is_dir():
        raise UsageError(f"{data} is a directory; give a .jsonl or .csv file")
    if not data.is_file():
        raise UsageError(f"{data}: no such file")
    try:
        data.open("rb").close()
    except OSError as exc:
        raise UsageError(f"cannot read {data}: {exc.strerror or exc}") from None
    fmt = args.format or ("csv" if data.suffix.lower() in (".csv", ".tsv") else "jsonl")
    specs = args.evaluators or list(DEFAULT_EVALUATORS)
    configs, evaluators = _build(specs)
    gates = _gates(args.fail_under, evaluators)
    workers = _workers(args)
    total = count_rows(data, fmt)
    if total is not None and total <= _CHUNK:
        workers = 1  # a pool costs more than it saves on a small file
    to_stdout = args.out == "-"
    out_path = None if to_stdout else Path(args.out or data.with_name(data.stem + ".scores.jsonl"))
    report = Console(file=_outputs.stream(sys.stderr if to_stdout else sys.stdout))
    run_state = Run({ev.name: Tally(ev.threshold) for ev in evaluators}, str(data))
    cols = Columns(
        args.output_col,
        args.expected_col,
        args.input_col,
        args.id_col,
        args.tool_calls_col,
        args.expected_tool_calls_col,
    )
    rows = read_rows(data, fmt, cols)
    if fmt == "csv":
        rows = _prime(rows)  # header problems surface before any output is written
    try:
        with _results(out_path) as out:
            _execute(rows, run_state, configs, workers, out, total, args.no_progress)
    except OSError as exc:  # reading errors are UsageErrors already: this is the results file
        raise UsageError(f"cannot write {out_path or 'stdout'}: {exc.strerror or exc}") from None
    _print_summary(run_state, report, "stdout" if out_path is None else str(out_path))
    if run_state.rows == 0 and run_state.bad_rows:
        number, why = run_state.bad_rows[0]
        _outputs.echo(_no_row_scored(len(run_state.bad_rows), f"line {number}: {why}"), file=sys.stderr)
        return 2
    return _check_gates(gates, run_state.tallies)


def _no_row_scored(rows: int, example: str) -> str:
    """What both engines say when every row was bad (wrong column names, most often)."""
    return visible(
        _outputs.text(
            f"tracesim eval: no row could be scored: all {rows} were bad ({example}); "
            "name the columns with --output-col, --expected-col, --input-col"
        )
    )


def _workers(args: argparse.Namespace) -> int:
    workers: int = args.workers if args.workers is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise UsageError(f"--workers {workers}: expected 1 or more")
    return workers


def _refuse_dask_options(args: argparse.Namespace) -> None:
    if args.format in ("parquet", "traces"):
        raise UsageError(f"--format {args.format} needs --engine dask (pip install 'tracesim[dask]')")
    for option, value in (
        ("--scheduler", args.scheduler),
        ("--out-format", args.out_format),
        ("--golden", args.golden),
    ):
        if value is not None:
            raise UsageError(f"{option} needs --engine dask")


def _run_dask(args: argparse.Namespace) -> int:
    """``--engine dask``: `tracesim.batch.score` on a cluster, then the same table and gates."""
    from rich.console import Console

    from tracesim._errors import TracesimError
    from tracesim.batch import Records, SourceError, Spans, score

    configs, evaluators = _build(args.evaluators or list(DEFAULT_EVALUATORS))
    gates = _gates(args.fail_under, evaluators)
    if args.scheduler is not None and args.workers is not None:
        raise UsageError("--workers sizes the local cluster; the --scheduler cluster has its own workers")
    workers = _workers(args) if args.workers is not None else None
    if (args.span or args.kind or args.golden) and args.format != "traces":
        raise UsageError("--span, --kind and --golden are for trace files: add --format traces")
    out = args.out or _default_out(args.data)
    try:
        source: Records | Spans = (
            Spans(
                args.data,
                name=args.span or "*",
                kind=args.kind,
                golden=args.golden,
                golden_key=args.golden_key,
            )
            if args.format == "traces"
            else Records(
                args.data,
                args.format,
                args.output_col,
                args.expected_col,
                args.input_col,
                args.id_col,
                tool_calls=args.tool_calls_col,
                expected_tool_calls=args.expected_tool_calls_col,
            )
        )
        report = score(
            source,
            evaluators=configs,
            output=out,
            client=args.scheduler,
            workers=workers,
            output_format=args.out_format,
            overwrite=args.overwrite,
            progress=False if args.no_progress else None,
        )
    except (
        SourceError,
        FileExistsError,
        ImportError,
        OSError,
        TracesimError,
    ) as exc:  # TracesimError: --kind
        raise UsageError(str(exc)) from None
    report.print_summary(Console(file=_outputs.stream(sys.stdout)))
    status = _check_gates(gates, report.tallies)
    if report.records and not report.scored and not report.failed_parts:
        reason, count = report.bad_rows.most_common(1)[0]
        _outputs.echo(_no_row_scored(report.records, f"{reason}: {count}"), file=sys.stderr)
        return 2
    return 2 if report.failed_parts else status


def _default_out(data: str) -> str:
    """``DATA.scores/`` beside a local file; a glob or a URL needs ``-o``."""
    from tracesim.batch._files import is_url

    if is_url(data) or any(char in data for char in "*?["):
        raise UsageError(f"give the results directory with -o DIR (the data is {data})")
    path = Path(data)
    return str(path.with_name(path.stem + ".scores"))


@contextmanager
def _results(path: Path | None) -> Iterator[TextIO]:
    """The results stream: standard output (``-o -``) or the file, every line redacted as written."""
    if path is None:
        yield _outputs.stream(sys.stdout)
        return
    with ExitStack() as stack:
        try:
            out = stack.enter_context(_outputs.open_text(path))
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        yield out


def _prime(rows: Iterator[Row | BadRow]) -> Iterator[Row | BadRow]:
    first = next(rows, None)
    if first is None:
        return iter(())
    return _prepend(first, rows)


def _prepend(first: Row | BadRow, rest: Iterator[Row | BadRow]) -> Iterator[Row | BadRow]:
    yield first
    yield from rest


def _execute(
    rows: Iterator[Row | BadRow],
    run_state: Run,
    configs: list[dict[str, Any]],
    workers: int,
    out: TextIO,
    total: int | None,
    no_progress: bool,
) -> None:
    from rich.console import Console
    from rich.progress import Progress

    def emit(scored: list[tuple[str, Summary | None, int]]) -> None:
        for line, summary, number in scored:
            out.write(line + "\n")
            run_state.record(summary, number)

    progress_console = Console(file=_outputs.stream(sys.stderr))
    chunks = _chunks(rows, run_state, sys.stderr)
    with Progress(
        console=progress_console, disable=no_progress or not progress_console.is_terminal
    ) as progress:
        task = progress.add_task("scoring", total=total)

        _score_all(chunks, configs, workers, emit, lambda size: progress.advance(task, size))


def _check_gates(gates: list[Gate], tallies: dict[str, Tally]) -> int:
    from tracesim._report import decide, gate_line

    status = 0
    for gate in gates:
        tally = tallies[gate.evaluator]
        result = decide(gate, tally.passed, tally.judged)
        _outputs.echo(f"tracesim eval: {gate_line(result)}", file=sys.stderr)
        if not result.ok:
            status = 1
    return status
