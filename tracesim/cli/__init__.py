"""The ``tracesim`` command.

Each subcommand lives in its own module, ``tracesim/cli/_<name>.py``, which defines
``add_arguments(parser)`` and ``run(args) -> int``. Modules keep their heavy imports inside
``run``, so ``tracesim --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main"]

# name -> (module, one-line help)
_COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("_demo", "run the bundled example agent and write its traces (local file by default)"),
    "show": ("_show", "print the trace trees of a JSON-lines trace file"),
    "eval": ("_eval", "score a JSONL or CSV file of outputs offline with evaluators"),
    "experiment": (
        "_experiment",
        "run a task over a dataset, score it, compare with a baseline (CI gate)",
    ),
    "report": ("_report", "summarise latency, errors and scores of trace files"),
    "replay": ("_replay", "send local trace files to an OTLP/HTTP endpoint"),
    "backfill": ("_backfill", "send a batch run's scores onto the spans they score (file, OTLP, Phoenix)"),
    "nlp-data": ("_nlp_data", "download the NLTK data packages the text evaluators need"),
}


def _build_parser() -> argparse.ArgumentParser:
    from tracesim._version import __version__

    parser = argparse.ArgumentParser(prog="tracesim", description="LLM observability on OpenTelemetry.")
    parser.add_argument("--version", action="version", version=f"tracesim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in _COMMANDS.items():
        try:
            module = importlib.import_module(f"tracesim.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tracesim.cli.{module_name}":
                raise
            continue  # not built yet
        command = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tracesim`` command line and return its exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        from tracesim._outputs import stream

        parser.print_help(stream())
        return 2
    status: int = args._run(args)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
