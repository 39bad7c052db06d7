"""AgentTest's ``metrics`` and ``metric`` evaluators, and what every AgentTest façade shares.

Imported by `tracesim.evaluators.compat.agenttest`, which is where users import it from.
``Metrics`` reproduces AgentTest's library calls: ROUGE F1 of Google's ``rouge-score`` with
Porter stems (through tracesim's `Rouge`, which gives rouge-score's numbers), NLTK's
``sentence_bleu`` and ``meteor_score`` on lowercased whitespace tokens.

Example:
    >>> from tracesim.evaluators.compat.agenttest import Metrics
    >>> r = Metrics().evaluate({"actual": "the cat sat on the mat", "reference": "the cat sat on a mat",
    ...                         "metrics": {"bleu": {"min_score": 0.3}}})
    >>> round(r.score, 4), r.passed
    (0.5373, True)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from tracesim.evaluators import _nltk_data
from tracesim.evaluators._long_texts import DEFAULT, TextCap
from tracesim.evaluators._nltk_metrics import BLEU_CAPS, METEOR_CAPS
from tracesim.evaluators._rouge import ROUGE_TYPES, Rouge
from tracesim.evaluators.compat._agenttest_result import EvaluationResult, failure, outcome

__all__ = ["Metric", "Metrics"]

Check = Callable[[Any, str], Any]


# -- shared by the AgentTest façades -------------------------------------------------------------


def output_data(test_output: Any) -> Mapping[str, Any]:
    """A test's return value as AgentTest reads it: a dict as is, a list as its cases, else the actual."""
    if isinstance(test_output, Mapping):
        return test_output
    if isinstance(test_output, list):
        return {"test_cases": test_output}
    return {"actual": test_output}


def type_name(value: Any) -> str:
    return type(value).__name__


def check_bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where} must be true or false; got {type_name(value)} {value!r}")
    return value


def check_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{where} must be a number such as 0.4; got {type_name(value)} {value!r}")
    return value


def check_count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{where} must be an integer >= 0; got {value!r}")
    return value


def read_options(config: Any, accepted: Mapping[str, Check], where: str) -> dict[str, Any]:
    """Check an options mapping (None is empty): known keys only, each value of its type."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise TypeError(f"{where} must be a dict of options ({', '.join(accepted)}); got {type_name(config)}")
    unknown = sorted(str(key) for key in config if key not in accepted)
    if unknown:
        hint = " (pass the entry's 'config:' mapping, not the whole entry)" if "type" in config else ""
        raise ValueError(f"{where} accepts the keys {', '.join(accepted)}; got {', '.join(unknown)}{hint}")
    return {str(key): accepted[key](value, f"{where}['{key}']") for key, value in config.items()}


def check_cases(cases: Any) -> list[Mapping[str, Any]]:
    if not isinstance(cases, (list, tuple)):
        raise TypeError(f"test_cases must be a list of dicts with 'actual'; got {type_name(cases)}")
    for i, case in enumerate(cases):
        if not isinstance(case, Mapping):
            raise TypeError(f"test_cases[{i}] must be a dict with 'actual'; got {type_name(case)}")
    return list(cases)


# -- contains and regex: options AgentTest documents (and ignores), and the pass rule --------------


def regex_flags(value: Any, where: str) -> int:
    names = value if isinstance(value, (list, tuple)) else [value]
    unknown = [name for name in names if name not in FLAG_NAMES]
    if unknown:
        raise ValueError(f"{where} takes names among {', '.join(FLAG_NAMES)}; got {unknown!r}")
    flags = 0
    for name in names:
        flags |= re.RegexFlag[name]
    return flags


FLAG_NAMES = ("IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE", "ASCII")
# What AgentTest's documentation lists for each (AgentTest itself reads none of it).
CONTAINS_OPTIONS = {
    "case_sensitive": check_bool,
    "match_all": check_bool,
    "min_matches": check_count,
    "partial_match": check_bool,
}
REGEX_OPTIONS = {
    "flags": regex_flags,
    "match_all": check_bool,
    "min_matches": check_count,
    "extract_groups": check_bool,
}


def enough(matched: int, total: int, options: Mapping[str, Any], all_by_default: bool) -> bool:
    """The pass rule: AgentTest's default, or the documented ``match_all`` / ``min_matches``."""
    if "min_matches" in options:
        return matched >= int(options["min_matches"])
    if options.get("match_all", all_by_default):
        return total > 0 and matched == total
    return matched > 0


