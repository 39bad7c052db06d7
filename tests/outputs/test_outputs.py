"""Every file and stream tracesim writes, other than spans, is redacted by `tracesim._outputs`.

Two halves. The structural guard reads the source of every module of tracesim and fails when
one writes a file or a stream by other means than `tracesim._outputs`, so the next output
cannot forget redaction. The writer table then plants a secret of every kind (key, bearer
token, e-mail, URL password, PEM block) in every field of every output of the experiments,
``tracesim eval``, `tracesim.batch.score`, ``show`` and ``report``, and searches what was
written (files, standard output and error) for each secret's distinctive fragment.

What the guard sees: calls of ``print``, ``sqlite3.connect``, pytest terminal-reporter lines and
``warnings.warn`` messages not made by ``tracesim._outputs``, ``open`` (and ``Path.open``,
``os.fdopen``, ``fsspec.open``) in a writing or unknown mode, ``write_text``/``write_bytes``,
``json.dump``, ``os.write``, ``sys.stdout``/``sys.stderr`` writes, ``traceback.print_*``, frame
and Arrow writers (``to_parquet``, ``to_csv``, a frame's ``to_json``, ``write_table``),
argparse's help to a raw stream and rich consoles not built on ``tracesim._outputs.stream``.
What it cannot see: a stream reached through another name (``out = sys.stdout; out.write(...)``)
and writers of other libraries reached another way (a logging handler: the ``tracesim`` logger's
filter redacts every record, see ``tests/redact/test_log_redaction.py``); the writer table covers those
outputs by what they wrote.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from llm_formats import error_body
from llm_server import CHAT, LLMServer, Reply
from secret_kinds import KINDS, leaked

import tracesim
from tracesim import _outputs
from tracesim.cli import main
from tracesim.evaluators import Evaluator, Measurement, register, unregister
from tracesim.experiments import Case, Dataset, ExperimentReport

ROOT = Path(tracesim.__file__).parent
# The integrations' own distributions, whose outputs tracesim redacts too (through the public
# `tracesim.plugin_support`): each package folder, scanned as tracesim's modules are.
INTEGRATION_PACKAGES = [ROOT.parent / "integrations" / "pytest" / "tracesim_pytest"]
# Calls whose result is redacted text: tracesim's private writer, and its public face for plugins.
_REDACTING = ("_outputs.", "tracesim._outputs.", "plugin_support.redact_", "tracesim.plugin_support.redact_")

# -- the structural guard ------------------------------------------------------------------------

ALLOWED: dict[str, str] = {
    "tracesim._outputs": "the writer path itself: redacts, then writes",
    "tracesim.exporters._linefile": "the trace file's writer: span lines, already redacted",
    "tracesim.exporters._spool_store": "the OTLP spool: span batches, already redacted",
}
"""Modules that write spans, each with the reason they need no `tracesim._outputs`."""

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("tracesim.batch._partition", "_upload"): (
        "puts a part's bytes, encoded from a frame `_redacted` cleaned, on an object store "
        "(fsspec); tracesim._outputs writes local files only"
    ),
    ("tracesim.evaluators._model._cache", "_connect"): (
        "the model-answer cache: keys are hashes of the requests, answers are stored after "
        "tracesim._outputs.clean (DiskCache.put)"
    ),
    ("tracesim._scoring._processes", "write_frame"): (
        "hands pickled evaluator runs to tracesim's own scoring worker process over a pipe, in "
        "memory; the results come back and reach files only through the span's export path"
    ),
    ("tracesim._scoring._worker_main", "main"): (
        "the worker maps the 16-byte slot file its host created, to write the token and start "
        "time of the run in progress: two numbers, no data"
    ),
    ("tracesim.batch._partition", "_encode"): (
        "pyarrow writes the cleaned table into memory (BufferOutputStream); the bytes go out "
        "through tracesim._outputs.write_bytes_of or _upload"
    ),
}
"""Single functions whose raw write is safe, each with the reason."""

_WRITE_MODES = frozenset("wax+")
_OPENERS = {"open", "io.open", "os.fdopen", "gzip.open", "bz2.open", "lzma.open", "codecs.open"}
_FRAME_WRITERS = {
    "to_parquet",
    "to_csv",
    "to_feather",
    "to_excel",
    "to_pickle",
    "write_table",
    "write_dataset",
}
_PANDAS_JSON_KEYWORDS = {"orient", "lines", "path_or_buf", "compression", "storage_options", "date_format"}
_PRINTERS = {("traceback", "print_exc"), ("traceback", "print_exception"), ("traceback", "print_stack")}


@dataclass(frozen=True)
class RawWrite:
    """A place that writes by other means than tracesim._outputs."""

    module: str
    function: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} in {self.function}(): {self.what}"


def _dotted(node: ast.expr) -> str:
    """``sys.stdout.write`` for the expression ``sys.stdout.write``; '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _open_mode(call: ast.Call, *, by_position: bool) -> str | None:
    """The mode an ``open`` call opens with ("r" when not given), None when it is not a literal.

    ``by_position``: ``open(file, mode)`` and the like, mode second. Otherwise a method
    (``Path.open(mode)``, ``fsspec.open(url, mode)``): the first of the two that reads as a mode.
    """
    keyword = next((k.value for k in call.keywords if k.arg == "mode"), None)
    if keyword is not None:
        return keyword.value if isinstance(keyword, ast.Constant) and isinstance(keyword.value, str) else None
    if by_position:
        if len(call.args) < 2:
            return "r"
        node = call.args[1]
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
    for node in call.args[:2]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _looks_like_mode(node.value):
            return node.value
    return "r"


