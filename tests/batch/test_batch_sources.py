"""Batch sources read a file in parts exactly as ``tracesim eval`` reads it whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batchdata import traced_file, write_csv, write_jsonl

pytest.importorskip("pandas", reason="the 'dask' extra is not installed")
pytest.importorskip("pyarrow", reason="the 'dask' extra is not installed")

import tracesim
from tracesim.batch import Records, SourceError, Spans
from tracesim.batch._sources import id_text
from tracesim.cli._eval_io import read_rows


def all_records(source: Records | Spans) -> list[tuple[Any, ...]]:
    """Every record of every part, in part order: keys, what to score, why bad."""
    found = []
    for part in source.parts():
        chunk = source.read(part)
        for i, triple in enumerate(chunk.triples):
            keys = tuple(column[i] for column in chunk.keys.values())
            found.append((*keys, *triple, chunk.bad[i]))
    return found


def cli_records(path: Path, fmt: str) -> list[tuple[Any, ...]]:
    """The same, as the local ``tracesim eval`` reads the file (one pass, no parts)."""
    from tracesim.batch._records import Columns

    found: list[tuple[Any, ...]] = []
    for row in read_rows(path, fmt, Columns()):
        if len(row) == 2:
            found.append((str(path), row[0], None, None, None, None, row[1]))
        else:
            number, row_id, output, expected, input_value = row
            found.append((str(path), number, id_text(row_id), output, expected, input_value, None))
    return found


@pytest.mark.parametrize("block_bytes", [64, 1000, 1 << 20])
def test_jsonl_parts_hold_every_line_once_with_its_line_number(tmp_path: Path, block_bytes: int) -> None:
    data = tmp_path / "rows.jsonl"
    bad = write_jsonl(data, 300)
    with data.open("ab") as handle:
        handle.write(b'{"output": "no newline at the end", "expected": "x"}')  # the last line
    source = Records(str(data), block_bytes=block_bytes)
    assert len(source.parts()) > (1 if block_bytes < 10_000 else 0)
    records = all_records(source)
    assert records == cli_records(data, "jsonl")
    assert {r[1] for r in records if r[-1] is not None} == bad
    assert records[-1][3] == "no newline at the end"


@pytest.mark.parametrize("block_bytes", [50, 700, 1 << 20])
def test_csv_parts_never_cut_a_quoted_field(tmp_path: Path, block_bytes: int) -> None:
    data = tmp_path / "rows.csv"
    write_csv(data, 200)
    source = Records(str(data), block_bytes=block_bytes)
    records = all_records(source)
    assert records == cli_records(data, "csv")
    multiline = [r for r in records if isinstance(r[3], str) and "\n" in r[3]]
    assert len(multiline) == len([n for n in range(1, 201) if n % 5 == 0 and n % 53 != 7])
    assert sum(r[-1] is not None for r in records) == 4  # the short rows, and nothing else


def test_csv_and_parquet_without_the_output_column_fail_before_scoring(tmp_path: Path) -> None:
    import pandas as pd

    (tmp_path / "a.csv").write_text("answer,expected\nParis,Paris\n", encoding="utf-8")
    with pytest.raises(SourceError, match=r"no 'output' column \(columns: answer, expected\)"):
        Records(str(tmp_path / "a.csv")).parts()
    pd.DataFrame({"answer": ["Paris"]}).to_parquet(tmp_path / "a.parquet")
    with pytest.raises(SourceError, match="no 'output' column"):
        Records(str(tmp_path / "a.parquet")).parts()
    with pytest.raises(SourceError, match="no file matches"):
        Records(str(tmp_path / "*.nothing")).parts()


def test_parquet_row_groups_are_cut_into_parts_numbered_by_row(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"id": i, "output": f"o{i}", "expected": None if i % 4 == 0 else f"o{i}"} for i in range(250)]
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, tmp_path / "a.parquet", row_group_size=100)  # groups of 100, 100, 50
    source = Records(str(tmp_path / "a.parquet"), parquet_rows=30, output="output")
    parts = source.parts()
    assert [p.rows for p in parts] == [30, 30, 30, 10] * 2 + [30, 20]
    records = all_records(source)
    assert [r[1] for r in records] == list(range(1, 251))
    assert [(r[2], r[3], r[4]) for r in records] == [
        (str(i), f"o{i}", rows[i]["expected"]) for i in range(250)
    ]


def test_globs_read_every_file_in_order(tmp_path: Path) -> None:
    for name in ("b.jsonl", "a.jsonl"):
        (tmp_path / name).write_text(json.dumps({"output": name}) + "\n", encoding="utf-8")
    records = all_records(Records(str(tmp_path / "*.jsonl")))
    assert [(Path(r[0]).name, r[1], r[3]) for r in records] == [
        ("a.jsonl", 1, "a.jsonl"),
        ("b.jsonl", 1, "b.jsonl"),
    ]


def test_spans_selected_by_name_and_kind_keep_their_ids(tmp_path: Path) -> None:
    from tracesim.tracefile import load_spans

    path = traced_file(tmp_path)
    with pytest.warns(tracesim.tracefile.TraceFileWarning):
        spans = {s.span_id: s for s in load_spans(path)}
    records = all_records(Spans(str(path), name="answer", kind="agent", block_bytes=300))
    good = [r for r in records if r[-1] is None]
    assert [(r[6], r[7], r[8]) for r in good] == [
        ("Warsaw", "Warsaw", "Where was Curie born?"),
        ("Warsaw", None, "Where is Paris?"),
    ]
    for record in good:
        span = spans[record[3]]
        assert (span.trace_id, span.name, span.end_time_unix_nano) == (record[2], "answer", record[5])
    reasons = sorted(r[-1].split(" (")[0] for r in records if r[-1] is not None)
    assert reasons == ["a value was cut when traced", "invalid JSON", "not OTLP/JSON"]
    assert len(all_records(Spans(str(path), kind="tool"))) == 3 + 2  # three tools, two bad lines


def test_a_folder_stands_for_the_data_files_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    traced_file(folder)  # traces.jsonl
    (folder / "traces.jsonl").rename(folder / "traces.1.jsonl")  # as rotated
    traced_file(folder)
    (folder / "notes.txt").write_text("not data")
    (folder / ".hidden.jsonl").write_text("{}")
    one = all_records(Spans(str(folder / "traces.jsonl"), name="answer"))
    both = all_records(Spans(str(folder), name="answer"))
    assert len(both) == 2 * len(one)
    assert {r[0] for r in both} == {str(folder / "traces.jsonl"), str(folder / "traces.1.jsonl")}
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceError, match=r"a directory with no \.jsonl"):
        all_records(Spans(str(empty)))


def test_a_bad_span_kind_fails_when_the_source_is_made() -> None:
    with pytest.raises(tracesim.ConfigError, match="kind"):
        Spans("traces.jsonl", kind="robot")