def merged_options(
    config: Mapping[str, Any], data: Mapping[str, Any], key: str, accepted: Mapping[str, Check]
) -> dict[str, Any]:
    """The evaluator's options, then the test output's ``key`` (``contains_config``...) over them."""
    return {**config, **read_options(data.get(key), accepted, key)}


# -- metrics ------------------------------------------------------------------------------------


def _names(value: Any, where: str) -> list[str]:
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
        raise TypeError(
            f"{where} must be a non-empty list of names such as ['rouge1', 'rougeL']; got {value!r}"
        )
    return list(value)


def _weights(value: Any, where: str) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise TypeError(f"{where} must be a non-empty list of numbers such as [0.25, 0.25, 0.25, 0.25]")
    return tuple(check_number(v, f"{where}[{i}]") for i, v in enumerate(value))


def _orders(value: Any, where: str) -> tuple[float, ...]:
    """``n_grams: [1, 2]`` as BLEU weights: the listed orders share the weight equally."""
    ok = isinstance(value, (list, tuple)) and value
    if not ok or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in value):
        raise TypeError(
            f"{where} must be a non-empty list of n-gram orders such as [1, 2, 3, 4]; got {value!r}"
        )
    return tuple(1 / len(set(value)) if n in value else 0.0 for n in range(1, max(value) + 1))


# What AgentTest reads (variants, min_score, smoothing) and what its documentation lists
# that maps onto the library call (AgentTest ignores those; tracesim passes them on).
_OPTIONS: dict[str, dict[str, Check]] = {
    "rouge": {"variants": _names, "min_score": check_number, "use_stemmer": check_bool},
    "bleu": {
        "min_score": check_number,
        "smoothing": check_bool,
        "weights": _weights,
        "n_grams": _orders,
        "auto_reweigh": check_bool,
    },
    "meteor": {
        "min_score": check_number,
        "alpha": check_number,
        "beta": check_number,
        "gamma": check_number,
        "wordnet": check_bool,
    },
}
_ROUGE_ALIASES = {"rouge-1": "rouge1", "rouge-2": "rouge2", "rouge-l": "rougeL", "rouge_l": "rougeL"}
# Where tracesim's core evaluator of the same metric cuts its texts (by where the call runs).
_BLEU_CAP = TextCap("agenttest.bleu", DEFAULT, BLEU_CAPS)
_METEOR_CAP = TextCap("agenttest.meteor", DEFAULT, METEOR_CAPS)


@cache
def _rouge(rouge_type: str, use_stemmer: bool) -> Rouge:
    return Rouge(rouge_type, use_stemmer=use_stemmer, threshold=None)