def _looks_like_mode(text: str) -> bool:
    return 0 < len(text) <= 4 and set(text) <= set("rwaxbt+")


def _is_stream_call(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] == "stream"


def _raw_write(call: ast.Call) -> str | None:
    """What ``call`` writes raw, or None when it is not a write (or goes through tracesim._outputs)."""
    name = _dotted(call.func)
    last = name.rsplit(".", 1)[-1] if name else getattr(call.func, "attr", "")
    keywords = {k.arg for k in call.keywords}
    if name.startswith(("_outputs.", "tracesim._outputs.")):
        return None
    if name == "print":
        return "print()"
    if name in _OPENERS or last == "open":
        mode = _open_mode(call, by_position=name in _OPENERS)
        return None if mode is not None and not _WRITE_MODES & set(mode) else f"{name or last}(..., {mode!r})"
    if last in ("write_text", "write_bytes"):
        return f".{last}()"
    if name == "json.dump":
        return "json.dump()"
    if name in ("os.write", "os.writev"):
        return f"{name}()"
    if name.startswith(
        ("sys.stdout.", "sys.stderr.", "sys.__stdout__.", "sys.__stderr__.")
    ) and last.startswith("write"):
        return f"{name}()"
    if tuple(name.rsplit(".", 1)) in _PRINTERS:
        return f"{name}()"
    if last in _FRAME_WRITERS:
        return f".{last}()"
    if last == "to_json" and keywords & _PANDAS_JSON_KEYWORDS:
        return ".to_json() of a frame"
    if (
        last in ("print_help", "print_usage")
        and "." in name
        and not (call.args and _is_stream_call(call.args[0]))
    ):
        return f"argparse's .{last}() to a raw stream"
    if last == "Console":
        target = next((k.value for k in call.keywords if k.arg == "file"), None)
        if not _is_stream_call(target):
            return "rich Console(...) without file=stream(...)"
    if last in ("Progress", "Live") and "console" not in keywords:
        return f"rich {last}(...) on its own console"
    if name == "sqlite3.connect":
        return "sqlite3.connect(): a database file"
    # Text handed to another library's writer: fine when it is a literal or redacted here.
    if last in ("write_line", "write_sep", "write_raw") and "." in name and not _redacted_args(call):
        return f"a terminal reporter's .{last}() of text not redacted"
    if name == "warnings.warn" and not _redacted_args(call, first=True):
        return "warnings.warn() of text not redacted (Python prints it)"
    return None


def _redacted_args(call: ast.Call, *, first: bool = False) -> bool:
    """Every positional argument (``first``: the first, the message) is a literal or the result
    of a `tracesim._outputs` call."""
    return all(
        isinstance(arg, ast.Constant)
        or (isinstance(arg, ast.Call) and _dotted(arg.func).startswith(_REDACTING))
        for arg in (call.args[:1] if first else call.args)
    )


