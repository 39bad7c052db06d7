"""Evaluators: score an output against its expected value.

Every evaluator returns an :class:`EvalResult`. The catalogue reproduces the numbers of
the tools each metric is named after (see ``docs/evaluators.md``); ``compat`` holds
façades with those tools' own interfaces. Build evaluators directly or from config:

    >>> from tracesim.evaluators import Levenshtein, from_config
    >>> Levenshtein(threshold=0.8).evaluate("Hello World!", "Hello World").score
    0.92
    >>> from_config({"type": "rouge", "rouge_type": "rouge1"}).rouge_type
    'rouge1'

Names are imported when first used: ``import tracesim.evaluators`` (and `tracesim.score`,
which needs only `EvalResult`) must not load numpy, NLTK or the judge's HTTP client for
evaluators the program never builds.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracesim.evaluators._base import DEFAULT, Evaluator, Measurement
    from tracesim.evaluators._compared_text import as_text
    from tracesim.evaluators._content_similarity import ContentSimilarity
    from tracesim.evaluators._exact import ExactMatch
    from tracesim.evaluators._function_evaluator import AsyncFunctionEvaluator, FunctionEvaluator, evaluator
    from tracesim.evaluators._judge import LLMJudge, LLMSimilarity
    from tracesim.evaluators._levenshtein import Levenshtein, LevenshteinDistance
    from tracesim.evaluators._model_connection import ModelConnection
    from tracesim.evaluators._nltk_data import MissingNLTKDataError
    from tracesim.evaluators._nltk_metrics import Bleu, Gleu, Meteor
    from tracesim.evaluators._ragas_tool_calls import ToolCallAccuracy, ToolCallF1
    from tracesim.evaluators._result import EvalResult
    from tracesim.evaluators._rouge import Rouge
    from tracesim.evaluators._run_checks import RunBudget, ToolArguments, ToolNames, Trajectory
    from tracesim.evaluators._semantic import SemanticSimilarity
    from tracesim.evaluators._tfidf import TfidfCosine
    from tracesim.evaluators._tool_correctness import ToolCorrectness
    from tracesim.evaluators._trajectory_judge import TrajectoryJudge
    from tracesim.evaluators._trajectory_match import TrajectoryMatch
    from tracesim.evaluators._type_registry import (
        available_types,
        from_config,
        parse_spec,
        register,
        unregister,
    )
    from tracesim.evaluators._word_overlap import F1Score, Jaccard
    from tracesim.evaluators._wordllama import MissingExtraError

_MODULE_OF = {
    "AsyncFunctionEvaluator": "tracesim.evaluators._function_evaluator",
    "Bleu": "tracesim.evaluators._nltk_metrics",
    "ContentSimilarity": "tracesim.evaluators._content_similarity",
    "DEFAULT": "tracesim.evaluators._base",
    "EvalResult": "tracesim.evaluators._result",
    "Evaluator": "tracesim.evaluators._base",
    "ExactMatch": "tracesim.evaluators._exact",
    "F1Score": "tracesim.evaluators._word_overlap",
    "FunctionEvaluator": "tracesim.evaluators._function_evaluator",
    "Gleu": "tracesim.evaluators._nltk_metrics",
    "Jaccard": "tracesim.evaluators._word_overlap",
    "LLMJudge": "tracesim.evaluators._judge",
    "LLMSimilarity": "tracesim.evaluators._judge",
    "Levenshtein": "tracesim.evaluators._levenshtein",
    "LevenshteinDistance": "tracesim.evaluators._levenshtein",
    "Measurement": "tracesim.evaluators._base",
    "Meteor": "tracesim.evaluators._nltk_metrics",
    "MissingExtraError": "tracesim.evaluators._wordllama",
    "MissingNLTKDataError": "tracesim.evaluators._nltk_data",
    "ModelConnection": "tracesim.evaluators._model_connection",
    "Rouge": "tracesim.evaluators._rouge",
    "RunBudget": "tracesim.evaluators._run_checks",
    "SemanticSimilarity": "tracesim.evaluators._semantic",
    "TfidfCosine": "tracesim.evaluators._tfidf",
    "ToolArguments": "tracesim.evaluators._run_checks",
    "ToolCallAccuracy": "tracesim.evaluators._ragas_tool_calls",
    "ToolCallF1": "tracesim.evaluators._ragas_tool_calls",
    "ToolCorrectness": "tracesim.evaluators._tool_correctness",
    "ToolNames": "tracesim.evaluators._run_checks",
    "Trajectory": "tracesim.evaluators._run_checks",
    "TrajectoryJudge": "tracesim.evaluators._trajectory_judge",
    "TrajectoryMatch": "tracesim.evaluators._trajectory_match",
    "as_text": "tracesim.evaluators._compared_text",
    "available_types": "tracesim.evaluators._type_registry",
    "evaluator": "tracesim.evaluators._function_evaluator",
    "from_config": "tracesim.evaluators._type_registry",
    "parse_spec": "tracesim.evaluators._type_registry",
    "register": "tracesim.evaluators._type_registry",
    "unregister": "tracesim.evaluators._type_registry",
}

__all__ = [
    "DEFAULT",
    "AsyncFunctionEvaluator",
    "Bleu",
    "ContentSimilarity",
    "EvalResult",
    "Evaluator",
    "ExactMatch",
    "F1Score",
    "FunctionEvaluator",
    "Gleu",
    "Jaccard",
    "LLMJudge",
    "LLMSimilarity",
    "Levenshtein",
    "LevenshteinDistance",
    "Measurement",
    "Meteor",
    "MissingExtraError",
    "MissingNLTKDataError",
    "ModelConnection",
    "Rouge",
    "RunBudget",
    "SemanticSimilarity",
    "TfidfCosine",
    "ToolArguments",
    "ToolCallAccuracy",
    "ToolCallF1",
    "ToolCorrectness",
    "ToolNames",
    "Trajectory",
    "TrajectoryJudge",
    "TrajectoryMatch",
    "as_text",
    "available_types",
    "evaluator",
    "from_config",
    "parse_spec",
    "register",
    "unregister",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tracesim.evaluators' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