def _no_smoothing(p_n: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
    # NLTK's unsmoothed BLEU (AgentTest's smoothing: false): an n-gram order without a match
    # counts as the smallest float. NLTK's own method0 also warns, which a test run with
    # warnings as errors would turn into a failure.
    return [p if p.numerator != 0 else sys.float_info.min for p in p_n]


def _graded(score: float, min_score: float, details: dict[str, Any]) -> dict[str, Any]:
    return {"passed": score >= min_score, "score": score, "threshold": min_score, "details": details}


def _score_rouge(actual: str, reference: str, options: dict[str, Any]) -> dict[str, Any]:
    variants = [_ROUGE_ALIASES.get(v, v) for v in options.get("variants", ["rouge1", "rouge2", "rougeL"])]
    invalid = next((v for v in variants if v not in ROUGE_TYPES), None)
    if invalid is not None:  # rouge-score's own message, as AgentTest reports it
        return {
            "passed": False,
            "error": f"ROUGE evaluation failed: Invalid rouge type: {invalid}",
            "score": 0.0,
        }
    stem = options.get("use_stemmer", True)
    found = {v: _rouge(v, stem).measure(actual, reference).details for v in dict.fromkeys(variants)}
    average = sum(found[v]["f1"] for v in variants) / len(variants)
    scores = {
        v: {"precision": d["precision"], "recall": d["recall"], "f1": d["f1"]} for v, d in found.items()
    }
    details: dict[str, Any] = {"rouge_scores": scores, "average_f1": average}
    cut = next((d["truncated_to"] for d in found.values() if "truncated_to" in d), None)
    if cut is not None:
        details["truncated_to"] = cut
    return _graded(average, options.get("min_score", 0.4), details)


def _score_bleu(actual: str, reference: str, options: dict[str, Any]) -> dict[str, Any]:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    hypothesis, truth, cut = _BLEU_CAP.cut(actual, reference, "agenttest.bleu")
    smoothing = options.get("smoothing", True)
    score = sentence_bleu(
        [truth.lower().split()],
        hypothesis.lower().split(),
        weights=options.get("weights") or options.get("n_grams") or (0.25, 0.25, 0.25, 0.25),
        smoothing_function=SmoothingFunction().method1 if smoothing else _no_smoothing,
        auto_reweigh=options.get("auto_reweigh", False),
    )
    details: dict[str, Any] = {"bleu_score": float(score), "smoothing": smoothing}
    if cut is not None:
        details["truncated_to"] = cut
    return _graded(float(score), options.get("min_score", 0.3), details)


def _score_meteor(actual: str, reference: str, options: dict[str, Any]) -> dict[str, Any]:
    from nltk.translate.meteor_score import meteor_score

    # WordNet from NLTK's search path, loaded once; never downloaded (AgentTest downloads it).
    synonyms = (
        _nltk_data.synonym_source("metrics") if options.get("wordnet", True) else _nltk_data.NoSynonyms()
    )
    hypothesis, truth, cut = _METEOR_CAP.cut(actual, reference, "agenttest.meteor")
    score = meteor_score(
        [truth.lower().split()],
        hypothesis.lower().split(),
        alpha=options.get("alpha", 0.9),
        beta=options.get("beta", 3.0),
        gamma=options.get("gamma", 0.5),
        wordnet=synonyms,
    )
    details: dict[str, Any] = {"meteor_score": float(score)}
    if cut is not None:
        details["truncated_to"] = cut
    return _graded(float(score), options.get("min_score", 0.4), details)


_SCORERS = {"rouge": _score_rouge, "bleu": _score_bleu, "meteor": _score_meteor}


def _read_metrics(spec: Any, where: str) -> dict[str, dict[str, Any] | None]:
    """``{metric: options}``; an unknown metric maps to None (AgentTest reports it in the result)."""
    if not isinstance(spec, Mapping):
        raise TypeError(
            f"{where} must be a dict such as {{'rouge': {{'min_score': 0.4}}}}; got {type_name(spec)}"
        )
    return {
        str(name): read_options(options, _OPTIONS[name], f"{where}['{name}']") if name in _OPTIONS else None
        for name, options in spec.items()
    }


class Metrics:
    """AgentTest's ``metrics``: ROUGE, BLEU and METEOR of ``actual`` against ``reference``.

    The test output names the metrics and their options: ``{"actual", "reference" (else
    ``expected``), "metrics": {"rouge": {...}, "bleu": {...}, "meteor": {...}}}``. Each metric
    passes at ``score >= min_score``; the result passes when all do, its score is their mean
    and its threshold the mean ``min_score``, as in AgentTest.

    - ``rouge``: mean F1 of ``variants`` (``rouge1``, ``rouge2``, ``rougeL``; ``rouge-1``,
      ``rouge-l`` and ``rougeLsum`` also work), Porter stems, ``min_score`` 0.4.
    - ``bleu``: NLTK ``sentence_bleu`` of lowercased whitespace tokens, 4-gram weights,
      Chen & Cherry smoothing 1 (``smoothing: false`` for none), ``min_score`` 0.3.
    - ``meteor``: NLTK ``meteor_score`` (WordNet synonyms) of the same tokens, ``min_score`` 0.4.

    AgentTest's documentation also lists ``use_stemmer`` (ROUGE), ``weights``, ``n_grams``,
    ``auto_reweigh`` (BLEU), ``alpha``, ``beta``, ``gamma`` and ``wordnet`` (METEOR), which
    AgentTest ignores; tracesim honours them. ``config``, the ``config:`` of the evaluator's
    entry in ``.agenttest/config.yaml`` (``{"rouge": {...}, ...}``), is used when the test
    output has no ``metrics`` (AgentTest would report an error). An unknown metric scores 0
    and fails. Any other option, or an option of the wrong type, raises. METEOR needs NLTK's
    ``wordnet`` data. Texts are cut where tracesim's own evaluators cut them by default
    (ROUGE 100,000 characters, BLEU 200,000, METEOR 100,000; on tracesim's scoring threads
    in the host's interpreter 50,000, 20,000 and 10,000; ``details.truncated_to`` says so).

    Example:
        >>> out = {"actual": "Paris is the capital of France", "expected": "The capital of France is Paris",
        ...        "metrics": {"rouge": {"variants": ["rouge1"]}}}
        >>> Metrics().evaluate(out).details["metric_results"]["rouge"]["score"]
        1.0
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.metrics = _read_metrics(config or {}, "Metrics config")
        unknown = [name for name, options in self.metrics.items() if options is None]
        if unknown:
            raise ValueError(
                f"Metrics config accepts the metrics {', '.join(_OPTIONS)}; got {', '.join(unknown)}"
            )

    def evaluate(self, test_output: Any) -> EvaluationResult:
        """Score a test output (``evaluate(output)``, as AgentTest calls it).

        Example:
            >>> Metrics().evaluate({"actual": "a", "reference": "a"}).error
            'No metrics configuration found in test output'
        """
        data = output_data(test_output)
        actual, reference = data.get("actual", ""), data.get("reference", data.get("expected", ""))
        spec = data.get("metrics")
        if not actual or not reference:
            return failure("Both 'actual' and 'reference' texts are required for metrics evaluation")
        for key, text in (("actual", actual), ("reference", reference)):
            if not isinstance(text, str):
                raise TypeError(f"metrics compares texts: '{key}' must be a str; got {type_name(text)}")
        metrics = _read_metrics(spec, "metrics") if spec else self.metrics
        if not metrics:
            return failure("No metrics configuration found in test output")
        results: dict[str, dict[str, Any]] = {
            name: _SCORERS[name](actual, reference, options)
            if options is not None
            else {"passed": False, "error": f"Unknown metric: {name}", "score": 0.0}
            for name, options in metrics.items()
        }
        scores: list[float] = [r["score"] for r in results.values() if "score" in r]
        thresholds: list[float] = [r["threshold"] for r in results.values() if "threshold" in r]
        score = sum(scores) / len(scores) if scores else 0.0
        details = {
            "actual": actual,
            "reference": reference,
            "metric_results": results,
            "overall_score": score,
        }
        return outcome(
            all(r["passed"] for r in results.values()),
            score,
            sum(thresholds) / len(thresholds) if thresholds else None,
            details,
        )


_ERRORS: dict[str, Callable[[float, float], float]] = {
    "mse": lambda actual, expected: (actual - expected) ** 2,
    "mae": lambda actual, expected: abs(actual - expected),
    "relative": lambda actual, expected: (
        abs(actual) if expected == 0 else abs((actual - expected) / expected)
    ),
}


def _error_kind(value: Any, where: str) -> str:
    if value not in _ERRORS:
        raise ValueError(f"{where} must be one of {', '.join(_ERRORS)}; got {value!r}")
    return str(value)


class Metric:
    """AgentTest's ``metric``: how far a number is from the expected one.

    ``config`` (the evaluator entry's): ``type`` is ``mse`` (squared error, the default),
    ``mae`` (absolute error) or ``relative`` (absolute error over ``|expected|``; the
    absolute value when ``expected`` is 0); ``threshold`` (0.1) is the largest error that
    passes. The score is ``max(0, 1 - error)`` (AgentTest's runner, like ``@agent_test``, also
    fails a score under the threshold). Values are read with ``float()``.

    Example:
        >>> r = Metric({"type": "mae", "threshold": 0.5}).evaluate({"actual": "3.2", "expected": 3})
        >>> round(r.score, 6), r.passed, r.details["metric_type"]
        (0.8, True, 'mae')
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        options = read_options(config, {"type": _error_kind, "threshold": check_number}, "Metric config")
        self.kind: str = options.get("type", "mse")
        self.threshold: float = options.get("threshold", 0.1)

    def evaluate(self, test_output: Any) -> EvaluationResult:
        """Score a test output: ``{"actual": 4.1, "expected": 4}``."""
        data = output_data(test_output)
        actual, expected = data.get("actual"), data.get("expected")
        if actual is None or expected is None:
            return failure("Both 'actual' and 'expected' values required for metric evaluation")
        try:
            numbers = float(actual), float(expected)
        except (TypeError, ValueError, OverflowError):
            return failure("Values must be numeric for metric evaluation")
        error = _ERRORS[self.kind](*numbers)
        details = {"actual": numbers[0], "expected": numbers[1], "error": error, "metric_type": self.kind}
        return outcome(error <= self.threshold, max(0, 1 - error), self.threshold, details)
