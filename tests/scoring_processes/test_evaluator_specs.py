"""What an evaluator records of how it was built, for a worker process to rebuild it."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

from tracesim.evaluators import Evaluator, Levenshtein, Rouge, from_config
from tracesim.evaluators._base import EvaluatorSpec


class StrictRouge(Rouge):
    """A subclass whose own arguments differ from its parent's: the outer call is recorded."""

    def __init__(self, variant: str = "rouge1", **shared: Any) -> None:
        super().__init__(rouge_type=variant, **shared)


@dataclasses.dataclass
class Late(Evaluator):
    """An __init__ added after the class was made: not recorded."""

    bonus: float = 0.0

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        return 1.0 + self.bonus


def test_the_outermost_init_is_recorded_without_the_shared_settings() -> None:
    evaluator = StrictRouge("rouge2", threshold=0.3, name="strict")
    assert evaluator.spec == EvaluatorSpec(__name__, "StrictRouge", ("rouge2",), {})
    assert evaluator.shared_settings()["threshold"] == 0.3
    assert from_config({"type": "rouge", "rouge_type": "rougeL", "name": "r"}).spec == EvaluatorSpec(
        "tracesim.evaluators._rouge", "Rouge", (), {"rouge_type": "rougeL"}
    )


def test_a_rebuilt_evaluator_has_the_copys_shared_settings_and_scores_the_same() -> None:
    original = StrictRouge("rouge2", threshold=0.3)
    copy = original.replace(name="other", threshold=0.9, sample_rate=0.5, timeout_s=2.0, runs_in="process")
    spec = copy.spec
    assert spec is not None
    data = pickle.dumps((spec, copy.shared_settings()))
    rebuilt = Evaluator.rebuilt(*pickle.loads(data))
    assert type(rebuilt) is StrictRouge
    assert rebuilt.shared_settings() == copy.shared_settings()
    pair = ("the cat sat down", "the cat sat")
    assert rebuilt.evaluate(*pair).model_dump(exclude={"duration_s"}) == copy.evaluate(*pair).model_dump(
        exclude={"duration_s"}
    )
    assert original.name == "rouge"
    assert original.threshold == 0.3


def test_classes_without_a_recorded_init_say_so() -> None:
    assert Late(bonus=0.5).spec is None
    assert Levenshtein().spec == EvaluatorSpec("tracesim.evaluators._levenshtein", "Levenshtein", (), {})


class _NeedsThreshold(Evaluator):
    """A subclass whose ``threshold`` has no default (the spec leaves shared settings out)."""

    type_name = "needs_threshold"

    def __init__(self, *, threshold: float, scale: float = 1.0, **shared: Any) -> None:
        super().__init__(threshold=threshold, **shared)
        self.scale = scale

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        return self.scale


def test_a_required_shared_setting_is_given_when_rebuilt() -> None:
    original = _NeedsThreshold(threshold=0.7, scale=0.5).replace(name="needs")
    spec = original.spec
    assert spec is not None
    copy = Evaluator.rebuilt(spec, original.shared_settings())
    assert (copy.name, copy.threshold, copy.scale) == ("needs", 0.7, 0.5)  # type: ignore[attr-defined]
