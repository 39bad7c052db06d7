"""Records out of dataset files (JSONL, CSV, YAML, JSON), each with the line it starts on.

Every problem is a `DatasetError` naming the file and the line, since a dataset is read before
anything runs: a bad file should stop the experiment at once, not cost a run. Files are read
within `tracesim._inputs`' limits (size, JSON nesting, YAML nesting and aliases), and a file
over one is refused with the limit named, before it costs more than the limit.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import Any

from tracesim import _inputs
from tracesim.experiments._case import DatasetError

__all__ = ["FORMATS", "read_records"]

FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
}

Records = list[tuple[str, Any]]  # (where, e.g. "line 3"; the record)


def read_records(path: str, fmt: str | None) -> tuple[str, str, Records]:
    """The dataset's name (a YAML ``name:``, else the file's stem), the format and the records.

    Example:
        >>> try:
        ...     read_records("cases.txt", None)
        ... except DatasetError as exc:
        ...     print(str(exc)[:60])
        cases.txt: unknown dataset format '.txt'; use a .jsonl, .csv
    """
    file = Path(path)
    if fmt is None:
        fmt = FORMATS.get(file.suffix.lower())
        if fmt is None:
            raise DatasetError(
                f"{path}: unknown dataset format {file.suffix or '(no suffix)'!r}; use a .jsonl, .csv, "
                ".yaml or .json file, or pass format='jsonl' (or 'csv', 'yaml', 'json')"
            )
    elif fmt not in ("jsonl", "csv", "yaml", "json"):
        raise DatasetError(f"format={fmt!r}: use 'jsonl', 'csv', 'yaml' or 'json'")
    name = file.stem
    try:
        if fmt == "yaml":  # composed in pure Python: a limit of its own
            text = _inputs.read_text(
                file, encoding="utf-8-sig", limit=_inputs.MAX_YAML_BYTES, what="YAML size"
            )
        else:
            text = _inputs.read_text(file, encoding="utf-8-sig")
        if fmt == "csv":
            records = _csv(path, text)
        elif fmt == "yaml":
            own_name, records = _yaml(path, text)
            name = own_name or name
        else:
            records = _jsonl(path, text) if fmt == "jsonl" else _json(path, text)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    except _inputs.InputError as exc:
        raise DatasetError(str(exc)) from None
    return name, fmt, records


def _jsonl(path: str, text: str) -> Records:
    records: Records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = _inputs.loads(line, path, line=number)
        records.append((f"line {number}", record))
    return records


def _json(path: str, text: str) -> Records:
    data = _inputs.loads(text, path)
    items = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise DatasetError(f'{path}: expected a JSON list of records, or {{"cases": [...]}}')
    return [(f"item {index}", item) for index, item in enumerate(items, start=1)]


def _csv(path: str, text: str) -> Records:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # the file's size is the limit
    records: Records = []
    with io.StringIO(text, newline="") as handle:
        reader = csv.DictReader(handle)
        try:
            header = reader.fieldnames
            if not header:
                return records
            duplicated = sorted({name for name in header if header.count(name) > 1})
            if duplicated:
                raise DatasetError(f"{path}, line 1: the header names column {duplicated[0]!r} twice")
            start = reader.line_num + 1
            for row in reader:
                if None in row:
                    raise DatasetError(
                        f"{path}, line {start}: {len(header) + len(row[None])} fields, "
                        f"but the header has {len(header)}"
                    )
                if any(value is None for value in row.values()):
                    raise DatasetError(
                        f"{path}, line {start}: fewer fields than the header's {len(header)} "
                        f"(missing {', '.join(repr(k) for k, v in row.items() if v is None)})"
                    )
                records.append((f"line {start}", row))
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DatasetError(f"{path}, line {reader.line_num}: unreadable CSV ({exc})") from None
    return records


def _yaml(path: str, text: str) -> tuple[str | None, Records]:
    import yaml

    loader = _inputs.bounded_loader(text, path)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, []
        items, name = root, None
        if isinstance(root, yaml.MappingNode):
            fields = {key.value: value for key, value in root.value if isinstance(key, yaml.ScalarNode)}
            if "cases" not in fields:
                raise DatasetError(f"{path}: expected a list of records, or a mapping with 'cases:'")
            items = fields["cases"]
            named = fields.get("name")
            if isinstance(named, yaml.ScalarNode) and named.value.strip():
                name = named.value
        if not isinstance(items, yaml.SequenceNode):
            line = items.start_mark.line + 1
            raise DatasetError(f"{path}, line {line}: expected a list of records")
        # Built one item at a time, so each record keeps the line it starts on.
        return name, [_construct(loader, item, path) for item in items.value]
    except RecursionError:  # within the limits but called from a deep stack
        raise DatasetError(f"{path}: YAML nested too deeply to read") from None
    except yaml.YAMLError as exc:
        raise DatasetError(str(_inputs.yaml_error(exc, path))) from None
    finally:
        loader.dispose()


def _construct(loader: Any, item: Any, path: str) -> tuple[str, Any]:
    """The record of one YAML item and its line; a scalar no constructor takes names that line."""
    where = f"line {item.start_mark.line + 1}"
    try:
        return where, loader.construct_document(item)
    except RecursionError:
        raise
    except Exception as exc:  # yaml.YAMLError, or what a constructor raises (2024-02-30: ValueError)
        error = _inputs.yaml_error(exc, path)
        if error.line is None:
            error = _inputs.InputError(path, error.problem, line=item.start_mark.line + 1)
        raise DatasetError(str(error)) from None
