"""The Evaluator base class: thresholds, direction, labels, skipping and errors, once."""

from __future__ import annotations

import copy
import functools
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, NamedTuple

from tracesim._errors import ConfigError
from tracesim.evaluators._options import check_int, check_number, check_threshold, require_number
from tracesim.evaluators._result import EvalResult, measured_result, scored_result

__all__ = ["DEFAULT", "INVALID_SCORE", "RUNS_IN", "Evaluator", "EvaluatorSpec", "MeasureValue", "Measurement"]


class _Default:
    """Marker for "use the class default" (so that ``None`` can mean "no threshold")."""

    def __repr__(self) -> str:
        return "DEFAULT"

    def __reduce__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default()
"""Pass for ``threshold`` (and the like) to mean "the evaluator's own default"; ``None`` means none."""

#: ``error_type`` of a result whose metric gave a score that cannot be reported.
INVALID_SCORE: Final = "invalid_score"

_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")
_SHARED_KEYS = ("name", "threshold", "sample_rate", "timeout_s", "max_concurrency", "runs_in")
RUNS_IN: Final = ("auto", "thread", "process")
"""Where an evaluator may run when scored online: ``auto`` follows the ``scoring_processes``
setting, ``thread`` keeps it in the host's interpreter, ``process`` sends it to a worker process."""


class EvaluatorSpec(NamedTuple):
    """How an evaluator was built: its class by module and qualified name and the arguments
    the user gave (``name``, ``threshold`` and the other shared settings are read from the
    instance instead, so a `Evaluator.replace` copy is rebuilt with its own).

    A scoring worker process rebuilds the evaluator from it (`Evaluator.rebuilt`): instances
    often stop pickling once used (lazily built tokenizers, models), their configuration does not.

    Example:
        >>> from tracesim.evaluators import Rouge
        >>> spec = Rouge(rouge_type="rouge1").spec
        >>> spec.module, spec.qualname, spec.kwargs
        ('tracesim.evaluators._rouge', 'Rouge', {'rouge_type': 'rouge1'})
    """

    module: str
    qualname: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _required_shared(target: Any, spec: EvaluatorSpec, shared: dict[str, Any]) -> dict[str, Any]:
    """The shared settings ``target``'s ``__init__`` requires that ``spec`` leaves out (a
    ``threshold`` without a default, say): given as the instance has them."""
    import inspect

    try:
        signature = inspect.signature(target)
        given = signature.bind_partial(*spec.args, **spec.kwargs).arguments
    except (TypeError, ValueError):
        return {}
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {
        key: shared[key]
        for key, parameter in signature.parameters.items()
        if key in shared
        and key not in given
        and parameter.kind in kinds
        and parameter.default is parameter.empty
    }


def _recording(init: Callable[..., None]) -> Callable[..., None]:
    """``init`` that records its arguments as the instance's spec, on the outermost call only
    (a subclass's ``__init__`` calling its parent's records the subclass's arguments)."""

    @functools.wraps(init)
    def recorded(self: Evaluator, *args: Any, **kwargs: Any) -> None:
        if self.__dict__.get("_spec_taken", False):
            init(self, *args, **kwargs)
            return
        self.__dict__["_spec_taken"] = True
        init(self, *args, **kwargs)
        cls = type(self)
        own = {key: value for key, value in kwargs.items() if key not in _SHARED_KEYS}
        self.__dict__["_spec"] = EvaluatorSpec(cls.__module__, cls.__qualname__, args, own)

    recorded._records_spec = True  # type: ignore[attr-defined]
    return recorded


@dataclass(slots=True)
class Measurement:
    """What a metric computed, before the base class applies the threshold.

    Example:
        >>> Measurement(0.5, {"method": "dice"}).score
        0.5
    """

    score: float
    details: dict[str, Any] = field(default_factory=dict)
    explanation: str | None = None
    label: str | None = None


