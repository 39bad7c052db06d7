"""Which azure-ai-evaluation release's result dict a ``compat.azure`` evaluator returns.

``"1.18"`` is the dict of 1.17 and 1.18: ``<metric>``, ``<metric>_score``, ``_passed``,
``_result``, ``_reason``, ``_status``, ``_threshold``, ``_properties``. ``"1.16"`` is the older
dict of 1.13 to 1.16 (``f1_score``, ``f1_result``, ``f1_threshold``; ROUGE's nine flat keys;
similarity's ``gpt_similarity`` and ``similarity_*_tokens``). ``"both"``, the NLP evaluators'
default, is 1.18's dict followed by the keys only 1.16 has, with the same values: code written
for either release reads it (and the documented dicts of tracesim's evaluator contract hold).
`SimilarityEvaluator` returns one release's dict, 1.18's by default.

Example:
    >>> RESULT_FORMATS
    ('1.18', '1.16', 'both')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

__all__ = ["RESULT_FORMATS", "ResultFormat", "check_result_format"]

ResultFormat = Literal["1.18", "1.16", "both"]
RESULT_FORMATS: tuple[ResultFormat, ...] = ("1.18", "1.16", "both")
"""The azure-ai-evaluation output shapes the façades reproduce (``result_format=...``)."""


def check_result_format(
    owner: str, value: object, accepted: Sequence[ResultFormat] = RESULT_FORMATS
) -> ResultFormat:
    """``value`` if it names a shape ``owner`` reproduces; else a ``ValueError`` saying which do.

    Example:
        >>> check_result_format("F1ScoreEvaluator", "1.16")
        '1.16'
    """
    for known in accepted:
        if value == known:
            return known
    raise ValueError(
        f"{owner} result_format must be one of {', '.join(map(repr, accepted))} "
        f"(the azure-ai-evaluation version whose keys to return); got {value!r}"
    )
