"""An evaluator that puts every kind of secret into every field of its result.

For the tests that read results back from a real backend (Phoenix annotations, MLflow
assessments) and check that nothing there is unredacted: ``SECRETS`` maps each kind to
(secret, fragment that must never appear), ``EVERY_SECRET`` joins the secrets.

Example:
    >>> result = Leaky().measure("out", None)
    >>> result.label == EVERY_SECRET and all(s in result.details for s, _ in SECRETS.values())
    True
"""

from __future__ import annotations

from typing import Any

from secret_kinds import KINDS

from tracesim.evaluators import Evaluator, Measurement

SECRETS = KINDS  # one secret of each kind, with the fragment that must never appear
EVERY_SECRET = " | ".join(secret for secret, _ in SECRETS.values())


class Leaky(Evaluator):
    """Every secret in every field of its result: label, explanation, details (keys and values)."""

    type_name = "leaky"
    requires_expected = False

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        details = {"seen": EVERY_SECRET, **{secret: kind for kind, (secret, _) in SECRETS.items()}}
        return Measurement(0.5, details, explanation=f"compared with {EVERY_SECRET}", label=EVERY_SECRET)
