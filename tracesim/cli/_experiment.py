"""``tracesim experiment``: run a task over a dataset and gate CI on the result.

``tracesim experiment run TASK --dataset FILE -e SPEC...`` imports ``TASK``
(``module:function`` importable from the working directory, or ``path/to/file.py:function``),
runs it on every case of the dataset with `tracesim.experiments`, prints a table with the worst
cases first, writes the run as JSON (and optionally an HTML page), and compares it with a
``--baseline`` run. ``tracesim experiment compare RUN BASELINE`` compares two saved runs.

Unless the task's module configured tracesim itself (or ``--no-traces``), the command calls
``tracesim.configure()`` with the usual settings (``tracesim.yaml``, ``TRACESIM_*``), so every run
is a trace in ``.tracesim/traces.jsonl`` by default and the rows name their trace ids.

Exit status: 0 when every gate held; 1 on a regression beyond ``--tolerance`` against the
baseline, a pass rate under ``--min-pass-rate``, or a failed ``--fail-under`` gate; 2 for usage
errors (a bad option, a dataset or task that cannot be loaded, an unreadable baseline: a file
over the input limits of `tracesim._inputs` is one, named with its line and the limit).
Everything printed goes through tracesim's redaction (`tracesim._outputs`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracesim import _outputs
from tracesim.cli._eval_io import UsageError, visible

if TYPE_CHECKING:
    from tracesim.experiments import Comparison, ExperimentReport

__all__ = ["add_arguments", "load_task", "main", "run"]

_EXIT_OK, _EXIT_GATE, _EXIT_USAGE = 0, 1, 2
_RUNS_DIR = Path(".tracesim") / "experiments"
_UNSAFE_IN_NAMES = re.compile(r"[^\w.-]+")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``tracesim experiment run`` and ``tracesim experiment compare``."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    _run_options(
        actions.add_parser(
            "run",
            help="run a task over a dataset, score it, compare with a baseline",
            description="Run TASK on every case of a dataset, score the outputs, print the worst cases, "
            "write the run as JSON (and HTML), and compare it with a baseline run. Exit 1 when a gate "
            "fails, 2 for usage errors.",
        )
    )
    compare_parser = actions.add_parser(
        "compare", help="compare two saved runs", description="Compare a saved run with a baseline run."
    )
    compare_parser.add_argument("run_file", metavar="RUN", type=Path, help="the new run (JSON)")
    compare_parser.add_argument("baseline", metavar="BASELINE", type=Path, help="the baseline run (JSON)")
    compare_parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    _comparison_options(compare_parser)


def _run_options(run_parser: argparse.ArgumentParser) -> None:
    run_parser.add_argument("task", metavar="TASK", help="module:function or path/to/file.py:function")
    run_parser.add_argument(
        "-d", "--dataset", required=True, type=Path, help="a .jsonl, .csv, .yaml or .json file of cases"
    )
    run_parser.add_argument("--input", default="input", help="field holding the input; a,b for several")
    run_parser.add_argument("--expected", help="field holding the expected output (default: expected)")
    run_parser.add_argument("--id", default="id", help="field holding the case id (default: id)")
    run_parser.add_argument(
        "-e",
        "--evaluator",
        dest="evaluators",
        action="append",
        default=[],
        metavar="SPEC",
        help="TYPE or TYPE:key=value,... e.g. levenshtein:threshold=0.8 (repeatable)",
    )
    run_parser.add_argument("--repeat", type=int, default=1, metavar="N", help="runs per case (default 1)")
    run_parser.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="runs in flight (default 8)"
    )
    run_parser.add_argument("--timeout", type=float, metavar="SECONDS", help="time limit per run")
    run_parser.add_argument("--name", help="the experiment's name (default: the task's name)")
    run_parser.add_argument(
        "-o", "--out", type=Path, help=f"write the run here (default: {_RUNS_DIR}/NAME.json)"
    )
    run_parser.add_argument("--html", type=Path, metavar="OUT.html", help="also write a self-contained page")
    run_parser.add_argument("--baseline", type=Path, metavar="RUN.json", help="a saved run to compare with")
    run_parser.add_argument(
        "--min-pass-rate", metavar="RATE", help="exit 1 below this pass rate (0.9 or 90%%)"
    )
    run_parser.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="EVALUATOR=RATE",
        help="exit 1 when EVALUATOR's pass rate is below RATE; errors count as failures (repeatable)",
    )
    run_parser.add_argument(
        "--max-cases", type=int, default=20, metavar="N", help="cases in the table (default 20)"
    )
    run_parser.add_argument("--no-traces", action="store_true", help="do not configure tracesim")
    run_parser.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    _comparison_options(run_parser)


def _comparison_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="ignore changes up to this much (absolute, on scores and rates; default 0)",
    )
    parser.add_argument(
        "--aggregate-only", action="store_true", help="only run-wide numbers can fail; cases are listed"
    )


def main(argv: list[str]) -> int:
    """``tracesim experiment ARGS...`` without the rest of the command line (for tests and scripts)."""
    parser = argparse.ArgumentParser(prog="tracesim experiment")
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run ``tracesim experiment``; 0 ok, 1 a gate failed, 2 usage error."""
    try:
        if args.action == "run":
            return _run(args)
        if args.action == "compare":
            return _compare_files(args)
        raise UsageError(
            "give an action: tracesim experiment run TASK --dataset FILE, or compare RUN BASELINE"
        )
    except UsageError as exc:
        _outputs.echo(f"tracesim experiment: error: {visible(str(exc))}", file=sys.stderr)
        return _EXIT_USAGE


