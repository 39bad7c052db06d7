"""``tracesim eval``: score a JSONL or CSV file of outputs offline, on all cores.

Each row needs an output column and usually an expected column (names configurable). One
JSON line per row goes to the results file; a summary table per evaluator (count, mean,
pass rate, skipped, errors) goes to the terminal. ``--fail-under NAME=RATE`` turns the run
into a CI gate, parsed and worded as ``tracesim report`` does. A bad row (not JSON, nested too
deeply to parse, not an object) is reported with its line number and skipped; the rest is
scored. Every results line is strict JSON: a value JSON cannot hold (NaN, an infinity from
``1e999``, a list nested 64 levels deep) is written as ``null``. Exit 2 for usage errors,
unreadable data and an unwritable results file.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

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

# per result: name, status, score, passed, model tokens used
Summary = list[tuple[str, str, float | None, bool | None, int]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``tracesim eval``."""
    parser.add_argument(
        "data", nargs="?", type=Path, help="a .jsonl or .csv file with output and expected columns"
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
        "--format", choices=("jsonl", "csv"), help="file format (default: from the file suffix)"
    )
    parser.add_argument(
        "-o",
        "--out",
        help="results file, one JSON line per row (default: DATA.scores.jsonl beside DATA; - for stdout)",
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
    parser.add_argument("--list", action="store_true", help="list the evaluator types and exit")


# -- scoring (in worker processes, or inline) --------------------------------------------------

_worker_evaluators: list[Any] = []
_DEFAULT_CONCURRENCY = 8  # model requests in flight per evaluator when it sets none


def _init_worker(configs: list[dict[str, Any]]) -> None:
    from tracesim.evaluators import from_config

    _worker_evaluators[:] = [from_config(config) for config in configs]


def _warm_up() -> int:
    return os.getpid()


def _score_chunk(chunk: list[Row | BadRow]) -> list[tuple[str, Summary | None]]:
    """Score rows; return each row's JSON line and (name, status, score, passed) per evaluator."""
    scored: list[tuple[str, Summary | None]] = []
    judged = _score_async(chunk)  # model calls of the chunk's rows run concurrently
    for row in chunk:
        if len(row) == 2:
            bad = {"line": row[0], "status": "bad_row", "error": row[1]}
            scored.append((dumps(bad), None))
            continue
        number, row_id, output, expected, input_value = row
        known = judged.get(number, {})
        results = [
            known[i] if i in known else ev.evaluate(output, expected, input=input_value)
            for i, ev in enumerate(_worker_evaluators)
        ]
        line: dict[str, Any] = {"line": number}
        if row_id is not None:
            line["id"] = row_id
        line["results"] = {r.name: r.model_dump(mode="json", exclude={"name"}) for r in results}
        summary: Summary = [(r.name, r.status, finite(r.score), r.passed, _tokens(r)) for r in results]
        scored.append((dumps(line), summary))
    return scored


def _score_async(chunk: list[Row | BadRow]) -> dict[int, dict[int, Any]]:
    """Results of the async (model-backed) evaluators for every row of ``chunk``, by line and index.

    Their requests go out together, at most ``max_concurrency`` at a time per evaluator (8 when
    not set), instead of one row after another.
    """
    wanted = [(i, ev) for i, ev in enumerate(_worker_evaluators) if ev.is_async]
    rows = [row for row in chunk if len(row) == 5]
    if not wanted or not rows:
        return {}

    async def run() -> dict[int, dict[int, Any]]:
        limits = {i: asyncio.Semaphore(ev.max_concurrency or _DEFAULT_CONCURRENCY) for i, ev in wanted}

        async def one(i: int, ev: Any, row: Any) -> tuple[int, int, Any]:
            number, _, output, expected, input_value = row
            async with limits[i]:
                try:
                    result = await asyncio.wait_for(
                        ev.aevaluate(output, expected, input=input_value), ev.timeout_s
                    )
                except asyncio.TimeoutError:
                    result = ev._error_result(
                        "timeout", f"no result within timeout_s={ev.timeout_s}", 0.0, {}
                    )
            return number, i, result

        done = await asyncio.gather(*(one(i, ev, row) for row in rows for i, ev in wanted))
        found: dict[int, dict[int, Any]] = {}
        for number, i, result in done:
            found.setdefault(number, {})[i] = result
        return found

    return asyncio.run(run())


def _tokens(result: Any) -> int:
    usage = result.details.get("usage") if isinstance(result.details, dict) else None
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    return total if isinstance(total, int) and not result.details.get("cached") else 0


# -- summary ----------------------------------------------------------------------------------


@dataclass
class Tally:
    threshold: float | None
    count: int = 0
    total: float = 0.0
    passed: int = 0
    judged: int = 0
    skipped: int = 0
    errors: int = 0
    tokens: int = 0

    def add(self, status: str, score: float | None, passed: bool | None, tokens: int = 0) -> None:
        self.tokens += tokens
        if status == "skipped":
            self.skipped += 1
        elif status == "error":
            self.errors += 1
            self.judged += 1
        else:
            self.count += 1
            self.total += score or 0.0
            if passed is not None:
                self.judged += 1
                self.passed += passed

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None


@dataclass
class Run:
    tallies: dict[str, Tally]
    rows: int = 0
    bad_rows: list[tuple[int, str]] = field(default_factory=list)

    def record(self, summary: Summary | None) -> None:
        if summary is None:
            return
        self.rows += 1
        for name, status, score, passed, tokens in summary:
            self.tallies[name].add(status, score, passed, tokens)


def _print_summary(run: Run, console: Any, out_label: str) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"tracesim eval: {run.rows} rows scored", title_justify="left")
    costed = any(tally.tokens for tally in run.tallies.values())  # a model judged: show its cost
    headings = ["evaluator", "count", "mean", "pass rate", "threshold", "skipped", "errors"]
    for heading in [*headings, "tokens"] if costed else headings:
        table.add_column(heading, justify="left" if heading == "evaluator" else "right")
    for name, tally in run.tallies.items():
        mean, rate = tally.mean, tally.pass_rate
        cells = [
            "-" if mean is None else f"{mean:.4f}",
            "-" if rate is None else f"{rate:.1%}",
            "-" if tally.threshold is None else f"{tally.threshold:g}",
            str(tally.skipped),
            str(tally.errors),
        ]
        table.add_row(
            Text(visible(name)), str(tally.count), *cells, *([f"{tally.tokens:,}"] if costed else [])
        )
    console.print(table)
    if run.bad_rows:
        lines = ", ".join(str(number) for number, _ in run.bad_rows[:_MAX_REPORTED_BAD_ROWS])
        more = "" if len(run.bad_rows) <= _MAX_REPORTED_BAD_ROWS else ", ..."
        console.print(f"{len(run.bad_rows)} bad rows skipped (lines {lines}{more})")
    console.print(Text(f"results: {visible(out_label)}"))


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
                print(visible(f"tracesim eval: line {number}: {message}; row skipped"), file=errors)
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
        print(f"tracesim eval: error: {visible(str(exc))}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    if args.list:
        from tracesim.evaluators import available_types

        print("\n".join(available_types()))
        return 0
    data: Path | None = args.data
    if data is None:
        raise UsageError("give a data file: tracesim eval DATA.jsonl -e levenshtein (see --help)")
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
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise UsageError(f"--workers {workers}: expected 1 or more")
    total = count_rows(data, fmt)
    if total is not None and total <= _CHUNK:
        workers = 1  # a pool costs more than it saves on a small file
    to_stdout = args.out == "-"
    out_path = None if to_stdout else Path(args.out or data.with_name(data.stem + ".scores.jsonl"))
    report = Console(stderr=to_stdout)
    run_state = Run({ev.name: Tally(ev.threshold) for ev in evaluators})
    cols = Columns(args.output_col, args.expected_col, args.input_col, args.id_col)
    rows = read_rows(data, fmt, cols)
    if fmt == "csv":
        rows = _prime(rows)  # header problems surface before any output is written
    out = sys.stdout if out_path is None else _open_out(out_path)
    try:
        _execute(rows, run_state, configs, workers, out, total, args.no_progress)
    except OSError as exc:  # reading errors are UsageErrors already: this is the results file
        raise UsageError(f"cannot write {out_path or 'stdout'}: {exc.strerror or exc}") from None
    finally:
        if out is not sys.stdout:
            out.close()
    _print_summary(run_state, report, "stdout" if out_path is None else str(out_path))
    return _check_gates(gates, run_state)


def _open_out(path: Path) -> TextIO:
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


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

    def emit(scored: list[tuple[str, Summary | None]]) -> None:
        for line, summary in scored:
            out.write(line + "\n")
            run_state.record(summary)

    progress_console = Console(stderr=True)
    chunks = _chunks(rows, run_state, sys.stderr)
    with Progress(
        console=progress_console, disable=no_progress or not progress_console.is_terminal
    ) as progress:
        task = progress.add_task("scoring", total=total)

        _score_all(chunks, configs, workers, emit, lambda size: progress.advance(task, size))


def _check_gates(gates: list[Gate], run_state: Run) -> int:
    from tracesim._report import decide, gate_line

    status = 0
    for gate in gates:
        tally = run_state.tallies[gate.evaluator]
        result = decide(gate, tally.passed, tally.judged)
        print(f"tracesim eval: {gate_line(result)}", file=sys.stderr)
        if not result.ok:
            status = 1
    return status