def scan_source(source: str, module: str) -> list[RawWrite]:
    """Every raw write in ``source`` (the code of ``module``), with the function it is in."""
    found: list[RawWrite] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Call):
                what = _raw_write(child)
                if what is not None:
                    found.append(RawWrite(module, function, child.lineno, what))
            visit(child, function)

    visit(ast.parse(source), "<module>")
    return found


def _modules() -> Iterator[tuple[str, Path]]:
    for package in (ROOT, *INTEGRATION_PACKAGES):
        for path in sorted(package.rglob("*.py")):
            parts = path.relative_to(package.parent).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def unexplained(found: list[RawWrite]) -> list[RawWrite]:
    """The raw writes no allowlist explains."""
    return [w for w in found if w.module not in ALLOWED and (w.module, w.function) not in EXCEPTIONS]


def test_no_module_writes_a_file_or_stream_but_through_tracesim_outputs() -> None:
    found = [w for module, path in _modules() for w in scan_source(path.read_text(encoding="utf-8"), module)]
    bad = unexplained(found)
    assert not bad, "write these through tracesim._outputs:\n" + "\n".join(map(str, bad))


def test_every_allowlist_entry_is_still_needed() -> None:
    """An entry whose module no longer writes raw is removed, so the lists stay short and true."""
    found = [w for module, path in _modules() for w in scan_source(path.read_text(encoding="utf-8"), module)]
    writers = {w.module for w in found}
    functions = {(w.module, w.function) for w in found}
    assert set(ALLOWED) <= writers, set(ALLOWED) - writers
    assert set(EXCEPTIONS) <= functions, set(EXCEPTIONS) - functions


