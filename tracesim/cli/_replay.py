"""``tracesim replay FILE...``: send local trace files to an OTLP/HTTP endpoint.

Lines go out as they are (OTLP/JSON); endpoints that only take OTLP/protobuf (415, as Arize
Phoenix answers) get the same requests converted losslessly. Accepted lines are recorded in
``<file>.replayed`` by their content (one ledger for a file and its rotated copies), so running
the command again, before or after rotation, sends only what was not accepted yet (``--force``
sends everything again). A line that is not OTLP/JSON is skipped, named in the summary, and the
rest is sent.

Sent to Phoenix (found by asking the endpoint, or said with ``--annotations``), the evaluation
results in the lines also become Phoenix span annotations, where Phoenix shows scores;
``--no-annotations`` turns that off. Sent to MLflow (found the same way, or said with
``--assessments``), they become MLflow assessments (feedback, and the expected output as an
expectation); ``--no-assessments`` turns that off. MLflow's experiment comes from ``--headers
x-mlflow-experiment-id=N``, ``OTEL_EXPORTER_OTLP_HEADERS`` or the ``mlflow_experiment_id``
setting (``MLFLOW_EXPERIMENT_ID``).

Exit status: 0 when everything was sent (or had been before); 1 when a request failed or the
endpoint rejected spans; 2 for usage errors (a file that does not exist or cannot be read,
bad ``--headers``). Paths, answers from the endpoint and problems are printed as plain text:
no rich markup is interpreted in them, and control characters are made visible. Everything
printed goes through tracesim's redaction (`tracesim._outputs`): a password in the endpoint's
URL is shown as ``[REDACTED:password]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tracesim import _outputs

if TYPE_CHECKING:
    from rich.console import Console

    from tracesim.batch import ReplayReport

__all__ = ["add_arguments", "run"]

_EXIT_OK, _EXIT_FAILED, _EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``replay`` options."""
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        type=Path,
        help="OTLP/JSON-lines trace files (default: the jsonl_path configured here, .tracesim/traces.jsonl)",
    )
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        help="OTLP/HTTP traces URL or base URL (default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "
        "OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, or http://localhost:4318/v1/traces)",
    )
    parser.add_argument(
        "--headers", metavar="K=V,...", default="", help="extra request headers, e.g. api_key=..."
    )
    parser.add_argument(
        "--batch-size", metavar="N", type=int, default=512, help="most spans per request (default 512)"
    )
    parser.add_argument(
        "--encoding",
        choices=("auto", "json", "protobuf"),
        default="auto",
        help="auto: OTLP/JSON as is, protobuf if the endpoint answers 415 (default)",
    )
    parser.add_argument(
        "--timeout", metavar="SECONDS", type=_seconds, default=10.0, help="per request (default 10)"
    )
    parser.add_argument("--force", action="store_true", help="also send lines a previous run delivered")
    parser.add_argument(
        "--annotations",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also post the evaluation results as Phoenix span annotations "
        "(default: when the endpoint is Phoenix)",
    )
    parser.add_argument(
        "--assessments",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also post the evaluation results as MLflow assessments (default: when the endpoint is MLflow)",
    )


