"""Façades with the interfaces of other evaluation tools, over tracesim's catalogue.

Each module reproduces one product's call style, defaults, edge cases and output shape, so
a team can switch without its numbers moving:

- ``compat.azure``: Azure AI Evaluation's ``F1ScoreEvaluator``, ``BleuScoreEvaluator``,
  ``GleuScoreEvaluator``, ``RougeScoreEvaluator``, ``MeteorScoreEvaluator``.
- ``compat.agenta``: Agenta's Similarity Match and Levenshtein Distance.
- ``compat.twosignal``: 2Signal's Levenshtein evaluator.
- ``compat.mastra``: Mastra's ``ContentSimilarityMetric``.
- ``compat.agenttest``: AgentTest's evaluators: ``StringSimilarity``, ``Contains``, ``Regex``,
  ``Metrics``, ``Metric``, ``LLMJudge``.

Example:
    >>> from tracesim.evaluators.compat import twosignal
    >>> twosignal.Levenshtein().evaluate("Hello World!", "Hello World")
    {'score': 0.92, 'label': 'pass'}
"""

__all__: list[str] = []
