"""Datasets from code and from JSONL, CSV, YAML and JSON files; bad files say where and what."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracesim.experiments import Case, Dataset, DatasetError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_dataset_in_code_keeps_ids_and_derives_the_missing_ones() -> None:
    dataset = Dataset(
        [Case("2+2", "4", id="add"), Case("3*3", "9", {"level": "easy"}), Case("3*3", "9")], name="maths"
    )
    add, square, again = dataset.cases
    assert (add.id, add.input, add.expected) == ("add", "2+2", "4")
    assert square.metadata == {"level": "easy"}
    # derived from the input: the same in every run and every process, a suffix for a repeated input
    assert square.id == Dataset([Case("3*3")]).cases[0].id
    assert again.id == f"{square.id}-2"
    assert dataset["add"] is add
    assert dataset.name == "maths"
    assert len(dataset) == 3


def test_integer_ids_become_text() -> None:
    assert Dataset([Case("x", id=7)])[0].id == "7"  # type: ignore[arg-type]


def test_jsonl_with_named_fields_and_metadata(tmp_path: Path) -> None:
    path = write(
        tmp_path / "golden.jsonl",
        '{"id": "curie", "question": "Where was Marie Curie born?", "answer": "Warsaw", "topic": "science"}\n'
        "\n"
        '{"id": 2, "question": "Who proposed the imitation game?", "metadata": {"source": "wiki"}}\n',
    )
    dataset = Dataset.from_file(path, input="question")
    curie, turing = dataset.cases
    assert dataset.name == "golden"
    assert (curie.id, curie.input, curie.expected) == ("curie", "Where was Marie Curie born?", None)
    assert curie.metadata == {"answer": "Warsaw", "topic": "science"}
    assert (turing.id, turing.metadata) == ("2", {"source": "wiki"})


def test_a_named_expected_field_is_required_in_every_record(tmp_path: Path) -> None:
    path = write(
        tmp_path / "golden.jsonl",
        '{"question": "a", "answer": "A"}\n{"question": "b"}\n',
    )
    with pytest.raises(DatasetError) as caught:
        Dataset.from_file(path, input="question", expected="answer")
    assert str(caught.value) == (
        f"{path}, line 2: no 'answer' field (fields: 'question'); "
        "name the expected field with expected=..., or leave it out"
    )


def test_a_missing_input_field_names_the_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", '{"input": "a"}\n{"question": "b", "expected": "B"}\n')
    with pytest.raises(DatasetError) as caught:
        Dataset.from_file(path)
    assert str(caught.value) == (
        f"{path}, line 2: no 'input' field (fields: 'question', 'expected'); "
        "name the input field with input=..."
    )


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", '{"input": "a"}\n{"input": \n')
    with pytest.raises(DatasetError, match=r"cases\.jsonl, line 2: not valid JSON"):
        Dataset.from_file(path)


def test_a_record_that_is_not_an_object_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", '{"input": "a"}\n["b"]\n')
    with pytest.raises(DatasetError, match=r"line 2: expected a record with named fields, got list"):
        Dataset.from_file(path)


def test_duplicate_ids_in_a_file_are_refused_with_both_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cases.jsonl", '{"id": "q", "input": "a"}\n{"input": "b"}\n{"id": "q", "input": "c"}\n'
    )
    with pytest.raises(DatasetError) as caught:
        Dataset.from_file(path)
    assert str(caught.value) == f"{path}: duplicate case id 'q' (line 1 and line 3); case ids must be unique"


def test_csv_with_several_input_columns(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cases.csv",
        "id,question,context,expected,team\nq1,Where?,Curie was born in Warsaw,Warsaw,a\nq2,Who?,nobody,,b\n",
    )
    dataset = Dataset.from_file(path, input=["question", "context"])
    q1, q2 = dataset.cases
    assert q1.input == {"question": "Where?", "context": "Curie was born in Warsaw"}
    assert (q1.expected, q1.metadata) == ("Warsaw", {"team": "a"})
    assert q2.expected is None  # an empty cell is no expected output


def test_csv_problems_name_the_line_and_column(tmp_path: Path) -> None:
    missing = write(tmp_path / "missing.csv", "question,expected\nWhere?,Warsaw\n")
    with pytest.raises(
        DatasetError, match=r"missing\.csv, line 2: no 'input' field \(fields: 'question', 'expected'\)"
    ):
        Dataset.from_file(missing)
    short = write(tmp_path / "short.csv", "input,expected,id\na,A,1\nb,B\n")
    with pytest.raises(
        DatasetError, match=r"short\.csv, line 3: fewer fields than the header's 3 \(missing 'id'\)"
    ):
        Dataset.from_file(short)
    long = write(tmp_path / "long.csv", "input,expected\na,A\nb,B,extra\n")
    with pytest.raises(DatasetError, match=r"long\.csv, line 3: 3 fields, but the header has 2"):
        Dataset.from_file(long)


def test_csv_line_numbers_count_quoted_newlines(tmp_path: Path) -> None:
    path = write(tmp_path / "multi.csv", 'input,expected\n"two\nlines",A\nb\n')
    with pytest.raises(DatasetError, match=r"multi\.csv, line 4: fewer fields"):
        Dataset.from_file(path)


def test_yaml_list_and_mapping_forms(tmp_path: Path) -> None:
    listed = write(tmp_path / "cases.yaml", "- input: 2+2\n  expected: '4'\n- input: {a: 1}\n  id: map\n")
    assert [c.input for c in Dataset.from_file(listed)] == ["2+2", {"a": 1}]
    mapped = write(
        tmp_path / "suite.yml",
        "name: arithmetic\ncases:\n  - id: add\n    input: 2+2\n    expected: '4'\n    tags: [easy]\n",
    )
    dataset = Dataset.from_file(mapped)
    assert dataset.name == "arithmetic"
    assert dataset["add"].metadata == {"tags": ["easy"]}


def test_yaml_problems_name_the_line(tmp_path: Path) -> None:
    missing = write(tmp_path / "cases.yaml", "- input: a\n- question: b\n  expected: B\n")
    with pytest.raises(DatasetError, match=r"cases\.yaml, line 2: no 'input' field"):
        Dataset.from_file(missing)
    broken = write(tmp_path / "broken.yaml", "- input: a\n- input: [b\n")
    with pytest.raises(DatasetError, match=r"broken\.yaml, line 3: not valid YAML"):
        Dataset.from_file(broken)
    wrong = write(tmp_path / "wrong.yaml", "name: x\n")
    with pytest.raises(DatasetError, match=r"expected a list of records, or a mapping with 'cases:'"):
        Dataset.from_file(wrong)


def test_json_list(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.json", '[{"input": "a", "expected": "A"}, {"output": "b"}]')
    with pytest.raises(DatasetError, match=r"cases\.json, item 2: no 'input' field"):
        Dataset.from_file(path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("cases.txt", "", "unknown dataset format '.txt'"),
        ("empty.jsonl", "\n\n", "no cases in the file"),
        ("latin.jsonl", None, "not UTF-8 text"),
        ("absent.jsonl", "skip", "cannot read the file"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, text: str | None, message: str) -> None:
    path = tmp_path / name
    if text is None:
        path.write_bytes(b'{"input": "caf\xe9"}\n')
    elif text != "skip":
        path.write_text(text)
    with pytest.raises(DatasetError, match=message):
        Dataset.from_file(path)


def test_bad_cases_in_code() -> None:
    with pytest.raises(DatasetError, match="duplicate case id 'x' \\(cases 1 and 2\\)"):
        Dataset([Case(1, id="x"), Case(2, id="x")])
    with pytest.raises(DatasetError, match="takes Case objects, got str at position 1"):
        Dataset(["2+2"])  # type: ignore[list-item]
    with pytest.raises(DatasetError, match="at least one case"):
        Dataset([])
    with pytest.raises(DatasetError, match="a case id is text or an integer"):
        Case(1, id=1.5)  # type: ignore[arg-type]
