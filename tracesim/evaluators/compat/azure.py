"""Azure AI Evaluation's NLP evaluators, with the keys of azure-ai-evaluation 1.18, 1.16 or both.

Called as ``ev(response=..., ground_truth=...)`` or ``ev(conversation={"messages": [...]})``.
``result_format`` names the release whose dict is returned, key for key and in Azure's order:
``"1.18"`` (1.17 and 1.18) gives ``<metric>``, ``<metric>_score``, ``_passed``, ``_result``,
``_reason`` (``None``), ``_status`` (``"completed"``), ``_threshold`` and ``_properties``
(``None``; ROUGE's holds the precision, recall and F1 with their results, passed and
thresholds); ``"1.16"`` (1.5 to 1.16) gives ``f1_score``/``f1_result``/``f1_threshold``
(``bleu_score``, ... alike; ROUGE's nine flat ``rouge_precision``, ``rouge_precision_result``,
... keys). The default, ``"both"``, is 1.18's dict followed by the keys only 1.16 has (same
values), so code written for either release reads it; ask for one release to compare dicts
whole. Scores are those of
``azure-ai-evaluation`` (same tokenizers, same NLTK metrics), quirks included: BLEU is the
int ``0`` when no word matches, empty texts score 0.0, ROUGE thresholds must be floats.

Inputs are checked as Azure checks them: a missing (or ``None``) input raises
:class:`EvaluationException` (``blame``/``category``/``target`` as Azure's); unknown
keywords are ignored; a conversation is scored per user/assistant turn (the assistant
message's ``content`` against its ``ground_truth``) and several turns are averaged, with
the per-turn values under ``evaluation_per_turn``. Where Azure fails inside its
tokenizer (a number or a list as text, a malformed conversation) the façade raises
:class:`EvaluationException` naming the input instead (a ``TypeError`` too for a wrong type).
Long texts are cut where the core evaluators cut them by default: in a direct call, offline
or in a scoring worker process only beyond bounds far above realistic answers (F1 1,000,000
characters, BLEU and GLEU 200,000, METEOR 100,000, ROUGE 100,000, rougeLsum 30,000 and 300
lines), so the numbers are Azure's; on tracesim's scoring threads in the host's interpreter
at F1 100,000, BLEU and GLEU 20,000, METEOR 10,000, ROUGE 50,000, rougeLsum 10,000 and 50
lines (the first cut is logged once). Azure's dicts have no room to say so. The LLM-judged
`SimilarityEvaluator` takes the same ``result_format`` and reads its model's answer as that
release does.

Example:
    >>> from tracesim.evaluators.compat.azure import F1ScoreEvaluator
    >>> F1ScoreEvaluator(result_format="1.18")(response="Paris, France", ground_truth="Paris")
    {'f1_score': 0.6666666666666666, 'f1_score_score': 0.6666666666666666, 'f1_score_passed': True,
     'f1_score_result': 'pass', 'f1_score_reason': None, 'f1_score_status': 'completed',
     'f1_score_threshold': 0.5, 'f1_score_properties': None}
    >>> list(F1ScoreEvaluator()(response="Paris, France", ground_truth="Paris"))[-2:]
    ['f1_result', 'f1_threshold']
    >>> F1ScoreEvaluator(result_format="1.16")(response="Paris, France", ground_truth="Paris")
    {'f1_score': 0.6666666666666666, 'f1_result': 'pass', 'f1_threshold': 0.5}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Any

from tracesim.evaluators._base import Evaluator
from tracesim.evaluators._nltk_metrics import Bleu, Gleu, Meteor
from tracesim.evaluators._rouge import ROUGE_TYPES, Rouge
from tracesim.evaluators._word_overlap import F1Score
from tracesim.evaluators.compat._azure_errors import (
    ErrorBlame,
    ErrorCategory,
    ErrorTarget,
    EvaluationException,
    InvalidTypeError,
)
from tracesim.evaluators.compat._azure_format import ResultFormat, check_result_format
from tracesim.evaluators.compat._azure_similarity import SimilarityEvaluator

__all__ = [
    "BleuScoreEvaluator",
    "ErrorBlame",
    "ErrorCategory",
    "ErrorTarget",
    "EvaluationException",
    "F1ScoreEvaluator",
    "GleuScoreEvaluator",
    "MeteorScoreEvaluator",
    "RougeScoreEvaluator",
    "RougeType",
    "SimilarityEvaluator",
]


class RougeType(str, Enum):
    """Azure's ``RougeType`` members; ``RougeScoreEvaluator`` also takes rouge6–rouge9 and rougeLsum.

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


