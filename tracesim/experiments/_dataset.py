"""`Dataset`: the cases an experiment runs a task over, built in code or read from a file.

The cases themselves (`Case`, their ids, `DatasetError`) are `tracesim.experiments._case`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tracesim._errors import ConfigError
from tracesim.experiments._case import Case, DatasetError, _check_id, derived_id
from tracesim.runs import NOT_GIVEN, Expected, tool_calls

if TYPE_CHECKING:
    from tracesim.experiments._experiment_report import ExperimentReport

__all__ = ["Dataset"]

TOOL_CALLS_FIELD = "expected_tool_calls"
"""The field of a dataset record holding the tool calls its run should make."""


class Dataset:
    """Cases to run a task over: written in code or read from a JSONL, CSV or YAML file.

    Case ids must be unique; cases without one get an id derived from their input (a second
    case with the same input gets ``-2`` appended, and so on).

    Example:
        >>> from tracesim.experiments import Case, Dataset
        >>> dataset = Dataset([Case("2+2", expected="4", id="add"), Case("3*3", expected="9")], name="maths")
        >>> len(dataset), [case.id for case in dataset][0]
        (2, 'add')
        >>> report = dataset.evaluate(lambda q: str(eval(q)), evaluators=["exact"])
        >>> report.pass_rate
        1.0
    """

    def __init__(self, cases: Iterable[Case], *, name: str = "dataset") -> None:
        if not isinstance(name, str) or not name.strip():
            raise DatasetError(f"Dataset name must be non-empty text, got {name!r}")
        self.name = name
        listed = list(cases)
        duplicate = _first_duplicate(listed)
        if duplicate is not None:
            first, second = duplicate
            raise DatasetError(
                f"duplicate case id {listed[second].id!r} (cases {first + 1} and {second + 1}); "
                "case ids must be unique"
            )
        self._cases = _with_ids(listed)
        if not self._cases:
            raise DatasetError("a dataset needs at least one case")
        self._by_id = {case.id: case for case in self._cases}

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        input: str | Sequence[str] = "input",
        expected: str | None = None,
        id: str = "id",
        name: str | None = None,
        format: str | None = None,
    ) -> Dataset:
        """Read cases from a ``.jsonl``, ``.csv``, ``.yaml``/``.yml`` or ``.json`` file.

        Each record (a JSONL line, a CSV row, a YAML or JSON list item) gives the input from
        the ``input`` field (or several fields, as one mapping, when ``input`` is a list of
        names), the expected output from ``expected`` (default: an ``expected`` field when
        present; when you name a field it must be in every record), the tool calls the run
        should make from an ``expected_tool_calls`` field when present (a list of ``{"name",
        "arguments"}``, or JSON text of one, as in a CSV cell: the case's expected value is
        then a `tracesim.Expected` of both), the id from ``id`` when present; every other field
        becomes metadata (a ``metadata`` mapping is merged in). An empty CSV cell in the
        expected column means no expected output, in ``expected_tool_calls`` no tool calls. A
        YAML file holds a list of records or a mapping with ``cases:`` (and optionally
        ``name:``).

        The file is read within limits, and refused beyond them before it costs more: 256 MiB,
        JSON nested 256 levels, YAML nested 100 levels, YAML aliases adding 100,000 nodes once
        expanded (anchors and ``<<: *defaults`` merges are fine; a recursive alias is refused).

        Raises:
            DatasetError: the file cannot be read, is over a limit, a record lacks a field or
                has tool calls that are not a list of ``{"name", "arguments"}``; the message
                names the file, the line and the field (the item) or the limit.

        Example:
            >>> dataset = Dataset.from_file("maths.jsonl", input="question")  # doctest: +SKIP
            >>> dataset["add"].input, dataset["add"].expected  # doctest: +SKIP
            ('2+2', '4')
        """
        from tracesim.experiments._dataset_files import read_records

        fields = Fields(input, expected, id)
        source = os.fspath(path)
        file_name, fmt, records = read_records(source, format)
        # CSV has no null: an empty cell in the expected column means "no expected output".
        cases = [fields.case(record, f"{source}, {where}", fmt == "csv") for where, record in records]
        if not cases:
            raise DatasetError(f"{source}: no cases in the file")
        duplicate = _first_duplicate(cases)
        if duplicate is not None:
            first, second = (records[i][0] for i in duplicate)
            raise DatasetError(
                f"{source}: duplicate case id {cases[duplicate[1]].id!r} ({first} and {second}); "
                "case ids must be unique"
            )
        return cls(cases, name=name or file_name)

    @property
    def cases(self) -> tuple[Case, ...]:
        """The cases, in order, each with its id."""
        return self._cases

    def __len__(self) -> int:
        return len(self._cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self._cases)

    def __getitem__(self, key: int | str) -> Case:
        """A case by position, or by id."""
        if isinstance(key, str):
            return self._by_id[key]
        return self._cases[key]

    def __repr__(self) -> str:
        return f"Dataset(name={self.name!r}, cases={len(self._cases)})"

    def evaluate(
        self,
        task: Callable[[Any], Any] | Callable[[Any], Awaitable[Any]],
        *,
        evaluators: Sequence[Any] = (),
        max_concurrency: int = 8,
        repeat: int = 1,
        name: str | None = None,
        timeout_s: float | None = None,
    ) -> ExperimentReport:
        """Run ``task`` on every case (``repeat`` times each), score the outputs, and report.

        ``task`` takes a case's input and returns the output; it may be ``async def``. Sync
        tasks run on a pool of ``max_concurrency`` threads, async ones on an event loop with at
        most ``max_concurrency`` cases in flight. ``evaluators`` are `Evaluator` objects, config
        mappings or spec strings (``"levenshtein:threshold=0.8"``); they score each output right
        after the task returns (every case, whatever their ``sample_rate``). An exception the
        task raises is recorded in its row, never raised; so is a run past ``timeout_s``.

        When tracesim is configured, each run is a root span (``CHAIN``, named ``experiment
        NAME``) holding the input, output, expected output and scores, with the task's own
        traced calls nested under it; the report rows carry their trace ids.

        Called inside a running event loop (a notebook, an async test), this raises: use
        ``await dataset.aevaluate(...)`` there.

        Raises:
            ConfigError: a bad evaluator, ``repeat``, ``max_concurrency`` or ``timeout_s``.
        """
        from tracesim.experiments._run import evaluate_sync

        return evaluate_sync(self, task, evaluators, max_concurrency, repeat, name, timeout_s)

    async def aevaluate(
        self,
        task: Callable[[Any], Any] | Callable[[Any], Awaitable[Any]],
        *,
        evaluators: Sequence[Any] = (),
        max_concurrency: int = 8,
        repeat: int = 1,
        name: str | None = None,
        timeout_s: float | None = None,
    ) -> ExperimentReport:
        """The async form of `evaluate`, for code already running on an event loop.

        Example:
            >>> import asyncio
            >>> async def double(x):
            ...     return x * 2
            >>> dataset = Dataset([Case(2, expected=4), Case(3, expected=7)])
            >>> report = asyncio.run(dataset.aevaluate(double, evaluators=["exact"]))
            >>> [row.passed for row in report.rows]
            [True, False]
        """
        from tracesim.experiments._run import Experiment

        experiment = Experiment.build(self, task, evaluators, max_concurrency, repeat, name, timeout_s)
        return await experiment.run()


@dataclass(frozen=True)
class Fields:
    """Which fields of a file's records hold the input, the expected output and the id."""

    input: str | Sequence[str]
    expected: str | None
    id: str

    def __post_init__(self) -> None:
        names = [self.input] if isinstance(self.input, str) else list(self.input)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise DatasetError(f"input= names a field or a list of fields, got {self.input!r}")

    def case(self, record: Any, where: str, blank_is_none: bool = False) -> Case:
        """The case a record describes; ``where`` names the file and line for errors."""
        if not isinstance(record, Mapping):
            raise DatasetError(f"{where}: expected a record with named fields, got {type(record).__name__}")
        keys = [self.input] if isinstance(self.input, str) else list(self.input)
        for key in keys:
            if key not in record:
                raise DatasetError(
                    f"{where}: no {key!r} field (fields: {_names(record)}); "
                    "name the input field with input=..."
                )
        value = record[self.input] if isinstance(self.input, str) else {k: record[k] for k in keys}
        expected_key = self.expected or "expected"
        if self.expected is not None and expected_key not in record:
            raise DatasetError(
                f"{where}: no {expected_key!r} field (fields: {_names(record)}); "
                "name the expected field with expected=..., or leave it out"
            )
        expected = record.get(expected_key)
        if blank_is_none and expected == "":
            expected = None
        calls = record.get(TOOL_CALLS_FIELD)
        if calls is not None and calls != "":  # an empty CSV cell: no tool calls expected
            try:
                checked = tool_calls(calls, TOOL_CALLS_FIELD)
            except ConfigError as exc:
                raise DatasetError(
                    f"{where}: field {exc.setting!r}: expected {exc.accepted}, got {exc.value!r:.200}"
                ) from None
            expected = Expected(output=NOT_GIVEN if expected is None else expected, tool_calls=checked)
        case_id = record.get(self.id)
        used = {*keys, expected_key, TOOL_CALLS_FIELD, self.id}
        metadata = {k: v for k, v in record.items() if k not in used and k != "metadata"}
        extra = record.get("metadata")
        if isinstance(extra, Mapping):
            metadata = {**extra, **metadata}
        elif extra is not None:
            metadata["metadata"] = extra
        if case_id is not None and case_id != "":
            case_id = _check_id(case_id, f"{where}: field {self.id!r}")
        return Case(value, expected, metadata, case_id or None)


def _names(record: Mapping[Any, Any]) -> str:
    return ", ".join(repr(str(k)) for k in record) or "none"


def _first_duplicate(cases: list[Case]) -> tuple[int, int] | None:
    """The positions of the first two cases with the same given id, if any."""
    seen: dict[str, int] = {}
    for index, case in enumerate(cases):
        if not isinstance(case, Case):
            raise DatasetError(
                f"Dataset() takes Case objects, got {type(case).__name__} at position {index + 1}; "
                "write Case(input, expected=...)"
            )
        if case.id is not None:
            if case.id in seen:
                return seen[case.id], index
            seen[case.id] = index
    return None


def _with_ids(cases: list[Case]) -> tuple[Case, ...]:
    """The cases (whose given ids are unique) with an id each: the missing ones derived."""
    taken = {case.id for case in cases if case.id is not None}
    out = []
    for case in cases:
        if case.id is None:
            base = candidate = derived_id(case.input)
            suffix = 1
            while candidate in taken:
                suffix += 1
                candidate = f"{base}-{suffix}"
            taken.add(candidate)
            case = replace(case, id=candidate)
        out.append(case)
    return tuple(out)