PLANTED = {
    "print": "print(secret)",
    "print to stderr": "print(secret, file=sys.stderr)",
    "open for writing": "with open(path, 'w') as f:\n        f.write(secret)",
    "open for appending": "handle = open(path, mode='a', encoding='utf-8')",
    "open with a mode in a variable": "handle = open(path, how)",
    "Path.open for writing": "handle = Path(path).open('w')",
    "os.fdopen": "handle = os.fdopen(fd, 'wb')",
    "write_text": "Path(path).write_text(secret)",
    "write_bytes": "Path(path).write_bytes(secret.encode())",
    "json.dump": "json.dump({'x': secret}, handle)",
    "sys.stdout.write": "sys.stdout.write(secret)",
    "sys.stderr.write": "sys.stderr.write(secret)",
    "to_parquet": "frame.to_parquet(path)",
    "to_csv": "frame.to_csv(path)",
    "to_json of a frame": "frame.to_json(path, orient='records', lines=True)",
    "pyarrow write_table": "pq.write_table(table, path)",
    "rich console on stdout": "Console().print(secret)",
    "rich console on stderr": "console = Console(stderr=True)",
    "rich console on a raw file": "console = Console(file=sys.stdout)",
    "progress on its own console": "bar = Progress()",
    "traceback.print_exc": "traceback.print_exc()",
    "argparse help to stdout": "parser.print_help()",
    "sqlite database": "db = sqlite3.connect(path)",
    "pytest terminal line": "terminalreporter.write_line(secret)",
    "pytest terminal separator": "terminalreporter.write_sep('=', secret)",
    "a warning's message": "warnings.warn(f'bad {secret}', UserWarning)",
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_the_guard_finds_a_planted_raw_write(kind: str) -> None:
    arguments = "secret, path, frame, handle, how, fd, table, parser, terminalreporter"
    source = f"def leak({arguments}):\n    {PLANTED[kind]}\n"
    found = unexplained(scan_source(source, "tracesim.cli._eval"))
    assert [w.function for w in found] == ["leak"], found


def test_the_guard_finds_a_raw_write_planted_in_a_real_module() -> None:
    path = ROOT / "experiments" / "_experiment_report.py"
    source = path.read_text(encoding="utf-8") + "\n\ndef planted(path):\n    Path(path).write_text('x')\n"
    found = unexplained(scan_source(source, "tracesim.experiments._experiment_report"))
    assert [(w.function, w.what) for w in found] == [("planted", ".write_text()")]


SAFE = {
    "reading": "with open(path) as f, open(path, 'rb') as g, Path(path).open(encoding='utf-8'): pass",
    "echo": "_outputs.echo(secret, file=sys.stderr)",
    "console on a redacting stream": "console = Console(file=_outputs.stream(sys.stderr), width=80)",
    "progress on that console": "bar = Progress(console=console)",
    "help to a redacting stream": "parser.print_help(stream())",
    "a report's own to_json": "report.to_json(path)",
    "dumps": "text = json.dumps({'x': secret})",
    "a redacted terminal line": "terminalreporter.write_line(_outputs.text(secret))",
    "a literal separator": "terminalreporter.write_sep('=', 'tracesim evaluations')",
    "a fixed warning": "warnings.warn('not configured', UserWarning)",
}


@pytest.mark.parametrize("kind", sorted(SAFE))
def test_the_guard_leaves_writes_through_outputs_alone(kind: str) -> None:
    source = f"def fine(secret, path, parser, report, console, terminalreporter):\n    {SAFE[kind]}\n"
    assert scan_source(source, "tracesim.cli._eval") == []


def test_json_of_a_scan_is_readable() -> None:
    # the message a failing guard prints names module, line and function
    found = scan_source("def f():\n    print(1)\n", "tracesim.x")
    assert json.dumps([str(w) for w in found]) == '["tracesim.x:2 in f(): print()"]'


# -- the writer table: every secret kind in every field of every output -------------------------

KIND_NAMES = sorted(KINDS)


class Leaky(Evaluator):
    """Scores 0.25, with what it compared in its explanation, label and details."""

    type_name = "leaky_output"

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        return Measurement(
            0.25, {"seen": output}, explanation=f"compared {output} with {expected}", label=f"label {output}"
        )


class Raising(Evaluator):
    """Errors, as a judge answering 401 with the key echoed does."""

    type_name = "raising_output"

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        raise PermissionError(f"401 Incorrect API key provided: {output}")


@pytest.fixture(autouse=True)
def _registered() -> Iterator[None]:
    register("leaky_output", Leaky, replace=True)
    register("raising_output", Raising, replace=True)
    yield
    unregister("leaky_output")
    unregister("raising_output")


def _name(secret: str) -> str:
    """An evaluator name holding ``secret`` where names may (letters, digits, ``_.-``), else plain."""
    return secret if re.fullmatch(r"[A-Za-z0-9_.-]+", secret) else "judge"


def _assert_clean(outputs: dict[str, str]) -> None:
    assert all(outputs.values()), f"an output is empty: {[k for k, v in outputs.items() if not v]}"
    leaks = {where: leaked(written) for where, written in outputs.items() if leaked(written)}
    assert not leaks, f"secrets written in the clear: {leaks}"


def _rows(secret: str) -> list[dict[str, Any]]:
    return [
        {
            "id": f"id {secret}",
            "input": f"in {secret}",
            "output": f"out {secret}",
            "expected": f"exp {secret}",
        },
        {"id": "plain", "input": "in", "output": "out", "expected": "exp"},
    ]


def _data(tmp_path: Path, secret: str) -> Path:
    data = tmp_path / "data.jsonl"
    lines = [json.dumps(row) for row in _rows(secret)]
    lines.append(f"not a JSON object {secret}".replace("\n", " "))  # a bad row: its line is reported
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_an_experiment_report_writes_no_secret(tmp_path: Path, kind: str) -> None:
    secret = KINDS[kind][0]
    cases = [
        Case(f"in {secret}", f"exp {secret}", metadata={"owner": secret}, id=f"case {secret}"),
        Case("deny", f"exp {secret}", id="denied"),
    ]

    def task(question: str) -> str:
        if question == "deny":
            raise PermissionError(f"denied for {secret}")
        return f"out {secret}"

    evaluators = [Leaky(name=_name(secret), threshold=0.5), Raising(name="erring")]
    report = Dataset(cases, name=f"set {secret}").evaluate(task, evaluators=evaluators, name=f"run {secret}")
    assert leaked(json.dumps(report.to_dict())), "the planted secrets are not in the run"
    written = {
        "json": report.to_json(tmp_path / "run.json").read_text(encoding="utf-8"),
        "html": report.to_html(tmp_path / "run.html").read_text(encoding="utf-8"),
        "table": report.table(),
        "narrow table": report.table(width=12),  # cells cut mid-secret
        "str": str(report),
    }
    _assert_clean(written)
    assert "[REDACTED:" in written["json"]


def _eval(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["eval", *argv, "--workers", "1", "--no-progress"])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_tracesim_eval_writes_no_secret(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = KINDS[kind][0]
    data = _data(tmp_path, secret)
    name = _name(secret)
    specs = ["-e", f"leaky_output:threshold=0.5,name={name}", "-e", "raising_output"]
    results = tmp_path / "scores.jsonl"
    status, console = _eval([str(data), *specs, "-o", str(results), "--fail-under", f"{name}=0.5"], capsys)
    assert status == 1  # the gate failed (0.25 < 0.5): its line, with the name, was printed
    to_stdout_status, stdout = _eval([str(data), *specs, "-o", "-"], capsys)
    assert to_stdout_status == 0
    usage = [
        _eval([str(data), *specs, "--fail-under", f"other {secret}=0.5"], capsys),  # no such evaluator
        _eval([str(data), "-e", f"exact:name={json.dumps(f'judge {secret}')}"], capsys),  # a bad name
    ]
    assert [status for status, _ in usage] == [2, 2]
    written = {"results": results.read_text(encoding="utf-8"), "console": console, "stdout": stdout}
    written.update({f"usage error {i}": text for i, (_, text) in enumerate(usage)})
    _assert_clean(written)
    assert written["results"].count("[REDACTED:") >= 6  # id, input, output, expected, label, error...


def _parquet_text(path: Path) -> str:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return json.dumps([table.column_names, table.to_pylist()], ensure_ascii=False)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_batch_score_writes_no_secret(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyarrow", reason="the 'dask' extra is not installed")
    from tracesim import batch

    secret = KINDS[kind][0]
    data = _data(tmp_path, secret)
    specs = [{"type": "leaky_output", "threshold": 0.5, "name": _name(secret)}, {"type": "raising_output"}]
    written: dict[str, str] = {}
    for fmt in ("parquet", "jsonl"):
        out = tmp_path / fmt
        report = batch.score(data, evaluators=specs, output=out, engine="local", output_format=fmt)
        assert (report.scored, sum(report.bad_rows.values())) == (2, 1)
        report.failed_parts[7] = f"PermissionError: denied for {secret}"
        report.print_summary()
        captured = capsys.readouterr()
        written[f"{fmt} console"] = captured.out + captured.err
        for part in sorted(out.iterdir()):
            raw = part.read_bytes()
            written[f"{part.name} bytes"] = raw.decode("utf-8", "replace")
            written[part.name] = _parquet_text(part) if fmt == "parquet" else raw.decode("utf-8")
    _assert_clean(written)
    assert "[REDACTED:" in written["part-00000.parquet"]


def _trace_file(tmp_path: Path, secret: str) -> Path:
    """A trace file holding ``secret`` unredacted everywhere, as a program without redaction writes it."""
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=str(path), redact_patterns="none", batch_export=False)
    with tracesim.span(f"span {secret}", kind="llm") as span:
        span.set_attribute("note", secret)
        span.set_output(f"out {secret}")
    tracesim.score(
        span,
        name="verdict",
        value=0.1,
        passed=False,
        label=f"label {secret}",
        explanation=f"because {secret}",
    )

    @tracesim.trace(
        name="call", evaluators=[Leaky(threshold=0.5), Raising(name="erring")], expected=f"exp {secret}"
    )
    def call() -> str:
        raise PermissionError(f"denied for {secret}")

    with pytest.raises(PermissionError):
        call()
    assert tracesim.force_flush(timeout_s=30)
    tracesim.shutdown()
    _outputs.forget_settings()
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f'{{"torn line": "{secret[:20]}\n')
    assert leaked(path.read_text(encoding="utf-8")), "the trace file was redacted: nothing to test"
    return path


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_show_and_report_write_no_secret(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _trace_file(tmp_path, KINDS[kind][0])
    html = tmp_path / "report.html"
    written: dict[str, str] = {}
    for argv in (
        ["show", str(path), "--attributes"],
        ["show", str(path), "--width", "12"],
        ["report", str(path)],
        ["report", str(path), "--json"],
        ["report", str(path), "--html", str(html), "--group-by", "note"],
    ):
        assert main(argv) == 0
        captured = capsys.readouterr()
        written[" ".join(argv[:1] + argv[2:])] = captured.out + captured.err
    written["report.html"] = html.read_text(encoding="utf-8")
    _assert_clean(written)


def test_a_judge_answering_401_with_the_key_echoed_leaves_it_in_no_output(
    tmp_path: Path, llm_server: LLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23's case, with the real judge and ``openai`` client against the scripted server."""
    pytest.importorskip("pyarrow", reason="the 'dask' extra is not installed")
    from tracesim import batch

    key, fragment = KINDS["openai"]
    llm_server.script(
        CHAT, *[Reply.status(401, body=error_body(401, f"Incorrect API key provided: {key}"))] * 20
    )
    spec = f"llm_judge:base_url={llm_server.base_url},api_key=k,model=m,max_retries=0,rubric=correct"
    data = _data(tmp_path, "plain")
    report = Dataset([Case("q", "a", id="q1")]).evaluate(lambda q: "answer", evaluators=[spec])
    assert fragment in (report.row("q1").scores["llm_judge"].error or "")  # the key came back, in memory
    assert main(["eval", str(data), "-e", spec, "-o", str(tmp_path / "scores.jsonl"), "--workers", "1"]) == 0
    batch.score(data, evaluators=[spec], output=tmp_path / "batch", engine="local")
    captured = capsys.readouterr()
    written = {
        "run.json": report.to_json(tmp_path / "run.json").read_text(encoding="utf-8"),
        "run.html": report.to_html(tmp_path / "run.html").read_text(encoding="utf-8"),
        "table": report.table(),
        "eval results": (tmp_path / "scores.jsonl").read_text(encoding="utf-8"),
        "console": captured.out + captured.err,
        "parquet": _parquet_text(tmp_path / "batch" / "part-00000.parquet"),
    }
    _assert_clean(written)
    assert "Incorrect API key provided: [REDACTED:api_key]" in written["eval results"]
    assert "Incorrect API key provided: [REDACTED:api_key]" in written["parquet"]


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_score_frame_gives_engines_result_columns_without_secrets(kind: str) -> None:
    """What the recipes for Dask, Ray, Spark and Daft write is `score_frame`'s frame as it is."""
    pd = pytest.importorskip("pandas", reason="the 'dask' extra is not installed")
    from tracesim.batch import score_frame

    secret = KINDS[kind][0]
    frame = pd.DataFrame(_rows(secret))
    specs = [{"type": "leaky_output", "threshold": 0.5}, {"type": "raising_output"}]
    scores = score_frame(frame, specs, keep=())  # the columns kept are the data as given
    written = {"csv": scores.to_csv(), "json": scores.to_json(orient="records", lines=True)}
    _assert_clean(written)


def test_case_ids_that_redact_alike_stay_different_cases_in_every_file(tmp_path: Path) -> None:
    """Cases keyed by a user's e-mail: redacted, three ids would read as one case of three runs."""
    emails = ["marie.curie@sorbonne.fr", "pierre.curie@sorbonne.fr", "irene.curie@sorbonne.fr"]
    cases = [Case(f"q{i}", "a", id=email) for i, email in enumerate(emails)]
    cases.append(Case("q-plain", "a", id="[REDACTED:email]-2"))  # an id already like a numbered one
    report = Dataset(cases).evaluate(lambda q: "a" if q != "q1" else "b", evaluators=["exact"])
    loaded = ExperimentReport.load(report.to_json(tmp_path / "run.json"))
    shown = report.redacted()
    for written in (loaded, shown):
        ids = [c.case_id for c in written.cases]
        assert len(set(ids)) == 4  # kept apart by a keyed suffix (tracesim.experiments._case_ids)
        assert all(i.startswith("[REDACTED:email]-") for i in ids)
        assert ids[3] == "[REDACTED:email]-2"  # the id redaction left alone keeps its text
        assert (len(written.cases), written.passed, written.failed) == (4, 3, 1)
    assert [c.case_id for c in loaded.cases] == [c.case_id for c in shown.cases]
    html = report.to_html(tmp_path / "run.html").read_text(encoding="utf-8")
    assert html.count('class="case"') == 4
    assert "4 cases" in report.table()
    _assert_clean({"json": (tmp_path / "run.json").read_text(encoding="utf-8"), "html": html})