# What Azure's vendored rouge-score accepts: "rouge" and one digit (1-9), rougeL, rougeLsum.
_ROUGE_N = re.compile(r"rouge[0-9]\Z")
# 1.17+ keys for a metric m: m, m_score, m_passed, m_result, m_reason, m_status, ...
_SUFFIXES = ("", "_score", "_passed", "_result", "_reason", "_status", "_threshold", "_properties")
_ROUGE = ("rouge_precision", "rouge_recall", "rouge_f1_score")
_ROUGE_RESULTS = tuple(f"{m}_result" for m in _ROUGE)
_ROUGE_PASSED = tuple(f"{m}_passed" for m in _ROUGE)
_ROUGE_THRESHOLDS = tuple(f"{m}_threshold" for m in _ROUGE)


def _input_error(name: str, message: str, category: ErrorCategory = ErrorCategory.INVALID_VALUE) -> Exception:
    return EvaluationException(
        f"{name}: {message}", blame=ErrorBlame.USER_ERROR, category=category, target=ErrorTarget.CONVERSATION
    )


def _text(name: str, field: str, value: object) -> str:
    if isinstance(value, str):
        return value
    raise InvalidTypeError(
        f"{name}: '{field}' must be a string, got {type(value).__name__}", target=ErrorTarget.CONVERSATION
    )


def _is_image_part(part: object) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "image_url"


def _conversation_turns(name: str, conversation: object) -> list[tuple[str, str]]:
    """(response, ground truth) of each turn: the n-th assistant message answers the n-th user message."""
    if not isinstance(conversation, Mapping):
        raise InvalidTypeError(
            f"{name}: 'conversation' must be a dict with 'messages', got {type(conversation).__name__}",
            target=ErrorTarget.CONVERSATION,
        )
    if "messages" not in conversation:
        raise _input_error(name, "'conversation' has no 'messages'", ErrorCategory.MISSING_FIELD)
    messages = conversation["messages"]
    if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
        raise InvalidTypeError(
            f"{name}: 'conversation[\"messages\"]' must be a list of dicts", target=ErrorTarget.CONVERSATION
        )
    users, answers = 0, []
    for message in messages:
        if "role" not in message:
            raise _input_error(name, "a message of 'conversation' has no 'role'", ErrorCategory.MISSING_FIELD)
        content = message.get("content")
        if isinstance(content, list) and any(map(_is_image_part, content)):
            # Azure sends image conversations down another path, which NLP metrics cannot take.
            raise _input_error(name, "conversations with image content cannot be scored by text metrics")
        if message["role"] == "user":
            users += 1
        elif message["role"] == "assistant":
            answers.append(message)
    return [
        (_text(name, "content", m.get("content", "")), _text(name, "ground_truth", m.get("ground_truth", "")))
        for m in answers[:users]
    ]


