"""Forwarder: `describe_timeout` now lives in `tracesim.evaluators._model_evaluator`."""

# forwarder: remove when tracesim/_scoring/_jobs.py and tracesim/batch/_rows.py import _model_evaluator
from tracesim.evaluators._model_evaluator import describe_timeout as describe_timeout
