"""The input limits hold where a review found them leaking: work, memory, bad scalars, one reader.

- the JSON depth scan reads an unclosed string once (it restarted at every escaped quote:
  quadratic, 30 s for 100 KB), in ``loads``, ``experiment compare`` and ``report``;
- a YAML document is bounded in composed nodes and in bytes, not only in what aliases add;
- ``tracesim eval`` reads its rows within the line and nesting limits;
- a bad YAML scalar in a dataset is exit 2 naming the file and the line, not a traceback;
- every JSON-lines reader goes through `tracesim._inputs.json_records`, and both ledgers read a
  damaged or over-long line as "send that part again".

Work is bounded by counts and sizes; where a hang is what is tested, the ceiling is a generous
wall-clock one, far below what the unbounded code took (given in each test).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from peak_memory import launched

sys.path.insert(0, str(Path(__file__).parent))
try:
    from hostile import GOOD_NAMES, good_line
    from test_bounded_inputs import TASK, assert_refused, experiment_run, tracesim_cli
finally:
    sys.path.pop(0)

from tracesim import _inputs
from tracesim._inputs import InputError, deeper_than, load_yaml, loads

_HANG_S = 40.0  # the unbounded scan took > 100 s on each input below; the bounded one, < 0.1 s
_ESCAPES = 100_000  # 200 KB of ``\"``: 100+ s for the quadratic scan


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "task.py").write_text(TASK, encoding="utf-8")
    return tmp_path


def _unclosed(escapes: int = _ESCAPES) -> str:
    """300 brackets, then a string that never closes, full of escaped quotes."""
    return "[" * 300 + '"' + '\\"' * escapes


# -- 1. the depth scan is linear ---------------------------------------------------------------------


def test_an_unclosed_string_ends_the_scan_of_brackets() -> None:
    # json recurses into nothing after an unclosed quote: neither does the scan
    assert not deeper_than('[[["' + "[" * 300, 256)
    assert not deeper_than(b'[[["' + b"[" * 300, 256)
    assert not deeper_than('[[["[[\\', 3)  # a lone backslash at the very end
    assert deeper_than('[[["]"[' + "[" * 300, 256)  # a closed string still ends where it closes
    with pytest.raises(InputError, match=r"x, line 1: not valid JSON \(Unterminated string"):
        loads('[[["' + "[" * 300, "x")


def test_loads_refuses_a_deep_document_with_an_unclosed_string_without_rescanning_it() -> None:
    code = (
        "from tracesim._inputs import InputError, loads\n"
        f"doc = '[' * 300 + '\"' + '\\\\\"' * {_ESCAPES}\n"
        "for each in (doc, doc.encode()):\n"
        "    try:\n"
        "        loads(each, 'x')\n"
        "    except InputError as exc:\n"
        "        print(exc)\n"
    )
    done = subprocess.run(
        launched([sys.executable, "-c", code]), capture_output=True, text=True, timeout=_HANG_S
    )
    assert done.stdout.count("x, line 1: JSON nested deeper than 256 levels") == 2, done.stderr[-2000:]


def test_compare_refuses_a_baseline_with_an_unclosed_string_within_the_ceiling(workdir: Path) -> None:
    dataset = workdir / "cases.jsonl"
    dataset.write_text(json.dumps({"input": "4", "expected": "4"}) + "\n", encoding="utf-8")
    good = workdir / "run.json"
    assert experiment_run(workdir, dataset, "-o", str(good)).status == 0
    baseline = workdir / "torn.json"
    baseline.write_text('{"schema": 1,\n "rows": ' + _unclosed(), encoding="utf-8")

    run = tracesim_cli("experiment", "compare", str(good), str(baseline), cwd=workdir, timeout=_HANG_S)

    assert_refused(run, f"BASELINE: {baseline}, line 2: JSON nested deeper than 256 levels")


def test_report_skips_a_torn_line_with_an_unclosed_string_within_the_ceiling(tmp_path: Path) -> None:
    # a span whose attribute holds JSON text, torn mid-string by a writer that stopped
    quoted = json.dumps([{"k": ["v"]}] * 20_000)
    torn = json.dumps({"resourceSpans": [{"x": quoted}]})[: len(quoted) // 2]
    traces = tmp_path / "traces.jsonl"
    first = good_line(GOOD_NAMES[0], "1111111111111111")
    traces.write_text(f"{first}\n{torn}\n{good_line(GOOD_NAMES[1], '3333333333333333')}\n")

    run = tracesim_cli("report", str(traces), "--json", cwd=tmp_path, timeout=_HANG_S)

    assert run.status == 0, (run.status, run.err[-2000:])
    assert sorted(row["name"] for row in json.loads(run.out)["spans"]) == sorted(GOOD_NAMES)
    assert f"{traces}:2: skipped unreadable line" in run.err, run.err[-2000:]


# -- 2. YAML: every node counted, and a byte limit ------------------------------------------------------


def test_a_yaml_list_of_more_nodes_than_the_limit_is_refused_naming_the_line(tmp_path: Path) -> None:
    # 2 MB of "- a": unbounded, 40 s and 600 MB to compose (1,000,000 items: 743 MB, read whole)
    code = (
        "import resource\n"
        "from tracesim._inputs import InputError, MAX_YAML_NODES, load_yaml\n"
        "try:\n"
        "    print('read', len(load_yaml('- a\\n' * (MAX_YAML_NODES + 10), 'big.yaml')))\n"
        "except InputError as exc:\n"
        "    print(exc.line, exc)\n"
        "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(launched([sys.executable, "-c", code]), capture_output=True, text=True, timeout=300)
    nodes = _inputs.MAX_YAML_NODES
    # the sequence is node 1, so item N is node N + 1: the one past the limit is on line N
    refused = f"{nodes} big.yaml, line {nodes}: YAML of more than {nodes:,} nodes (the limit on YAML nodes)"
    assert refused in done.stdout, (done.stdout, done.stderr[-2000:])
    assert int(done.stdout.split("peak ")[1]) / 1024 < 500


def test_yaml_within_the_node_limit_is_read() -> None:
    assert len(load_yaml("- a\n" * 10_000, "ok.yaml")) == 10_000


def test_a_yaml_dataset_over_the_yaml_byte_limit_is_refused_before_it_is_read(workdir: Path) -> None:
    dataset = workdir / "huge.yaml"
    with dataset.open("wb") as handle:  # sparse: costs no disk
        handle.truncate(_inputs.MAX_YAML_BYTES + 1)

    run = experiment_run(workdir, dataset)

    assert_refused(run, f"{dataset}: 16,777,217 bytes, more than 16,777,216 bytes", "the limit on YAML size")


def test_yaml_text_over_the_byte_limit_is_refused_by_load_yaml() -> None:
    with pytest.raises(InputError, match=r"c.yaml: .*more than 16,777,216 .*\(the limit on YAML size\)"):
        load_yaml("a" * (_inputs.MAX_YAML_BYTES + 1), "c.yaml")


# -- 3. tracesim eval ----------------------------------------------------------------------------------


def test_eval_reads_a_row_over_the_line_limit_as_a_bad_row_without_holding_it(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    with data.open("wb") as handle:
        handle.write(b'{"id": "first", "output": "Paris", "expected": "Paris"}\n')
        handle.write(b'{"id": "long", "expected": "a", "output": "')
        block = b"a" * (1 << 20)
        for _ in range(_inputs.MAX_LINE_BYTES // len(block) + 1):
            handle.write(block)
        handle.write(b'"}\n')
        deep = "[" * 950 + '"Paris"' + "]" * 950  # past eval's limit (900): never given to json
        handle.write(f'{{"id": "deep", "output": {deep}, "expected": "Paris"}}\n'.encode())
        handle.write(b'{"id": "last", "output": "Lyon", "expected": "Paris"}\n')
    out = tmp_path / "scores.jsonl"

    run = tracesim_cli("eval", str(data), "-e", "exact", "-o", str(out), "--no-progress", cwd=tmp_path)

    assert run.status == 0, run.err[-2000:]
    lines = {line["line"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert [lines[n].get("status") for n in (2, 3)] == ["bad_row", "bad_row"], lines
    assert lines[1]["results"]["exact"]["score"] == 1.0
    assert lines[4]["results"]["exact"]["score"] == 0.0
    assert "line 2: a line longer than 67,108,864 bytes (the limit on lines)" in run.err, run.err[-2000:]
    assert "line 3: JSON nested deeper than 900 levels (the limit on nesting)" in run.err, run.err[-2000:]
    assert run.peak_mb < 250, run.peak_mb  # the line was 64 MiB: holding it decoded and parsed is 3x


# -- 4. a bad YAML scalar ----------------------------------------------------------------------------------


def test_a_yaml_dataset_with_an_impossible_date_is_exit_2_naming_the_line(workdir: Path) -> None:
    dataset = workdir / "cases.yaml"
    dataset.write_text("- input: a\n  expected: a\n- input: 2024-02-30\n", encoding="utf-8")

    run = experiment_run(workdir, dataset)

    assert_refused(run, f"{dataset}, line 3:", "day is out of range for month")


def test_dataset_from_file_names_the_line_of_a_bad_scalar(tmp_path: Path) -> None:
    from tracesim.experiments import Dataset, DatasetError

    dataset = tmp_path / "cases.yaml"
    dataset.write_text("cases:\n  - input: a\n  - input: 2024-02-30\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{dataset}, line 3: not valid YAML \(day is out of range"):
        Dataset.from_file(dataset)


# -- 5. one reader of JSON lines; ledgers agree ---------------------------------------------------------


def test_json_records_yields_each_line_or_its_error(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    lines = [b'{"a": 1}', b'"' + b"x" * 500 + b'"', b"[" * 300, b"{bad", b"  ", b"[1]", b'{"torn": "']
    path.write_bytes(b"\n".join(lines))

    for source in (path, str(path), io.BytesIO(path.read_bytes())):
        got = list(_inputs.json_records(source, limit=400))
        name = str(path) if not isinstance(source, io.BytesIO) else "<stream>"
        assert [number for number, _ in got] == [1, 2, 3, 4, 6, 7]
        values = dict(got)
        assert values[1] == {"a": 1}
        assert values[6] == [1]
        for number in (2, 3, 4, 7):
            assert isinstance(values[number], InputError)
            assert values[number].line == number
        assert values[2].problem == "a line longer than 400 bytes (the limit on lines)"
        assert values[2].limit == "lines"
        assert str(values[2]) == f"{name}, line 2: a line longer than 400 bytes (the limit on lines)"
        assert values[3].problem == "JSON nested deeper than 256 levels (the limit on nesting)"
        assert values[4].problem.startswith("not valid JSON (")
        assert values[7].problem.startswith("not valid JSON (Unterminated string")
