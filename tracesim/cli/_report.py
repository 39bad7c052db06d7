"""``tracesim report [FILE...]``: latency, errors, scores, and LLM tokens and cost from trace files.

LLM calls are priced with the ``prices`` of ``tracesim.yaml`` (or ``--config``) merged over the
shipped table. Exit status: 0 when the report was produced and every ``--fail-under`` gate
held; 1 when a gate failed (pass rate below the minimum, or no result with a pass/fail
decision); 2 for usage errors: a malformed ``--fail-under``, a file that does not exist or
cannot be read, an ``--html`` path that cannot be written, a configuration file with a bad
value, or a ``--fail-under`` evaluator that does not occur in the files (a misspelt name should
not pass or fail a build quietly).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracesim import _outputs
from tracesim.cli._show import add_config_argument, configured_prices, positive_int

if TYPE_CHECKING:
    from rich.console import Console


__all__ = ["add_arguments", "run"]

_DEFAULT_FILE = Path(".tracesim/traces.jsonl")
_EXIT_OK, _EXIT_GATE, _EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``report`` options."""
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="OTLP/JSON-lines trace files, or directories of *.jsonl files "
        f"(default: {_DEFAULT_FILE} and its rotated copies)",
    )
    parser.add_argument(
        "--group-by",
        metavar="ATTR",
        help="split both tables by a span or resource attribute (service.name, gen_ai.agent.name, user.id)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument("--html", metavar="OUT.html", type=Path, help="also write a self-contained HTML page")
    parser.add_argument(
        "--fail-under",
        metavar="EVALUATOR=RATE",
        action="append",
        default=[],
        type=_gate,
        help="exit 1 when EVALUATOR's pass rate is below RATE (0.8 or 80%%); repeatable",
    )
    parser.add_argument(
        "--top",
        metavar="N",
        type=positive_int,
        default=None,
        help="LLM usage: list the N most expensive traces and calls (default 10)",
    )
    add_config_argument(parser)


def _gate(spec: str) -> Any:
    from tracesim._report import parse_gate

    try:
        return parse_gate(spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    """Read the files, print the report, write the page, check the gates."""
    from tracesim._report import TOP, check_gates, gate_line, print_report, read_report, render_html
    from tracesim._terminal import json_for_terminal, visible

    prices, problem = configured_prices(args.config)
    if problem is not None:
        return _usage_error(problem)
    try:
        files = resolve_files(args.files)
    except FileNotFoundError as exc:
        return _usage_error(str(exc))
    try:
        # Redacted as it is read: a secret a table would cut or wrap is gone before it is drawn.
        report = read_report(files, group_by=args.group_by, prices=prices, top=args.top or TOP, redact=True)
    except OSError as exc:  # exists but cannot be read; a failed read() names no file
        where = exc.filename or ", ".join(map(str, files))
        return _usage_error(f"cannot read {where}: {exc.strerror or exc}")
    for message in report.warnings:
        _outputs.echo(f"tracesim report: warning: {visible(message)}", file=sys.stderr)
    gates = check_gates(report, args.fail_under)
    if args.json:
        document = report.to_dict()
        document["gates"] = [g.to_dict() for g in gates]
        dumped = json.dumps(_outputs.clean(document), indent=2, allow_nan=False, ensure_ascii=False)
        _outputs.echo(json_for_terminal(dumped))
    else:
        print_report(report, _console())
    if args.html is not None:
        try:
            _outputs.write_text(args.html, render_html(report, gates))
        except OSError as exc:
            return _usage_error(f"cannot write {args.html}: {exc.strerror or exc}")
        _outputs.echo(f"tracesim report: wrote {visible(str(args.html))}", file=sys.stderr)
    for gate in gates:
        _outputs.echo(f"tracesim report: {gate_line(gate)}", file=sys.stderr)
    if any(g.outcome == "missing" for g in gates):
        known = ", ".join(e.name for e in report.evaluator_totals) or "none"
        return _usage_error(f"--fail-under names an evaluator that is not in the files (found: {known})")
    return _EXIT_OK if all(g.ok for g in gates) else _EXIT_GATE


def resolve_files(names: list[str]) -> list[Path]:
    """The files to read: each named file, each ``*.jsonl`` in a named directory.

    With no names: the ``jsonl_path`` configured here (``.tracesim/traces.jsonl``) and its
    rotated copies (``traces.1.jsonl``, ...), oldest first. A path named twice is read once.

    Raises:
        FileNotFoundError: a named path does not exist, or there is no default file.
    """
    if not names:
        from tracesim.cli._where import default_trace_file, missing_file_message

        default = Path(default_trace_file())
        found = _with_rotations(default)
        if not found:
            example = "name the files to read, e.g. tracesim report traces.jsonl"
            raise FileNotFoundError(f"{missing_file_message([str(default)])}; {example}")
        return found
    files: list[Path] = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            files.extend(sorted(path.glob("*.jsonl"), key=_rotation_order))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"no such file: {name}")
    seen: set[str] = set()
    unique = []
    for path in files:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


def _with_rotations(path: Path) -> list[Path]:
    rotated = [p for p in path.parent.glob(f"{path.stem}.*{path.suffix}") if _rotation_number(p) is not None]
    current = [path] if path.is_file() else []
    return sorted(rotated, key=_rotation_order) + current


def _rotation_number(path: Path) -> int | None:
    match = re.fullmatch(r".*\.(\d+)", path.stem)
    return int(match.group(1)) if match else None


def _rotation_order(path: Path) -> tuple[str, int]:
    # traces.2.jsonl (older) before traces.1.jsonl before traces.jsonl; other names by name.
    number = _rotation_number(path)
    stem = path.stem.rsplit(".", 1)[0] if number is not None else path.stem
    return (stem, -(number if number is not None else 0))


def _console() -> Console:
    """Where the tables go: a terminal's own width; into a pipe or file, ``COLUMNS`` or `PIPE_WIDTH`.

    Into a pipe, `print_report` also draws each table as wide as its cells need, so CI logs
    get whole names and numbers even where ``COLUMNS`` is narrow.
    """
    from rich.console import Console

    from tracesim._report import PIPE_WIDTH

    if sys.stdout.isatty():  # rich reads the terminal's size (or COLUMNS)
        return Console(file=_outputs.stream(sys.stdout), highlight=False, soft_wrap=False)
    columns = os.environ.get("COLUMNS", "").strip()
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH
    return Console(file=_outputs.stream(sys.stdout), width=width, highlight=False, soft_wrap=False)


def _usage_error(message: str) -> int:
    from tracesim._terminal import visible

    _outputs.echo(f"tracesim report: error: {visible(message)}", file=sys.stderr)
    return _EXIT_USAGE
