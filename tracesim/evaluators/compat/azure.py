"""Azure AI Evaluation's NLP evaluators (the documented 1.5–1.16 output shape).

Called as ``ev(response=..., ground_truth=...)``; each returns the dict Azure documents,
e.g. ``{"f1_score": 0.63, "f1_result": "pass", "f1_threshold": 0.5}``. Scores are those
of ``azure-ai-evaluation`` (same tokenizers, same NLTK metrics), including its quirks:
BLEU is the int ``0`` when no word matches, empty texts score 0.0, ROUGE thresholds must
be floats, ``None`` inputs raise :class:`EvaluationException`. Long texts are cut where
the core evaluators cut them (``max_chars``: F1 100,000 characters, BLEU and GLEU 20,000,
METEOR 10,000, ROUGE 50,000); Azure's dicts have no room to say so.

Example:
    >>> from tracesim.evaluators.compat.azure import F1ScoreEvaluator
    >>> F1ScoreEvaluator()(response="Paris, France", ground_truth="Paris")
    {'f1_score': 0.6666666666666666, 'f1_result': 'pass', 'f1_threshold': 0.5}
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any

from tracesim.evaluators._base import Evaluator
from tracesim.evaluators._nltk_metrics import Bleu, Gleu, Meteor
from tracesim.evaluators._overlap import F1Score
from tracesim.evaluators._rouge import Rouge
from tracesim.evaluators.compat._azure_similarity import SimilarityEvaluator

__all__ = [
    "BleuScoreEvaluator",
    "EvaluationException",
    "F1ScoreEvaluator",
    "GleuScoreEvaluator",
    "MeteorScoreEvaluator",
    "RougeScoreEvaluator",
    "RougeType",
    "SimilarityEvaluator",
]


class EvaluationException(Exception):
    """Raised where Azure raises its own ``EvaluationException`` (missing inputs, bad thresholds).

    Example:
        >>> try:
        ...     RougeScoreEvaluator("rouge1", recall_threshold=1)
        ... except EvaluationException as exc:
        ...     print(exc)
        recall_threshold must be a float, got <class 'int'>
    """


class RougeType(str, Enum):
    """The ROUGE variants Azure accepts (no rougeLsum).

    Example:
        >>> RougeType("rougeL") is RougeType.ROUGE_L
        True
    """

    ROUGE_1 = "rouge1"
    ROUGE_2 = "rouge2"
    ROUGE_3 = "rouge3"
    ROUGE_4 = "rouge4"
    ROUGE_5 = "rouge5"
    ROUGE_L = "rougeL"


def _verdict(score: float, threshold: float) -> str:
    return "pass" if not math.isnan(score) and score >= threshold else "fail"


def _texts(evaluator: object, response: Any, ground_truth: Any) -> tuple[str, str]:
    if response is None or ground_truth is None:
        raise EvaluationException(
            f"{type(evaluator).__name__}: Either 'conversation' or individual inputs must be provided."
        )
    return str(response), str(ground_truth)


class _ScoreEvaluator:
    """Shared shape: ``{<key>_score, <key>_result, <key>_threshold}``."""

    _key = ""
    _core: Evaluator

    def __init__(self, *, threshold: float = 0.5) -> None:
        self._threshold = threshold
        self._keys = (f"{self._key}_score", f"{self._key}_result", f"{self._key}_threshold")

    def _score(self, response: str, ground_truth: str) -> float:
        result = self._core.evaluate(response, ground_truth)
        if result.status != "ok" or result.score is None:
            raise EvaluationException(f"{type(self).__name__}: {result.error}")
        return result.score

    def __call__(self, *, response: str, ground_truth: str) -> dict[str, Any]:
        if type(response) is not str or type(ground_truth) is not str:
            response, ground_truth = _texts(self, response, ground_truth)
        score = self._score(response, ground_truth)
        score_key, result_key, threshold_key = self._keys
        return {
            score_key: score,
            result_key: _verdict(score, self._threshold),
            threshold_key: self._threshold,
        }


class F1ScoreEvaluator(_ScoreEvaluator):
    """SQuAD token F1 between response and ground truth (``threshold=0.5``).

    Example:
        >>> F1ScoreEvaluator(threshold=0.9)(response="Curie was born in Warsaw, Poland.",
        ...                                 ground_truth="Curie was born in Warsaw.")
        {'f1_score': 0.9090909090909091, 'f1_result': 'pass', 'f1_threshold': 0.9}
    """

    _key = "f1"

    def __init__(self, *, threshold: float = 0.5) -> None:
        super().__init__(threshold=threshold)
        self._core = F1Score(threshold=None)


class BleuScoreEvaluator(_ScoreEvaluator):
    """NLTK sentence BLEU with smoothing method 4; the int 0 when nothing matches.

    Example:
        >>> BleuScoreEvaluator()(response="Marie Curie was born in Warsaw, Poland.",
        ...                      ground_truth="Marie Curie was born in Warsaw.")
        {'bleu_score': 0.6104735835807844, 'bleu_result': 'pass', 'bleu_threshold': 0.5}
        >>> BleuScoreEvaluator()(response="x", ground_truth="y")["bleu_score"]
        0
    """

    _key = "bleu"

    def __init__(self, *, threshold: float = 0.5) -> None:
        super().__init__(threshold=threshold)
        self._core = Bleu(threshold=None)

    def _score(self, response: str, ground_truth: str) -> float:
        score = super()._score(response, ground_truth)
        # nltk returns the int 0 exactly when no unigram matches (also for empty texts).
        return 0 if score == 0 else score


class GleuScoreEvaluator(_ScoreEvaluator):
    """NLTK sentence GLEU over 1- to 4-grams.

    Example:
        >>> GleuScoreEvaluator()(response="Marie Curie was born in Warsaw, Poland.",
        ...                      ground_truth="Marie Curie was born in Warsaw.")
        {'gleu_score': 0.6333333333333333, 'gleu_result': 'pass', 'gleu_threshold': 0.5}
    """

    _key = "gleu"

    def __init__(self, *, threshold: float = 0.5) -> None:
        super().__init__(threshold=threshold)
        self._core = Gleu(threshold=None)


class MeteorScoreEvaluator(_ScoreEvaluator):
    """NLTK METEOR with WordNet synonyms (``alpha=0.9, beta=3.0, gamma=0.5``).

    Example:
        >>> MeteorScoreEvaluator()(response="Marie Curie was born in Warsaw, Poland.",
        ...                        ground_truth="Marie Curie was born in Warsaw.")
        {'meteor_score': 0.9608843537414966, 'meteor_result': 'pass', 'meteor_threshold': 0.5}
    """

    _key = "meteor"

    def __init__(
        self, alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5, *, threshold: float = 0.5
    ) -> None:
        super().__init__(threshold=threshold)
        self._core = Meteor(alpha, beta, gamma, threshold=None)


class RougeScoreEvaluator:
    """ROUGE precision, recall and F1 of one type, each with its own threshold.

    ``rouge_type`` is required (a :class:`RougeType` or its string value); thresholds must
    be floats, as in Azure (``1`` raises :class:`EvaluationException`).

    Example:
        >>> out = RougeScoreEvaluator(RougeType.ROUGE_1)(response="Marie Curie was born in Warsaw, Poland.",
        ...                                              ground_truth="Marie Curie was born in Warsaw.")
        >>> out["rouge_precision"], out["rouge_recall"], out["rouge_f1_score_result"]
        (0.8571428571428571, 1.0, 'pass')
    """

    def __init__(
        self,
        rouge_type: RougeType | str,
        *,
        precision_threshold: float = 0.5,
        recall_threshold: float = 0.5,
        f1_score_threshold: float = 0.5,
    ) -> None:
        for name, value in (
            ("precision_threshold", precision_threshold),
            ("recall_threshold", recall_threshold),
            ("f1_score_threshold", f1_score_threshold),
        ):
            if not isinstance(value, float):
                raise EvaluationException(f"{name} must be a float, got {type(value)}")
        self._type = RougeType(rouge_type)
        self._thresholds = (precision_threshold, recall_threshold, f1_score_threshold)
        self._core = Rouge(self._type.value, threshold=None)

    def __call__(self, *, response: str, ground_truth: str) -> dict[str, Any]:
        result = self._core.evaluate(*_texts(self, response, ground_truth))
        if result.status != "ok":
            raise EvaluationException(f"RougeScoreEvaluator: {result.error}")
        values = (
            float(result.details["precision"]),
            float(result.details["recall"]),
            float(result.details["f1"]),
        )
        names = ("rouge_precision", "rouge_recall", "rouge_f1_score")
        out: dict[str, Any] = dict(zip(names, values, strict=True))
        for name, value, threshold in zip(names, values, self._thresholds, strict=True):
            out[f"{name}_result"] = _verdict(value, threshold)
        for name, threshold in zip(names, self._thresholds, strict=True):
            out[f"{name}_threshold"] = threshold
        return out