# -- run ------------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    from tracesim.experiments import Dataset, DatasetError
    from tracesim.experiments._run import Experiment

    _check_numbers(args)
    min_rate = _rate(args.min_pass_rate, "--min-pass-rate") if args.min_pass_rate is not None else None
    baseline = _load(args.baseline, "--baseline") if args.baseline is not None else None
    fields = [f.strip() for f in args.input.split(",")] if "," in args.input else args.input
    try:
        dataset = Dataset.from_file(args.dataset, input=fields, expected=args.expected, id=args.id)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    task = load_task(args.task)
    configured = _configure(traced=not args.no_traces)
    try:
        try:
            experiment = Experiment.build(
                dataset, task, args.evaluators, args.concurrency, args.repeat, args.name, args.timeout
            )
        except ValueError as exc:  # ConfigError: a bad evaluator spec
            raise UsageError(str(exc)) from None
        _gates_known(args.fail_under, experiment.evaluators)
        report = _execute(experiment, len(dataset) * args.repeat, args.no_progress)
    finally:
        if configured:
            from tracesim import _runtime

            _runtime.shutdown(None)  # every run's span exported before the command ends
    _outputs.echo(report.table(max_cases=args.max_cases))
    out = args.out or _RUNS_DIR / (_UNSAFE_IN_NAMES.sub("_", report.name) + ".json")
    _write(lambda: report.to_json(_parent_made(out)), out)
    _outputs.echo("\n" + visible(f"run written to {out}"))
    if args.html is not None:
        _write(lambda: report.to_html(args.html), args.html)
        _outputs.echo(visible(f"html report written to {args.html}"))
    status = _EXIT_OK
    if baseline is not None:
        comparison = report.compare(baseline, tolerance=args.tolerance, per_case=not args.aggregate_only)
        _outputs.echo(f"\n{comparison}")
        status = max(status, _EXIT_OK if comparison.ok else _EXIT_GATE)
    return max(status, _check_gates(report, min_rate, args.fail_under))


def _check_numbers(args: argparse.Namespace) -> None:
    for option, value, low in (("--repeat", args.repeat, 1), ("--concurrency", args.concurrency, 1)):
        if value < low:
            raise UsageError(f"{option} {value}: expected {low} or more")
    if args.max_cases < 0:
        raise UsageError(f"--max-cases {args.max_cases}: expected 0 or more")
    if not args.tolerance >= 0:
        raise UsageError(f"--tolerance {args.tolerance}: expected 0 or more, e.g. 0.02")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout {args.timeout}: expected a number of seconds above 0")


def _rate(text: str, option: str) -> float:
    from tracesim._report import parse_gate

    try:
        return parse_gate(f"run={text}").min_rate
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected a fraction (0.9) or a percentage (90%)") from None


def _gates_known(specs: list[str], evaluators: tuple[Any, ...]) -> None:
    from tracesim._report import parse_gate

    names = {e.name: e for e in evaluators}
    for spec in specs:
        try:
            gate = parse_gate(spec)
        except ValueError as exc:
            raise UsageError(f"--fail-under: {exc}") from None
        if gate.evaluator not in names:
            have = ", ".join(names) or "none"
            raise UsageError(f"--fail-under {spec!r}: no evaluator named {gate.evaluator!r} (have: {have})")
        if names[gate.evaluator].threshold is None:
            raise UsageError(
                f"--fail-under {spec!r}: {gate.evaluator!r} has no threshold; set one with -e ...:threshold="
            )


