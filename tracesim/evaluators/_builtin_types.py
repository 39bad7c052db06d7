"""The built-in evaluator types, by type name (registered on first use of the registry)."""

from __future__ import annotations

from tracesim.evaluators._base import Evaluator
from tracesim.evaluators._content_similarity import ContentSimilarity
from tracesim.evaluators._exact import ExactMatch
from tracesim.evaluators._judge import LLMJudge, LLMSimilarity
from tracesim.evaluators._levenshtein import Levenshtein, LevenshteinDistance
from tracesim.evaluators._nltk_metrics import Bleu, Gleu, Meteor
from tracesim.evaluators._ragas_tool_calls import ToolCallAccuracy, ToolCallF1
from tracesim.evaluators._rouge import Rouge
from tracesim.evaluators._run_checks import RunBudget, ToolArguments, ToolNames, Trajectory
from tracesim.evaluators._semantic import SemanticSimilarity
from tracesim.evaluators._tfidf import TfidfCosine
from tracesim.evaluators._tool_correctness import ToolCorrectness
from tracesim.evaluators._trajectory_judge import TrajectoryJudge
from tracesim.evaluators._trajectory_match import TrajectoryMatch
from tracesim.evaluators._word_overlap import F1Score, Jaccard

__all__ = ["BUILTIN_TYPES"]

BUILTIN_TYPES: dict[str, type[Evaluator]] = {
    cls.type_name: cls
    for cls in (
        ExactMatch,
        Levenshtein,
        LevenshteinDistance,
        Jaccard,
        TfidfCosine,
        ContentSimilarity,
        F1Score,
        Bleu,
        Gleu,
        Rouge,
        Meteor,
        SemanticSimilarity,
        LLMSimilarity,
        LLMJudge,
        # agent runs: tool calls and trajectories (tracesim.runs)
        TrajectoryMatch,
        ToolCorrectness,
        ToolCallAccuracy,
        ToolCallF1,
        ToolNames,
        Trajectory,
        ToolArguments,
        RunBudget,
        TrajectoryJudge,
    )
}
