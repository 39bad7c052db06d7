"""The refusal of an input: `InputError`, naming the file, the line and the limit.

Its own module so that every reader of `tracesim._inputs` (JSON in the package, YAML in
`tracesim._inputs._yaml`) raises the same error without importing the package back.
"""

from __future__ import annotations

from tracesim._errors import TracesimError

__all__ = ["InputError"]


class InputError(TracesimError, ValueError):
    """A file tracesim cannot read, or not within its limits.

    The message names the file, the line when there is one and the limit that applied;
    ``path``, ``line``, ``problem`` (what is wrong, without the file and line) and ``limit``
    hold them for programs.

    Example:
        >>> str(InputError("cases.yaml", "YAML nested deeper than 100 levels", line=3))
        'cases.yaml, line 3: YAML nested deeper than 100 levels'
    """

    def __init__(self, path: str, problem: str, *, line: int | None = None, limit: str | None = None) -> None:
        self.path = path
        self.line = line
        self.limit = limit
        self.problem = problem + (f" (the limit on {limit})" if limit else "")
        where = f"{path}, line {line}" if line is not None else path
        super().__init__(f"{where}: {self.problem}")