def _seconds(raw: str) -> float:
    import math

    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {raw!r}") from None
    if not (math.isfinite(value) and 0 < value <= 86_400):  # NaN, inf and <= 0 break the HTTP client
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 86400, got {raw!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Replay the files and print a summary."""
    from rich.console import Console

    from tracesim.batch import replay
    from tracesim.cli._where import default_trace_file, missing_file_message
    from tracesim.exporters._otlp import parse_headers

    err = Console(file=_outputs.stream(sys.stderr), highlight=False)
    if not args.files:
        args.files = [Path(default_trace_file())]
    missing = [str(p) for p in args.files if not p.is_file()]
    if missing:
        err.print(f"[red]error:[/red] {_plain(missing_file_message(missing))}", soft_wrap=True)
        return _EXIT_USAGE
    if args.batch_size < 1:
        err.print("[red]error:[/red] --batch-size must be at least 1")
        return _EXIT_USAGE
    if args.headers and not parse_headers(args.headers):
        err.print(f"[red]error:[/red] --headers expects k=v,k2=v2, got {_plain(repr(args.headers))}")
        return _EXIT_USAGE

    try:
        with _progress(err, sum(p.stat().st_size for p in args.files)) as advance:
            report = replay(
                args.files,
                endpoint=args.endpoint,
                headers=parse_headers(args.headers),
                batch_size=args.batch_size,
                force=args.force,
                encoding=args.encoding,
                timeout_s=args.timeout,
                on_progress=advance,
                annotations=args.annotations,
                assessments=args.assessments,
            )
    except OSError as exc:  # a file that exists but cannot be read
        err.print(
            f"[red]error:[/red] cannot read {_plain(str(exc.filename))}: {_plain(exc.strerror or str(exc))}"
        )
        return _EXIT_USAGE
    _summary(Console(file=_outputs.stream(sys.stdout), highlight=False), report)
    return _EXIT_OK if report.ok else _EXIT_FAILED


def _plain(text: str) -> str:
    """Text from files or the network, printed as it is: no markup, no control characters, no
    secrets (redacted before rich lays it out: a secret wrapped over two lines is missed by the
    redacting stream behind the console)."""
    from rich.markup import escape

    from tracesim._terminal import visible

    return escape(visible(_outputs.text(text)))


class _progress:
    """A byte progress bar on a terminal; nothing when stderr is not one (CI, pipes)."""

    def __init__(self, console: Console, total: int) -> None:
        from rich.progress import Progress

        self._bar = Progress(console=console, transient=True) if console.is_terminal else None
        self._total = total
        self._done_before = 0  # bytes of the files finished before the current one
        self._last = 0

    def __enter__(self) -> Callable[[int], None] | None:
        if self._bar is None:
            return None
        self._bar.start()
        self._task = self._bar.add_task("replaying", total=self._total)
        return self._advance

    def _advance(self, offset: int) -> None:
        assert self._bar is not None
        if offset < self._last:  # a new file started
            self._done_before += self._last
        self._last = offset
        self._bar.update(self._task, completed=self._done_before + offset)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def _summary(console: Console, report: ReplayReport) -> None:
    from rich.table import Table

    encoding = (
        "OTLP/JSON, as written"
        if report.encoding == "json"
        else "OTLP/protobuf (converted: the endpoint takes no JSON)"
    )
    table = Table(title=f"replay → {_plain(report.endpoint)}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("files", str(report.files))
    table.add_row("requests accepted", str(report.requests))
    table.add_row("spans sent", f"[green]{report.spans}[/green]" if report.spans else "0")
    table.add_row(
        "spans sent before (ledger)",
        f"{report.already_sent_spans} ({report.already_sent} lines)" if report.already_sent else "0",
    )
    table.add_row(
        "bad lines skipped", f"[yellow]{report.skipped_lines}[/yellow]" if report.skipped_lines else "0"
    )
    failed = f"{report.failed_requests} ({report.failed_spans} spans)"
    table.add_row("requests failed", f"[red]{failed}[/red]" if report.failed_requests else "0")
    if report.rejected_spans:
        table.add_row("spans rejected by the endpoint", f"[red]{report.rejected_spans}[/red]")
    if report.phoenix:
        annotations = f"{report.annotations}" + (
            f" ([red]{report.failed_annotations} not delivered[/red])" if report.failed_annotations else ""
        )
        table.add_row("Phoenix annotations", annotations)
    if report.mlflow:
        assessments = f"{report.assessments}" + (
            f" ([red]{report.failed_assessments} not delivered[/red])" if report.failed_assessments else ""
        )
        table.add_row("MLflow assessments", assessments)
        if report.assessments_already_there:
            table.add_row("MLflow assessments there before", str(report.assessments_already_there))
    table.add_row("encoding", encoding)
    console.print(table)
    for problem in report.problems[:20]:  # never wrapped: a path:line stays one piece to copy or grep
        console.print(f"  [yellow]•[/yellow] {_plain(problem)}", soft_wrap=True)
    if len(report.problems) > 20:
        console.print(f"  … and {len(report.problems) - 20} more")
    if report.failed_requests or report.rejected_spans:
        console.print("[red]Some spans were not delivered; run the same command again to retry them.[/red]")
    if report.failed_annotations:
        console.print(
            "[red]Some Phoenix annotations were not delivered; run the same command again to retry "
            "them (their spans are not sent twice).[/red]"
        )
    if report.failed_assessments:
        console.print(
            "[red]Some MLflow assessments were not delivered; run the same command again to retry "
            "them (their spans are not sent twice, nor assessments MLflow has).[/red]"
        )
