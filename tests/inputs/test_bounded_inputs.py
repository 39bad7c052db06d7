"""Inputs are read within limits: the commands refuse an input over one with exit status 2 and a
message naming the file, the line and the limit, in bounded memory and without a traceback.

Each command runs as a user runs it, in its own process, whose peak memory is measured (the
child's own rusage) and whose data segment is capped at 1 GiB, so a reader that is not bounded
fails here with a MemoryError instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from peak_memory import CAP, Run, capped, launched

from tracesim import _inputs
from tracesim._inputs import InputError, deeper_than, load_yaml, loads

_CAP = CAP  # the data segment a command may use here
_BOUND_MB = 500  # what a refusal may cost at most, generously
_DEEP = 100_000

# 363 bytes: nine levels of nine aliases, 9**9 (387 million) strings once expanded
ALIAS_BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
        "cases:",
        "  - input: *i",
        "",
    ]
)

TASK = "def answer(question):\n    return str(question)\n"


def tracesim_cli(*args: str, cwd: Path, timeout: float = 300) -> Run:
    """``python -m tracesim ARGS`` in ``cwd`` under the cap: status, output, and its own peak."""
    return capped([sys.executable, "-m", "tracesim", *args], cwd=cwd, timeout=timeout)


def assert_refused(run: Run, *names: str) -> None:
    """Exit 2, each of ``names`` in the message, no traceback, bounded memory."""
    text = run.out + run.err
    assert run.status == 2, text[-2000:]
    for name in names:
        assert name in text, (name, text[-2000:])
    assert "Traceback" not in text, text[-2000:]
    assert run.peak_mb < _BOUND_MB, run.peak_mb


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "task.py").write_text(TASK, encoding="utf-8")
    return tmp_path


def experiment_run(workdir: Path, dataset: Path, *more: str) -> Run:
    return tracesim_cli(
        "experiment",
        "run",
        "task:answer",
        "-d",
        str(dataset),
        "-e",
        "exact",
        "--no-traces",
        *more,
        cwd=workdir,
    )


# -- datasets -------------------------------------------------------------------------------------


def test_an_alias_bomb_dataset_is_refused_by_experiment_run(workdir: Path) -> None:
    bomb = workdir / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB, encoding="utf-8")
    assert bomb.stat().st_size < 400

    run = experiment_run(workdir, bomb)

    assert_refused(run, f"{bomb}, line 6", "more than 100,000 nodes", "the limit on aliases")


def test_an_alias_bomb_dataset_is_refused_by_dataset_from_file(workdir: Path) -> None:
    bomb = workdir / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB, encoding="utf-8")
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_DATA, ({_CAP}, {_CAP}))\n"
        "from tracesim.experiments import Dataset, DatasetError\n"
        "try:\n"
        f"    Dataset.from_file({str(bomb)!r})\n"
        "except DatasetError as exc:\n"
        "    print('refused:', exc)\n"
        "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(launched([sys.executable, "-c", code]), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"refused: {bomb}, line 6: YAML aliases expand to more than 100,000 nodes" in done.stdout
    assert int(done.stdout.split("peak ")[1]) / 1024 < _BOUND_MB


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".yaml"])
def test_a_deep_dataset_is_refused_naming_its_line_and_the_limit(workdir: Path, suffix: str) -> None:
    dataset = workdir / f"deep{suffix}"
    good = json.dumps({"input": "2+2", "expected": "4"})
    if suffix == ".jsonl":
        dataset.write_text(f"{good}\n{good.replace('2+2', '3+3')}\n" + "[" * _DEEP + "\n", encoding="utf-8")
        line, limit = "line 3", "JSON nested deeper than 256 levels"
    elif suffix == ".json":
        dataset.write_text("[\n" + good + ",\n" + "[" * _DEEP + "]" * _DEEP + "\n]\n", encoding="utf-8")
        line, limit = "line 3", "JSON nested deeper than 256 levels"
    else:
        dataset.write_text("- input: a\n- input: " + "[" * _DEEP + "\n", encoding="utf-8")
        line, limit = "line 2", "YAML nested deeper than 100 levels"

    run = experiment_run(workdir, dataset)

    assert_refused(run, f"{dataset}, {line}: {limit}", "the limit on nesting")


def test_a_dataset_larger_than_the_limit_is_refused_before_it_is_read(workdir: Path) -> None:
    dataset = workdir / "huge.jsonl"
    with dataset.open("wb") as handle:  # sparse: costs no disk
        handle.truncate(_inputs.MAX_FILE_BYTES + 1)

    run = experiment_run(workdir, dataset)

    assert_refused(
        run, f"{dataset}: 268,435,457 bytes, more than 268,435,456 bytes", "the limit on file size"
    )
    assert run.peak_mb < 150  # refused by its size, not after reading it


# -- baselines ------------------------------------------------------------------------------------


def test_a_deep_baseline_is_refused_by_compare_and_by_run(workdir: Path) -> None:
    dataset = workdir / "cases.jsonl"
    dataset.write_text(json.dumps({"input": "4", "expected": "4"}) + "\n", encoding="utf-8")
    good = workdir / "run.json"
    assert experiment_run(workdir, dataset, "-o", str(good)).status == 0
    deep = workdir / "deep.json"
    deep.write_text('{"schema": 1,\n "rows": ' + "[" * _DEEP + "]" * _DEEP + "}\n", encoding="utf-8")

    as_baseline = tracesim_cli("experiment", "compare", str(good), str(deep), cwd=workdir)
    as_run = tracesim_cli("experiment", "compare", str(deep), str(good), cwd=workdir)
    in_run = experiment_run(workdir, dataset, "--baseline", str(deep))

    assert_refused(as_baseline, f"BASELINE: {deep}, line 2: JSON nested deeper than 256 levels", "nesting")
    assert_refused(as_run, f"RUN: {deep}, line 2: JSON nested deeper than 256 levels", "nesting")
    assert_refused(in_run, f"--baseline: {deep}, line 2: JSON nested deeper than 256 levels", "nesting")


def test_a_baseline_within_the_limits_still_compares(workdir: Path) -> None:
    dataset = workdir / "cases.jsonl"
    nested = json.loads("[" * 150 + '"4"' + "]" * 150)  # deep, but within what a run keeps
    dataset.write_text(json.dumps({"input": nested, "expected": "4"}) + "\n", encoding="utf-8")
    baseline = workdir / "base.json"
    assert experiment_run(workdir, dataset, "-o", str(baseline)).status == 0

    run = experiment_run(workdir, dataset, "--baseline", str(baseline))

    assert run.status == 0, run.err[-2000:]
    assert "OK: nothing got worse" in run.out


# -- backfill and replay ledgers, trace files -------------------------------------------------------


@pytest.fixture
def scored(tmp_path: Path) -> Path:
    pytest.importorskip("pandas", reason="backfill needs the 'dask' extra (pandas)")
    sys.path.insert(0, str(Path(__file__).parents[1] / "batch"))
    try:
        from batchdata import traced_file
    finally:
        sys.path.pop(0)
    from tracesim.batch import Spans, score

    traces = traced_file(tmp_path)
    results = tmp_path / "scores"
    score(Spans(str(traces), name="answer"), evaluators=["exact"], output=results, engine="local")
    return results


@pytest.mark.parametrize("kind", ["deep", "long"])
def test_a_backfill_ledger_line_over_the_limits_costs_a_resend_as_in_replay(scored: Path, kind: str) -> None:
    # A ledger is tracesim's own file: a line it did not write (over 64 KiB, 256 levels deep)
    # or a torn one costs a re-send of its part, never the run (replay's ledger does the same).
    from tracesim.batch._backfill import LEDGER

    ledger = scored / LEDGER
    torn = '{"destination": "file:/x", "part": "part-00000.parquet", "sha2'
    bad = "[" * 10_000 if kind == "deep" else json.dumps({"note": "x" * (_inputs.MAX_LEDGER_LINE_BYTES + 1)})
    ledger.write_text(torn + "\n" + bad + "\n", encoding="utf-8")
    out = scored.parent / "carriers.jsonl"

    run = tracesim_cli("backfill", str(scored), "--to", str(out), cwd=scored.parent)

    assert run.status == 0, run.err[-2000:]
    assert "Traceback" not in run.err
    assert len(out.read_text().splitlines()) == 1  # the part was sent (again)
    assert run.peak_mb < _BOUND_MB


def test_a_torn_backfill_ledger_line_still_costs_only_a_resend(scored: Path) -> None:
    from tracesim.batch import backfill
    from tracesim.batch._backfill import LEDGER

    (scored / LEDGER).write_text('{"destination": "file:/x", "part": "part-0', encoding="utf-8")
    assert backfill(scored, to=scored.parent / "carriers.jsonl").carriers == 1


def test_replay_skips_trace_lines_over_the_limits_naming_them_and_sends_the_rest(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1]))
    try:
        from otlp_sink import OtlpSink
    finally:
        sys.path.pop(0)
    line = {
        "resourceSpans": [
            {
                "resource": {},
                "scopeSpans": [
                    {
                        "scope": {},
                        "spans": [
                            {
                                "traceId": "1" * 32,
                                "spanId": "2" * 16,
                                "name": "kept",
                                "kind": 1,
                                "startTimeUnixNano": "1",
                                "endTimeUnixNano": "2",
                            }
                        ],
                    }
                ],
            }
        ]
    }
    traces = tmp_path / "traces.jsonl"
    with traces.open("wb") as handle:
        handle.write(("[" * _DEEP + "\n").encode())
        handle.write(b" " * (_inputs.MAX_LINE_BYTES + 10) + b"\n")
        handle.write(json.dumps(line).encode() + b"\n")
    sink = OtlpSink()
    sink.accept_json = True
    try:
        run = tracesim_cli("replay", str(traces), "--endpoint", sink.url, "--no-annotations", cwd=tmp_path)
    finally:
        sink.close()

    assert run.status == 0, run.out + run.err
    assert sink.delivered_names == ["kept"]
    text = " ".join((run.out + run.err).split())
    assert f"{traces}:1: skipped JSON nested deeper than 256 levels (the limit on nesting)" in text
    assert f"{traces}:2: skipped a line longer than 67,108,864 bytes (the limit on lines)" in text
    assert "Traceback" not in text
    assert run.peak_mb < _BOUND_MB


# -- the readers themselves -----------------------------------------------------------------------


def test_yaml_anchors_and_merge_keys_within_the_budget_are_read() -> None:
    text = "defaults: &d {model: small, lang: en}\ncases:\n" + "".join(
        f"  - <<: *d\n    input: q{n}\n" for n in range(1000)
    )
    data = load_yaml(text, "cases.yaml")
    assert data["cases"][999] == {"model": "small", "lang": "en", "input": "q999"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- &a [1, *a]\n", "cases.yaml, line 1: YAML alias *a is inside its own anchor"),
        (
            "x: 1\ny: " + "[" * 101 + "]" * 101 + "\n",
            "cases.yaml, line 2: YAML nested deeper than 100 levels",
        ),
        (
            # shallow anchors nested by aliases: deep once expanded
            "".join(f"l{n}: &l{n} [*l{n - 1}]\n" if n else "l0: &l0 [1]\n" for n in range(120)),
            "YAML nested deeper than 100 levels (the limit on nesting)",
        ),
        (
            "a: &a [" + ", ".join(["x"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 101) + "]\n",
            "the limit on aliases",
        ),
    ],
    ids=["recursive", "deep", "deep-by-aliases", "aliases"],
)
def test_yaml_over_a_limit_is_refused(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        load_yaml(text, "cases.yaml")
    assert message in str(caught.value)


def test_the_depth_scan_reads_strings_as_strings() -> None:
    assert not deeper_than('["[[[[", "\\"[[[[", {"{{{{": "]]]]"}]', 3)
    assert deeper_than('[[[["]"]]]]', 3)
    assert deeper_than(b"[" * 5, 4)
    assert not deeper_than(b"[" * 4, 4)
    assert loads(b'[["a"]]', "f.json", line=4) == [["a"]]
    with pytest.raises(InputError, match=r"^f\.jsonl, line 4: not valid JSON"):
        loads(b"[1,", "f.jsonl", line=4)


# -- tracesim.yaml and a saved run are bounded too ---------------------------------------------


def test_an_alias_bomb_in_tracesim_yaml_is_refused_by_configure(tmp_path: Path) -> None:
    lines = ALIAS_BOMB.split("cases:")[0].strip().splitlines()
    (tmp_path / "tracesim.yaml").write_text(
        "resource_attributes:\n" + "".join(f"  {line}\n" for line in lines), encoding="utf-8"
    )
    code = (
        "import resource\n"
        f"resource.setrlimit(resource.RLIMIT_DATA, ({_CAP}, {_CAP}))\n"
        "import tracesim\n"
        "try:\n"
        "    tracesim.configure(exporters='none')\n"
        "except tracesim.ConfigError as exc:\n"
        "    print('refused:', exc)\n"
        "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(
        launched([sys.executable, "-c", code]), cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused:" in done.stdout
    assert "tracesim.yaml, line" in done.stdout
    assert "the limit on aliases" in done.stdout
    assert int(done.stdout.split("peak ")[1]) / 1024 < _BOUND_MB


def test_experiment_report_load_refuses_a_deep_run_naming_the_limit(tmp_path: Path) -> None:
    from tracesim.experiments import ExperimentReport

    deep = tmp_path / "run.json"
    deep.write_text('{"schema": 1,\n "rows": ' + "[" * _DEEP + "]" * _DEEP + "}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"run\.json, line 2: JSON nested deeper than 256 levels"):
        ExperimentReport.load(deep)