def _combine(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """Azure's aggregation: numbers (bools too) averaged, other values from the last turn."""
    if len(turns) == 1:
        return turns[0]
    if not turns:
        return {}
    per_turn: dict[str, list[Any]] = {}
    for turn in turns:
        for key, value in turn.items():
            per_turn.setdefault(key, []).append(value)
    combined: dict[str, Any] = {
        # sum()/len() exactly as Azure computes it, so means are identical to the last bit.
        key: sum(values) / len(values) if all(isinstance(v, (int, float)) for v in values) else values[-1]
        for key, values in per_turn.items()
    }
    combined["evaluation_per_turn"] = per_turn
    return combined


class _AzureEvaluator:
    """Azure's call protocol: single inputs or a conversation, checked as Azure checks them."""

    _target = ErrorTarget.UNKNOWN

    def __call__(
        self,
        *args: object,
        response: str | None = None,
        ground_truth: str | None = None,
        conversation: Mapping[str, Any] | None = None,
        **inputs: object,
    ) -> dict[str, Any]:
        # Other keywords (query=, context=, ...) are ignored, as Azure ignores them; positional
        # arguments are dropped by Azure, so they count as missing inputs.
        name = type(self).__name__
        if conversation is not None:
            if response or ground_truth:
                raise _input_error(
                    name, "Cannot provide both 'conversation' and individual inputs at the same time."
                )
            return _combine([self._turn(r, g) for r, g in _conversation_turns(name, conversation)])
        if args or response is None or ground_truth is None:
            raise _input_error(name, "Either 'conversation' or individual inputs must be provided.")
        return self._turn(_text(name, "response", response), _text(name, "ground_truth", ground_truth))

    def _turn(self, response: str, ground_truth: str) -> dict[str, Any]:
        raise NotImplementedError

    def _evaluate(self, core: Evaluator, response: str, ground_truth: str) -> tuple[float, dict[str, Any]]:
        """The core evaluator's score and details; its errors (NLTK data missing) raised as Azure's."""
        result = core.evaluate(response, ground_truth)
        score = result.score
        if result.status != "ok" or score is None:
            raise EvaluationException(
                f"{type(self).__name__}: {result.error}",
                blame=ErrorBlame.SYSTEM_ERROR,
                category=ErrorCategory.FAILED_EXECUTION,
                target=self._target,
            )
        return score, result.details


class _ScoreEvaluator(_AzureEvaluator):
    """One score: 1.16's ``<key>_score/_result/_threshold`` or 1.17+'s ``<metric>...`` keys."""

    _key = ""  # 1.16: f1_score, f1_result, f1_threshold
    _metric = ""  # 1.17+: f1_score, f1_score_score, f1_score_passed, ...
    _core: Evaluator

    def __init__(self, *, threshold: float = 0.5, result_format: ResultFormat = "both") -> None:
        self.result_format = check_result_format(type(self).__name__, result_format)
        if not isinstance(threshold, (int, float)):
            # Azure fails on the first call ('>=' between a float and the value); this fails here.
            raise InvalidTypeError(f"threshold must be a number, got {type(threshold)}", target=self._target)
        self._threshold = threshold
        legacy, metric = self._key, self._metric
        self._legacy_keys = (f"{legacy}_score", f"{legacy}_result", f"{legacy}_threshold")
        self._keys = tuple(f"{metric}{suffix}" for suffix in _SUFFIXES)

    def _score(self, response: str, ground_truth: str) -> float:
        return self._evaluate(self._core, response, ground_truth)[0]

    def _turn(self, response: str, ground_truth: str) -> dict[str, Any]:
        score, threshold = self._score(response, ground_truth), self._threshold
        passed = score >= threshold  # NaN fails, as in Azure
        verdict = "pass" if passed else "fail"
        legacy = dict(zip(self._legacy_keys, (score, verdict, threshold), strict=True))
        if self.result_format == "1.16":
            return legacy
        values = (score, score, passed, verdict, None, "completed", threshold, None)
        current = dict(zip(self._keys, values, strict=True))
        return current if self.result_format == "1.18" else {**current, **legacy}


class F1ScoreEvaluator(_ScoreEvaluator):
    """SQuAD token F1 between response and ground truth (``threshold=0.5``).

    Example:
        >>> out = F1ScoreEvaluator(threshold=0.9)(response="Curie was born in Warsaw, Poland.",
        ...                                       ground_truth="Curie was born in Warsaw.")
        >>> out["f1_score"], out["f1_score_result"], out["f1_score_passed"]
        (0.9090909090909091, 'pass', True)
    """

    id = "azureai://built-in/evaluators/f1_score"
    _key, _metric, _target = "f1", "f1_score", ErrorTarget.F1_EVALUATOR

    def __init__(self, *, threshold: float = 0.5, result_format: ResultFormat = "both") -> None:
        super().__init__(threshold=threshold, result_format=result_format)
        self._core = F1Score(threshold=None)


class BleuScoreEvaluator(_ScoreEvaluator):
    """NLTK sentence BLEU with smoothing method 4; the int 0 when nothing matches.

    Example:
        >>> ev = BleuScoreEvaluator()
        >>> out = ev(response="Marie Curie was born in Warsaw, Poland.",
        ...          ground_truth="Marie Curie was born in Warsaw.")
        >>> out["bleu_score"], out["bleu_result"], out["bleu"], out["bleu_passed"]
        (0.6104735835807844, 'pass', 0.6104735835807844, True)
        >>> ev(response="x", ground_truth="y")["bleu_score"]
        0
    """

    id = "azureai://built-in/evaluators/bleu_score"
    _key = _metric = "bleu"

    def __init__(self, *, threshold: float = 0.5, result_format: ResultFormat = "both") -> None:
        super().__init__(threshold=threshold, result_format=result_format)
        self._core = Bleu(threshold=None)

    def _score(self, response: str, ground_truth: str) -> float:
        score = super()._score(response, ground_truth)
        # nltk returns the int 0 exactly when no unigram matches (also for empty texts).
        return 0 if score == 0 else score


class GleuScoreEvaluator(_ScoreEvaluator):
    """NLTK sentence GLEU over 1- to 4-grams.

    Example:
        >>> out = GleuScoreEvaluator()(response="Marie Curie was born in Warsaw, Poland.",
        ...                            ground_truth="Marie Curie was born in Warsaw.")
        >>> out["gleu_score"], out["gleu_status"]
        (0.6333333333333333, 'completed')
    """

    id = "azureai://built-in/evaluators/gleu_score"
    _key = _metric = "gleu"

    def __init__(self, *, threshold: float = 0.5, result_format: ResultFormat = "both") -> None:
        super().__init__(threshold=threshold, result_format=result_format)
        self._core = Gleu(threshold=None)


class MeteorScoreEvaluator(_ScoreEvaluator):
    """NLTK METEOR with WordNet synonyms (``alpha=0.9, beta=3.0, gamma=0.5``).

    Example:
        >>> out = MeteorScoreEvaluator()(response="Marie Curie was born in Warsaw, Poland.",
        ...                              ground_truth="Marie Curie was born in Warsaw.")
        >>> out["meteor_score"], out["meteor_threshold"], out["meteor_properties"]
        (0.9608843537414966, 0.5, None)
    """

    id = "azureai://built-in/evaluators/meteor_score"
    _key = _metric = "meteor"

    def __init__(
        self,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
        *,
        threshold: float = 0.5,
        result_format: ResultFormat = "both",
    ) -> None:
        super().__init__(threshold=threshold, result_format=result_format)
        self._core = Meteor(alpha, beta, gamma, threshold=None)


def _rouge_core(name: object) -> Rouge:
    if not isinstance(name, str):
        raise InvalidTypeError(
            f"rouge_type must be a RougeType or its string value, got {type(name)}",
            target=ErrorTarget.ROUGE_EVALUATOR,
        )
    if name == "rouge0":
        raise ValueError(f"rougen requires positive n: {name}")
    if name not in ROUGE_TYPES and not _ROUGE_N.match(name):
        raise ValueError(f"Invalid rouge type: {name}")
    return Rouge(name, threshold=None)


class RougeScoreEvaluator(_AzureEvaluator):
    """ROUGE precision, recall and F1 of one type, each with its own threshold.

    ``rouge_type`` is required: a :class:`RougeType`, or a string Azure's scorer takes
    (``rouge1`` … ``rouge9``, ``rougeL``, ``rougeLsum``; anything else raises ``ValueError``,
    here when built rather than on the first call). Thresholds must be floats, as in Azure
    (``1`` raises :class:`EvaluationException`, which is also the ``TypeError`` of 1.17 and before).
    1.17+'s ``rouge_score``/``rouge_passed``/``rouge_result``/``rouge_threshold`` are the F1's,
    the rest is in ``rouge_properties``; ``result_format="1.16"`` gives 1.16's nine flat keys.

    Example:
        >>> pair = {"response": "Marie Curie was born in Warsaw, Poland.",
        ...         "ground_truth": "Marie Curie was born in Warsaw."}
        >>> out = RougeScoreEvaluator(RougeType.ROUGE_1)(**pair)
        >>> out["rouge_score"], out["rouge_passed"], out["rouge_properties"]["rouge_recall"]
        (0.923076923076923, True, 1.0)
        >>> old = RougeScoreEvaluator(RougeType.ROUGE_1, result_format="1.16")(**pair)
        >>> old["rouge_precision"], old["rouge_recall"], old["rouge_f1_score_result"]
        (0.8571428571428571, 1.0, 'pass')
    """

    id = "azureai://built-in/evaluators/rouge_score"
    _target = ErrorTarget.ROUGE_EVALUATOR

    def __init__(
        self,
        rouge_type: RougeType | str,
        *,
        precision_threshold: float = 0.5,
        recall_threshold: float = 0.5,
        f1_score_threshold: float = 0.5,
        result_format: ResultFormat = "both",
    ) -> None:
        self.result_format = check_result_format(type(self).__name__, result_format)
        for name, value in (
            ("precision_threshold", precision_threshold),
            ("recall_threshold", recall_threshold),
            ("f1_score_threshold", f1_score_threshold),
        ):
            if not isinstance(value, float):
                raise InvalidTypeError(f"{name} must be a float, got {type(value)}", target=self._target)
        self._thresholds = (precision_threshold, recall_threshold, f1_score_threshold)
        self._core = _rouge_core(rouge_type.value if isinstance(rouge_type, RougeType) else rouge_type)

    def _turn(self, response: str, ground_truth: str) -> dict[str, Any]:
        details = self._evaluate(self._core, response, ground_truth)[1]
        scores = (float(details["precision"]), float(details["recall"]), float(details["f1"]))
        passed = [score >= threshold for score, threshold in zip(scores, self._thresholds, strict=True)]
        verdicts = ["pass" if ok else "fail" for ok in passed]
        flat = {**dict(zip(_ROUGE, scores, strict=True)), **dict(zip(_ROUGE_RESULTS, verdicts, strict=True))}
        thresholds = dict(zip(_ROUGE_THRESHOLDS, self._thresholds, strict=True))
        if self.result_format == "1.16":
            return {**flat, **thresholds}
        properties = {**flat, **dict(zip(_ROUGE_PASSED, passed, strict=True)), **thresholds}
        current = {
            "rouge": scores[2],
            "rouge_score": scores[2],
            "rouge_passed": passed[2],
            "rouge_result": verdicts[2],
            "rouge_reason": None,
            "rouge_status": "completed",
            "rouge_threshold": self._thresholds[2],
            "rouge_properties": properties,
        }
        return current if self.result_format == "1.18" else {**current, **flat, **thresholds}