MeasureValue = float | int | bool | Measurement | EvalResult


class Evaluator:
    """Base class of every evaluator.

    Subclasses implement :meth:`measure`, returning a float, a bool, a :class:`Measurement`
    or an :class:`EvalResult`. The base turns that into an :class:`EvalResult`: it skips
    when ``expected is None``, turns exceptions into ``status="error"``, compares the score
    with the threshold (``>=`` by default; ``<=`` when ``higher_is_better`` is false;
    strict ``>`` / ``<`` when ``strict`` is set), sets the ``pass``/``fail`` label and
    times the call.

    ``score_range`` is the ``(low, high)`` span (inclusive) of the scores the metric can
    give: ``(0, 1)`` for the built-in similarities, ``(0, inf)`` for
    ``levenshtein_distance``, ``(-1, 1)`` for a cosine of embeddings; any finite number
    for custom evaluators unless they set it. A threshold outside it is refused at
    construction (:class:`~tracesim.ConfigError`), and a score that is NaN, infinite, not
    a number or outside it becomes ``status="error"`` with ``error_type="invalid_score"``.

    Shared keyword arguments: ``name`` (defaults to the type name, e.g. ``"levenshtein"``),
    ``threshold`` (the class default unless given; ``None`` means no pass/fail),
    ``sample_rate`` (0..1), ``timeout_s`` (> 0), ``max_concurrency`` (for async
    evaluators) and ``runs_in`` (``auto``, ``thread`` or ``process``: where online scoring
    runs it, see ``scoring_processes``); the last four are read by the scoring pipeline, not
    by ``evaluate``.

    Example:
        >>> class Shorter(Evaluator):
        ...     type_name = "shorter"
        ...     default_threshold = 1.0
        ...     def measure(self, output, expected, *, input=None):
        ...         return len(str(output)) <= len(str(expected))
        >>> Shorter().evaluate("hi", "hello").label
        'pass'
    """

    type_name: ClassVar[str] = "custom"
    default_threshold: ClassVar[float | None] = None
    higher_is_better: ClassVar[bool] = True
    strict: ClassVar[bool] = False
    requires_expected: ClassVar[bool] = True
    score_range: ClassVar[tuple[float, float]] = (-math.inf, math.inf)

    name: str
    threshold: float | None
    sample_rate: float
    timeout_s: float | None
    max_concurrency: int | None
    runs_in: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "_records_spec", False):
            cls.__init__ = _recording(init)  # type: ignore[method-assign]

    def __init__(
        self,
        *,
        name: str | None = None,
        threshold: float | _Default | None = DEFAULT,
        sample_rate: float = 1.0,
        timeout_s: float | None = None,
        max_concurrency: int | None = None,
        runs_in: str = "auto",
    ) -> None:
        key = self.type_name
        if name is None:
            name = self._default_name()
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise ConfigError(f"{key}.name", name, "a non-empty name of letters, digits, '_', '.', '-'")
        self.name = name
        if isinstance(threshold, _Default):
            threshold = self.default_threshold
        self.threshold = check_threshold(f"{key}.threshold", threshold, self.score_range)
        self.sample_rate = require_number(f"{key}.sample_rate", sample_rate, low=0.0, high=1.0)
        self.timeout_s = check_number(f"{key}.timeout_s", timeout_s, low=0.0, low_open=True, allow_none=True)
        self.max_concurrency = check_int(f"{key}.max_concurrency", max_concurrency, low=1, allow_none=True)
        if runs_in not in RUNS_IN:
            raise ConfigError(f"{key}.runs_in", runs_in, "auto, thread or process")
        self.runs_in = runs_in

    @property
    def spec(self) -> EvaluatorSpec | None:
        """The class and arguments this evaluator was built with (see `EvaluatorSpec`), or None
        when they were not recorded (an ``__init__`` added after the class was made, as
        ``@dataclass`` does).

        Example:
            >>> from tracesim.evaluators import Levenshtein
            >>> Levenshtein(threshold=0.9).spec.kwargs
            {}
        """
        found: EvaluatorSpec | None = self.__dict__.get("_spec")
        cls = type(self)
        if found is None and cls.__init__ is Evaluator.__init__:  # no __init__ of its own
            return EvaluatorSpec(cls.__module__, cls.__qualname__, (), {})
        if found is not None and getattr(cls.__init__, "_records_spec", False):
            return found
        return None

    def shared_settings(self) -> dict[str, Any]:
        """The shared settings (``name``, ``threshold``, ...) as this instance has them.

        Example:
            >>> from tracesim.evaluators import Levenshtein
            >>> Levenshtein(name="lev").shared_settings()["name"]
            'lev'
        """
        return {key: getattr(self, key) for key in _SHARED_KEYS}

    @classmethod
    def rebuilt(cls, spec: EvaluatorSpec, shared: dict[str, Any]) -> Evaluator:
        """The evaluator ``spec`` describes, with the shared settings ``shared`` (as
        `shared_settings` gave them): how a scoring worker process gets its copy.

        Example:
            >>> from tracesim.evaluators import Rouge
            >>> original = Rouge(rouge_type="rouge1").replace(threshold=0.4)
            >>> spec = original.spec
            >>> copy = Evaluator.rebuilt(spec, original.shared_settings()) if spec else None
            >>> type(copy).__name__, copy.threshold
            ('Rouge', 0.4)
        """
        import importlib

        target: Any = importlib.import_module(spec.module)
        for part in spec.qualname.split("."):
            target = getattr(target, part)
        evaluator = target(*spec.args, **spec.kwargs, **_required_shared(target, spec, shared))
        if not isinstance(evaluator, Evaluator):
            raise TypeError(f"{spec.module}.{spec.qualname} built a {type(evaluator).__name__}")
        Evaluator.__init__(evaluator, **shared)
        return evaluator

    def _default_name(self) -> str:
        return self.type_name

    # -- the metric ---------------------------------------------------------------------

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> MeasureValue:
        """Compute the metric; raise on bad data (the base turns it into an error result)."""
        raise NotImplementedError(f"{type(self).__name__} must implement measure()")

    # -- the public calls ---------------------------------------------------------------

    def evaluate(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
        """Score ``output`` against ``expected``; never raises for data problems."""
        if expected is None and self.requires_expected:
            return self._skipped()
        start = time.perf_counter()
        try:
            value = self.measure(output, expected, input=input)
        except Exception as exc:
            return self._error(exc, time.perf_counter() - start)
        return self._finish(value, time.perf_counter() - start)

    async def aevaluate(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
        """Async form of :meth:`evaluate`; by default it runs :meth:`evaluate` inline."""
        return self.evaluate(output, expected, input=input)

    @property
    def is_async(self) -> bool:
        """True when the class overrides :meth:`aevaluate` (it does real async work)."""
        return type(self).aevaluate is not Evaluator.aevaluate

    def passes(self, score: float) -> bool | None:
        """Apply the threshold and direction to ``score``; None without a threshold."""
        threshold = self.threshold
        if threshold is None or math.isnan(score):
            return None
        if self.higher_is_better:
            return score > threshold if self.strict else score >= threshold
        return score < threshold if self.strict else score <= threshold

    def replace(self, **shared: Any) -> Evaluator:
        """Return a copy with other shared settings (``name``, ``threshold``, ...).

        Example:
            >>> from tracesim.evaluators import Levenshtein
            >>> Levenshtein().replace(threshold=0.9).threshold
            0.9
        """
        unknown = sorted(set(shared) - set(_SHARED_KEYS))
        if unknown:
            raise ConfigError(f"{self.type_name}.{unknown[0]}", shared[unknown[0]], ", ".join(_SHARED_KEYS))
        current = self.shared_settings()
        clone = copy.copy(self)
        Evaluator.__init__(clone, **{**current, **shared})
        return clone

    # -- result assembly (also for subclasses that override aevaluate) ------------------

    def _skipped(self) -> EvalResult:
        return EvalResult(
            name=self.name,
            threshold=self.threshold,
            status="skipped",
            explanation="no expected output to compare against",
        )

    def _error(self, exc: BaseException, duration_s: float) -> EvalResult:
        kind = type(exc).__name__
        return EvalResult(
            name=self.name,
            threshold=self.threshold,
            status="error",
            error=f"{kind}: {exc}",
            error_type=kind,
            duration_s=duration_s,
        )

    def _finish(self, value: MeasureValue, duration_s: float) -> EvalResult:
        # Typed as MeasureValue, but user metrics can return anything: check at run time.
        checked: object = value
        # These skip pydantic when the values already have the types validation returns.
        if type(checked) is Measurement or isinstance(checked, Measurement):
            problem = self._score_problem(checked.score)
            if problem is not None:
                return self._invalid(problem, duration_s, checked.details)
            passed = self.passes(checked.score)
            label = checked.label if checked.label is not None else _label(passed)
            return measured_result(
                self.name,
                checked.score,
                passed,
                label,
                self.threshold,
                duration_s,
                checked.explanation,
                checked.details,
            )
        if isinstance(checked, bool):
            return scored_result(
                self.name, 1.0 if checked else 0.0, checked, _label(checked), self.threshold, duration_s
            )
        if isinstance(checked, (int, float)):
            problem = self._score_problem(checked)
            if problem is not None:
                return self._invalid(problem, duration_s, {})
            passed = self.passes(checked)
            return scored_result(self.name, checked, passed, _label(passed), self.threshold, duration_s)
        if isinstance(checked, EvalResult):
            return self._adopt(checked, duration_s)
        wrong_type = TypeError(
            f"measure() returned {type(checked).__name__}; expected a float, a bool, "
            "a Measurement or an EvalResult"
        )
        return self._error(wrong_type, duration_s)

    def _score_problem(self, score: object) -> str | None:
        """Why ``score`` cannot be reported (NaN, infinite, out of range, not a number), or None."""
        low, high = self.score_range
        if type(score) is float and math.isfinite(score) and low <= score <= high:
            return None  # the common case, checked first
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return f"the score {_shown(score)} is a {type(score).__name__}, not a number"
        try:
            number = float(score)
        except OverflowError:
            return "the score is an int too large for a float"
        if not math.isfinite(number):
            return f"the score is {number!r}, not a finite number"
        if not low <= number <= high:
            return (
                f"the score {number!r} is outside the score range [{low:g}, {high:g}] of {self.type_name!r}"
            )
        return None

    def _invalid(self, problem: str, duration_s: float, details: dict[str, Any]) -> EvalResult:
        return EvalResult(
            name=self.name,
            threshold=self.threshold,
            details=details,
            status="error",
            error=f"invalid_score: {problem}",
            error_type=INVALID_SCORE,
            duration_s=duration_s,
        )

    def _adopt(self, result: EvalResult, duration_s: float) -> EvalResult:
        if result.status == "ok" and result.score is not None:
            problem = self._score_problem(result.score)
            if problem is not None:
                return self._invalid(problem, duration_s, result.details)
        update: dict[str, Any] = {"name": self.name, "duration_s": duration_s}
        if result.threshold is None:
            update["threshold"] = self.threshold
        if result.status == "ok" and result.score is not None and result.passed is None:
            update["passed"] = self.passes(result.score)
        passed = update.get("passed", result.passed)
        if result.label is None and passed is not None:
            update["label"] = _label(passed)
        return result.model_copy(update=update)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, threshold={self.threshold!r})"


def _shown(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a user object whose repr fails: its type is enough
        return f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _label(passed: bool | None) -> str | None:
    if passed is None:
        return None
    return "pass" if passed else "fail"
