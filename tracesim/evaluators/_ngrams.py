"""Sentence BLEU and GLEU over token lists, with NLTK's numbers and C-speed n-gram counts.

NLTK's ``sentence_bleu`` and ``sentence_gleu`` build every n-gram with a Python generator and
go through the corpus-level code for one sentence; here each order's n-grams are counted
once with ``Counter(zip(...))`` (in C), and the arithmetic is NLTK's, step for step, so the
floats are the same bit for bit: modified precision as ``numerator / denominator`` with the
hypothesis' n-gram count (at least 1) as the denominator, Chen & Cherry's method 4 for the
orders with no match, ``math.fsum`` of the weighted logs, NLTK's brevity penalty. The
differential tests compare both on random and real token lists.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import repeat

__all__ = ["sentence_bleu4", "sentence_gleu"]

_K = 5  # SmoothingFunction(k=5), NLTK's default, as Azure AI Evaluation uses it


def _counts(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    if len(tokens) < n:
        return Counter()
    return Counter(zip(*(tokens[i:] for i in range(n)), strict=False))


def _clipped(counts: Counter[tuple[str, ...]], reference: Counter[tuple[str, ...]]) -> int:
    """How many of ``counts`` the reference has: each n-gram's count clipped to the reference's."""
    return sum(map(min, counts.values(), map(reference.get, counts, repeat(0))))


def sentence_bleu4(reference: Sequence[str], hypothesis: Sequence[str]) -> float:
    """NLTK ``sentence_bleu([reference], hypothesis, smoothing_function=method4)``, 4-gram weights.

    Example:
        >>> sentence_bleu4("Marie Curie was born in Warsaw .".split(),
        ...                "Marie Curie was born in Paris .".split())
        0.6434588841607617
    """
    hyp_len, ref_len = len(hypothesis), len(reference)
    numerators: list[int] = []
    denominators: list[int] = []
    for n in (1, 2, 3, 4):
        counts = _counts(hypothesis, n)
        if counts:
            ref_counts = _counts(reference, n)
            numerators.append(_clipped(counts, ref_counts))
        else:
            numerators.append(0)
        denominators.append(max(1, hyp_len - n + 1) if hyp_len >= n else 1)
    if numerators[0] == 0:
        return 0.0  # NLTK returns the int 0: no unigram matches
    # brevity_penalty(closest_ref_len, hyp_len) with one reference; hyp_len > 0 here
    penalty = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    precisions: list[float] = []
    smoothed = 1
    for numerator, denominator in zip(numerators, denominators, strict=True):
        if numerator == 0 and hyp_len > 1:  # method 4
            precisions.append((1 / (2**smoothed * _K / math.log(hyp_len))) / denominator)
            smoothed += 1
        elif numerator:
            precisions.append(numerator / denominator)  # float(Fraction): correctly rounded
        # a zero precision that method 4 leaves (one-token hypothesis) is left out of the sum
    return penalty * math.exp(math.fsum(0.25 * math.log(p) for p in precisions))


def sentence_gleu(reference: Sequence[str], hypothesis: Sequence[str], max_len: int = 4) -> float:
    """NLTK ``sentence_gleu([reference], hypothesis, min_len=1, max_len=max_len)``.

    Example:
        >>> sentence_gleu("The capital of Japan is Tokyo .".split(),
        ...               "Tokyo is the capital of Japan .".split())
        0.4090909090909091
    """
    matches = hyp_total = ref_total = 0
    for n in range(1, max_len + 1):
        counts = _counts(hypothesis, n)
        ref_counts = _counts(reference, n)
        hyp_total += counts.total()
        ref_total += ref_counts.total()
        if counts and ref_counts:
            matches += _clipped(counts, ref_counts)
    total = max(hyp_total, ref_total)
    return matches / total if total else 0.0
