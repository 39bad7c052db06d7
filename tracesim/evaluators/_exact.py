"""``exact``: equality of texts, or of parsed JSON."""

from __future__ import annotations

import json
from typing import Any

from tracesim.evaluators._base import Evaluator, Measurement
from tracesim.evaluators._compared_text import as_text
from tracesim.evaluators._options import check_bool, check_int

__all__ = ["ExactMatch", "JsonTooLongError"]


class JsonTooLongError(ValueError):
    """A JSON text above ``max_json_chars``: ``exact(json=True)`` reports it as an error result.

    Example:
        >>> ExactMatch(json=True, max_json_chars=5).evaluate("[1, 2, 3]", "[1, 2, 3]").error_type
        'JsonTooLongError'
    """


class ExactMatch(Evaluator):
    """1.0 when the output equals the expected value, else 0.0.

    Texts are compared as Python code points, case-sensitively and unstripped by default
    (``case_sensitive``, ``strip``). With ``json=True`` both sides are parsed as JSON
    (non-strings are taken as already parsed) and compared as data, so key order and
    spacing do not matter; an output that is not valid JSON scores 0.0. The default
    threshold is 1.0, so ``passed`` is the verdict.

    Comparing texts costs microseconds at any length, so nothing is cut. Parsing JSON holds
    the GIL (about 0.15 s per megabyte, stopping the host's other threads), so with
    ``json=True`` a text longer than ``max_json_chars`` (100,000) is not parsed: the
    result is an error naming the cap. ``max_json_chars=None`` removes the cap.

    Example:
        >>> ExactMatch(json=True).evaluate('{"a": 1, "b": 2}', '{"b": 2, "a": 1}').score
        1.0
    """

    type_name = "exact"
    default_threshold = 1.0
    score_range = (0.0, 1.0)

    def __init__(
        self,
        *,
        case_sensitive: bool = True,
        strip: bool = False,
        json: bool = False,
        max_json_chars: int | None = 100_000,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.case_sensitive = check_bool(f"{key}.case_sensitive", case_sensitive)
        self.strip = check_bool(f"{key}.strip", strip)
        self.json = check_bool(f"{key}.json", json)
        self.max_json_chars = check_int(f"{key}.max_json_chars", max_json_chars, low=1, allow_none=True)
        super().__init__(**shared)

    def _normalize(self, value: Any) -> str:
        text = as_text(value)
        if self.strip:
            text = text.strip()
        if not self.case_sensitive:
            text = text.lower()
        return text

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        details: dict[str, Any] = {"case_sensitive": self.case_sensitive, "strip": self.strip}
        if not self.json:
            return Measurement(1.0 if self._normalize(output) == self._normalize(expected) else 0.0, details)
        details["json"] = True
        want = _canonical(self._parsed(expected))  # a bad reference is an error result
        try:
            got = _canonical(self._parsed(output))
        except JsonTooLongError:
            raise
        except ValueError as exc:
            details["json_error"] = f"output is not valid JSON: {exc}"
            return Measurement(0.0, details)
        return Measurement(1.0 if got == want else 0.0, details)

    def _parsed(self, value: Any) -> Any:
        if isinstance(value, str):
            cap = self.max_json_chars
            if cap is not None and len(value) > cap:
                raise JsonTooLongError(
                    f"a text of {len(value)} characters is longer than max_json_chars={cap}; "
                    "parsing it would hold the GIL for long (raise max_json_chars to compare it)"
                )
            return json.loads(self._normalize(value))
        return json.loads(self._normalize(as_text(value))) if not self.case_sensitive else value

    def __repr__(self) -> str:
        return (
            f"ExactMatch(case_sensitive={self.case_sensitive}, strip={self.strip}, json={self.json}, "
            f"max_json_chars={self.max_json_chars}, name={self.name!r}, threshold={self.threshold!r})"
        )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
