"""`Case`: one input of an experiment, and what the experiment runner needs of a dataset.

A case is one input, the output it should give (optional) and free metadata. Every case has an
id, given or derived from its input, because comparing two runs matches cases by id: a derived
id is a hash of the input, so inserting or reordering cases does not pair a case with another's
baseline. `Cases` is what the runner (`tracesim.experiments._run`) reads of a `Dataset`: its
name and its cases; it stands here, below both, so neither imports the other's module back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracesim._capture import to_jsonable
from tracesim._errors import TracesimError
from tracesim.runs import NOT_GIVEN, Expected

__all__ = ["Case", "Cases", "DatasetError", "derived_id", "expected_data"]

_ID_HEX = 10  # 40 bits: a collision is unlikely below millions of cases, and handled anyway


class DatasetError(TracesimError, ValueError):
    """A dataset cannot be built: a file that cannot be read, a missing column, duplicate ids.

    The message names the file, the line (or item) and what to change.

    Example:
        >>> from tracesim.experiments import Dataset
        >>> try:
        ...     Dataset([Case("2+2", id="sum"), Case("3+3", id="sum")])
        ... except DatasetError as exc:
        ...     print(exc)
        duplicate case id 'sum' (cases 1 and 2); case ids must be unique
    """


@dataclass(frozen=True)
class Case:
    """One input for the task, the output it should produce, and metadata.

    ``input`` is any value: the task is called with it as its one argument (a mapping stays
    one mapping; write ``lambda q: answer(**q)`` to spread it). ``expected`` is what the
    evaluators compare the output with; without it they report ``skipped``. It may be a
    `tracesim.Expected` (an output and/or the tool calls the run should make): string
    evaluators get its output (and skip without one), evaluators that score runs all of it. ``id`` names the
    case in reports and comparisons; when left out the dataset derives one from the input.

    Example:
        >>> case = Case("Where was Marie Curie born?", expected="Warsaw", metadata={"topic": "science"})
        >>> case.expected, case.metadata["topic"]
        ('Warsaw', 'science')
    """

    input: Any
    expected: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        if self.id is not None:
            object.__setattr__(self, "id", _check_id(self.id, "Case.id"))
        if not isinstance(self.metadata, Mapping):
            raise DatasetError(f"Case.metadata must be a mapping, got {type(self.metadata).__name__}")


def _check_id(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DatasetError(f"{where}: a case id is text or an integer, got {type(value).__name__} {value!r}")
    text = str(value).strip()
    if not text:
        raise DatasetError(f"{where}: a case id cannot be empty")
    return text


def expected_data(value: Any) -> Any:
    """A case's expected value as JSON-like data, for reports: a `tracesim.Expected` becomes
    ``{"output": ..., "tool_calls": [...]}`` with only the parts it has.

    Example:
        >>> from tracesim.runs import Expected
        >>> expected_data(Expected(tool_calls=[{"name": "search"}]))
        {'tool_calls': [{'name': 'search', 'arguments': {}}]}
    """
    if not isinstance(value, Expected):
        return to_jsonable(value)
    data: dict[str, Any] = {}
    if value.output is not NOT_GIVEN:
        data["output"] = to_jsonable(value.output)
    if value.tool_calls is not None:
        data["tool_calls"] = [to_jsonable(call.as_dict()) for call in value.tool_calls]
    return data


def derived_id(value: Any) -> str:
    """A short stable id for a case without one: a hash of its input.

    Example:
        >>> derived_id("Where was Marie Curie born?") == derived_id("Where was Marie Curie born?")
        True
        >>> len(derived_id({"question": "2+2"}))
        10
    """
    canonical = json.dumps(to_jsonable(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:_ID_HEX]


class Cases(Protocol):
    """A named sequence of cases, as the experiment runner reads a `Dataset`."""

    @property
    def name(self) -> str:
        """The dataset's name (the experiment's, unless one is given)."""
        ...

    def __iter__(self) -> Iterator[Case]:
        """The cases, in order."""
        ...
