"""Evaluators: score an output against its expected value.

Every evaluator returns an :class:`EvalResult`. The catalogue reproduces the numbers of
the tools each metric is named after (see ``docs/evaluators.md``); ``compat`` holds
façades with those tools' own interfaces. Build evaluators directly or from config:

    >>> from tracesim.evaluators import Levenshtein, from_config
    >>> Levenshtein(threshold=0.8).evaluate("Hello World!", "Hello World").score
    0.92
    >>> from_config({"type": "rouge", "rouge_type": "rouge1"}).rouge_type
    'rouge1'
"""

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
from tracesim.evaluators._type_registry import available_types, from_config, parse_spec, register, unregister
from tracesim.evaluators._word_overlap import F1Score, Jaccard
from tracesim.evaluators._wordllama import MissingExtraError

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