def load_task(spec: str) -> Callable[[Any], Any]:
    """The function ``module:function`` or ``path/to/file.py:function`` names.

    A module is imported with the working directory first on ``sys.path`` (as ``python -m``
    does); a file is loaded with its own directory first, so its sibling imports work.

    Raises:
        UsageError: the spec is malformed, the module cannot be imported, or the name is missing.

    Example:
        >>> load_task("json:dumps")({"city": "Warsaw"})
        '{"city": "Warsaw"}'
        >>> load_task("json:no_such_function")
        Traceback (most recent call last):
        ...
        tracesim.cli._eval_io.UsageError: TASK 'json:no_such_function': json has no 'no_such_function'
    """
    location, sep, attribute = spec.rpartition(":")
    if not sep or not location or not attribute:
        raise UsageError(f"TASK {spec!r}: expected module:function or path/to/file.py:function")
    if location.endswith(".py") or os.sep in location or "/" in location:
        module = _load_file(Path(location))
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(location)
        except Exception as exc:
            hint = ""
            if isinstance(exc, ModuleNotFoundError) and exc.name == location.split(".")[0]:
                hint = "; run from the directory that holds it, or give a file: path/to/file.py:function"
            raise UsageError(f"cannot import {location!r}: {type(exc).__name__}: {exc}{hint}") from None
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise UsageError(f"TASK {spec!r}: {location} has no {attribute!r}") from None
    if not callable(found):
        raise UsageError(f"TASK {spec!r}: {attribute} is a {type(found).__name__}, not a function")
    return found  # type: ignore[no-any-return]


def _load_file(path: Path) -> Any:
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses and pickling look their module up there
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(path.stem, None)
        raise UsageError(f"cannot load {path}: {type(exc).__name__}: {exc}") from None
    return module


def _configure(*, traced: bool) -> bool:
    """Configure tracesim unless the task's module did; True when this command configured it.

    Untraced (``--no-traces``), tracesim is configured off: the task's traced functions run as
    plain functions, without a warning that tracesim was never configured.
    """
    import tracesim
    from tracesim import _runtime

    if _runtime.current is not None:
        return False
    try:
        tracesim.configure(enabled=None if traced else False)  # None: the setting as configured
    except tracesim.ConfigError as exc:
        raise UsageError(str(exc)) from None
    return True


def _execute(experiment: Any, total: int, no_progress: bool) -> ExperimentReport:
    import asyncio

    from rich.console import Console
    from rich.progress import Progress

    console = Console(file=_outputs.stream(sys.stderr))
    with Progress(console=console, disable=no_progress or not console.is_terminal) as progress:
        bar = progress.add_task(f"experiment {experiment.name}", total=total)
        report: ExperimentReport = asyncio.run(experiment.run(on_row=lambda row: progress.advance(bar)))
    return report


def _parent_made(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _write(action: Callable[[], object], path: Path) -> None:
    try:
        action()
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _check_gates(report: ExperimentReport, min_rate: float | None, specs: list[str]) -> int:
    from tracesim._report import decide, gate_line, parse_gate

    status = _EXIT_OK
    if min_rate is not None:
        rate = report.pass_rate
        ok = rate is not None and rate >= min_rate
        shown = "no run was decided" if rate is None else f"pass rate {rate:.3f}"
        verdict = "ok" if ok else "FAILED"
        _outputs.echo(
            f"tracesim experiment: --min-pass-rate {min_rate:.3f}: {shown}: {verdict}", file=sys.stderr
        )
        status = _EXIT_OK if ok else _EXIT_GATE
    for spec in specs:
        gate = parse_gate(spec)
        summary = report.summary[gate.evaluator]
        result = decide(gate, summary.passed, summary.passed + summary.failed + summary.errors)
        _outputs.echo(f"tracesim experiment: {gate_line(result)}", file=sys.stderr)
        if not result.ok:
            status = _EXIT_GATE
    return status


# -- compare --------------------------------------------------------------------------------------


def _load(path: Path, what: str) -> ExperimentReport:
    from tracesim.experiments import ExperimentReport

    try:  # within the input limits (size, nesting); every ValueError names the file
        return ExperimentReport.load(path)
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:  # not a run, or over a limit (an InputError)
        raise UsageError(f"{what}: {exc}") from None
    except RecursionError:  # within the limits, but too deep for a reader on a deep stack
        raise UsageError(f"{what}: {path}: nested too deeply to read") from None


def _compare_files(args: argparse.Namespace) -> int:
    if not args.tolerance >= 0:
        raise UsageError(f"--tolerance {args.tolerance}: expected 0 or more, e.g. 0.02")
    current, baseline = _load(args.run_file, "RUN"), _load(args.baseline, "BASELINE")
    comparison: Comparison = current.compare(
        baseline, tolerance=args.tolerance, per_case=not args.aggregate_only
    )
    if args.json:
        _outputs.echo(json.dumps(comparison.to_dict(), ensure_ascii=True, allow_nan=False))
    else:
        _outputs.echo(comparison)
    return _EXIT_OK if comparison.ok else _EXIT_GATE
