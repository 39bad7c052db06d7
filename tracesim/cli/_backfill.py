"""``tracesim backfill RESULTS``: the scores of a batch run over trace files, onto their spans.

``RESULTS`` is a results directory that ``tracesim eval --engine dask --format traces`` (or
``tracesim.batch.score`` over ``Spans``) wrote. ``--to`` appends carrier spans to a trace file
or sends them to an OTLP/HTTP endpoint; ``--phoenix`` posts span annotations, ``--mlflow``
MLflow assessments (feedback on the scored span). A part already
delivered to a destination is not sent again (the ledger in ``RESULTS``); ``--force`` sends it
anyway. Exit status: 0 when every part reached every destination, 1 when some did not (run the
same command again to send them), 2 for usage errors and for inputs that cannot be read (a
ledger line over the input limits, a damaged part file: the message names the file, the line
and the limit). Everything printed goes through tracesim's redaction (`tracesim._outputs`): a
password in a ``--to`` URL is shown as ``[REDACTED:password]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tracesim import _outputs

__all__ = ["add_arguments", "run"]

_EXIT_OK, _EXIT_FAILED, _EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``backfill`` options."""
    parser.add_argument("results", metavar="RESULTS", type=Path, help="results directory of a batch run")
    parser.add_argument(
        "--to",
        metavar="FILE|URL",
        help="carrier spans: a trace file to append to, or an OTLP/HTTP URL (base or /v1/traces)",
    )
    parser.add_argument("--phoenix", metavar="URL", help="Phoenix base URL for span annotations")
    parser.add_argument("--mlflow", metavar="URL", help="MLflow tracking server URL for assessments")
    parser.add_argument("--headers", metavar="K=V,...", default="", help="request headers, e.g. api_key=...")
    parser.add_argument("--force", action="store_true", help="send parts the ledger says were sent")


def run(args: argparse.Namespace) -> int:
    """Send the results and print what was sent."""
    from rich.console import Console

    from tracesim.batch import SourceError, backfill
    from tracesim.exporters._otlp import parse_headers

    err = Console(file=_outputs.stream(sys.stderr), highlight=False)
    if args.to is None and args.phoenix is None and args.mlflow is None:
        err.print(
            "[red]error:[/red] say where to send the scores: --to FILE|URL, --phoenix URL and/or --mlflow URL"
        )
        return _EXIT_USAGE
    try:
        headers = parse_headers(args.headers)
        report = backfill(
            args.results,
            to=args.to,
            phoenix=args.phoenix,
            mlflow=args.mlflow,
            headers=headers,
            force=args.force,
        )
    except (ValueError, FileNotFoundError, SourceError) as exc:
        err.print(f"[red]error:[/red] {_plain(str(exc))}", soft_wrap=True)  # a path stays whole
        return _EXIT_USAGE

    from rich.table import Table

    out = Console(file=_outputs.stream(sys.stdout), highlight=False)
    out.print(f"backfill of {_plain(report.results)}", soft_wrap=True)  # never wrapped
    table = Table(show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("parts sent", str(report.parts))
    table.add_row("parts already sent (ledger)", str(report.already_sent))
    table.add_row("results in the parts sent", str(report.results_sent))
    table.add_row("carrier spans", str(report.carriers))
    table.add_row("Phoenix annotations", str(report.annotations))
    if args.mlflow is not None:
        table.add_row("MLflow assessments", str(report.assessments))
    table.add_row("rows or results with nothing to send", str(report.unscored))
    failed = len(report.failed_parts)
    table.add_row("parts not delivered", f"[red]{failed}[/red]" if failed else "0")
    out.print(table)
    for destination in report.destinations:
        out.print(f"  → {_plain(destination)}", soft_wrap=True)
    for where, why in list(report.failed_parts.items())[:20]:
        out.print(f"  [yellow]•[/yellow] {_plain(where)}: {_plain(why)}", soft_wrap=True)
    if failed:
        out.print("[red]Some parts were not delivered; run the same command again to send them.[/red]")
        return _EXIT_FAILED
    return _EXIT_OK


def _plain(text: str) -> str:
    """Text from files or the network, printed as it is: no markup, no control characters, no
    secrets (redacted before rich lays it out: a secret wrapped over two lines is missed by the
    redacting stream behind the console)."""
    from rich.markup import escape

    from tracesim._terminal import visible

    return escape(visible(_outputs.text(text)))
