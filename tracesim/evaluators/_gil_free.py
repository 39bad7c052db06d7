"""rapidfuzz scores of long sequences, computed with the GIL released.

Called directly, rapidfuzz's scorers (``Levenshtein.distance``, ``LCSseq.similarity``)
hold the GIL for the whole computation: two unrelated 100,000-character texts stop every
other thread of the host for about a second. ``rapidfuzz.process.cdist`` runs the same
scorer with the GIL released, in the calling thread when ``workers=1``, with the same
result. Its fixed cost (numpy arrays, ~50 µs) only pays off on long inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

__all__ = ["int_score", "warm_up"]

# len(a) * len(b) above which cdist is used: about a millisecond of bit-parallel work.
_RELEASE_ABOVE = 1 << 22


@functools.cache
def _cdist() -> Callable[..., Any] | None:
    try:
        import numpy  # noqa: F401  (cdist returns a numpy array; rouge-score depends on numpy)
    except ImportError:  # pragma: no cover - numpy comes with rouge-score
        return None
    from rapidfuzz.process import cdist

    return cdist


def warm_up() -> None:
    """Import numpy and cdist now (~0.1 s), so that the first long text does not pay for it.

    Evaluators that may take the GIL-free path call this when they are built.

    Example:
        >>> warm_up()
    """
    _cdist()


def int_score(scorer: Callable[..., Any], a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """``scorer(a, b)`` (an integer rapidfuzz scorer), without the GIL when the inputs are long.

    Example:
        >>> from rapidfuzz.distance import Levenshtein
        >>> int_score(Levenshtein.distance, "kitten", "sitting")
        3
        >>> int_score(Levenshtein.distance, "ab" * 3000, "ba" * 3000)
        2
    """
    cdist = _cdist() if len(a) * len(b) > _RELEASE_ABOVE else None
    if cdist is None:
        return int(scorer(a, b))
    return int(cdist([a], [b], scorer=scorer, processor=None, workers=1)[0, 0])
