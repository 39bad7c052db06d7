"""ROUGE-Lsum (summary-level LCS) with rouge-score's numbers and a bit-parallel LCS.

rouge-score builds a full Python LCS table for every (reference line, candidate line)
pair, so its cost is the product of the token counts: about 1 µs per cell, minutes for
long texts. Here each table row is a Python int used as a bit vector (Hyyrö's LCS
recurrence, one big-int step per reference token), and the LCS is read back with
rouge-score's own tie-breaking, so the chosen tokens, and the numbers, are the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

__all__ = ["lcs_indices", "summary_level_lcs"]


def lcs_indices(ref: Sequence[str], can: Sequence[str]) -> list[int]:
    """Indices into ``ref`` of the LCS of ``ref`` and ``can`` that rouge-score's ``lcs_ind`` picks.

    Bit ``j - 1`` of ``rows[i]`` is set when ``LCS(ref[:i], can[:j]) == LCS(ref[:i], can[:j - 1])``,
    so ``LCS(ref[:i], can[:j])`` is ``j`` minus the set bits below ``j``. rouge-score walks
    back from the corner: a diagonal step on equal tokens, otherwise left when that keeps
    the length and up when the row above has it. Once the row above has a shorter LCS,
    the walk goes left to the nearest equal token of the row, so that jump is taken at once.

    Example:
        >>> lcs_indices("a b c d".split(), "b d c".split())
        [1, 2]
    """
    return _lcs_indices(ref, can, _positions(can))


def _positions(can: Sequence[str]) -> dict[str, int]:
    """Each token of ``can`` -> the bit mask of its positions."""
    positions: dict[str, int] = {}
    for j, token in enumerate(can):
        positions[token] = positions.get(token, 0) | (1 << j)
    return positions


def _lcs_indices(ref: Sequence[str], can: Sequence[str], positions: dict[str, int]) -> list[int]:
    width = len(can)
    if not ref or not width:
        return []
    full = (1 << width) - 1
    row = full
    rows = [row]
    for token in ref:
        matches = row & positions.get(token, 0)
        row = ((row + matches) | (row - matches)) & full
        rows.append(row)
    found = []
    i, j = len(ref), width
    length = width - rows[i].bit_count()  # LCS(ref[:i], can[:j])
    while length > 0:  # no token is taken once the LCS left is empty
        token = ref[i - 1]
        if token != can[j - 1]:
            if j - (rows[i - 1] & ((1 << j) - 1)).bit_count() == length:
                i -= 1  # the row above has the same LCS: rouge-score goes up
                continue
            j = (positions[token] & ((1 << (j - 1)) - 1)).bit_length()  # nearest equal token
        found.append(i - 1)
        i -= 1
        j -= 1
        length -= 1
    found.reverse()
    return found


def summary_level_lcs(
    ref_sentences: list[list[str]], can_sentences: list[list[str]]
) -> tuple[float, float, float]:
    """(precision, recall, F1) of ROUGE-Lsum, as rouge-score's ``_summary_level_lcs``.

    The union of the LCS tokens of each reference sentence with every candidate sentence
    counts as hits, each token at most as often as it occurs on both sides.

    Example:
        >>> summary_level_lcs([["the", "cat", "sat"]], [["the", "cat"], ["sat", "down"]])
        (0.75, 1.0, 0.8571428571428571)
    """
    total_ref = sum(map(len, ref_sentences))
    total_can = sum(map(len, can_sentences))
    if not total_ref or not total_can:
        return 0, 0, 0  # rouge-score's ints
    left_ref: Counter[str] = Counter()
    left_can: Counter[str] = Counter()
    for sentence in ref_sentences:
        left_ref.update(sentence)
    for sentence in can_sentences:
        left_can.update(sentence)
    candidates = [(can, _positions(can)) for can in can_sentences]
    hits = 0
    for ref in ref_sentences:
        union = sorted(set().union(*(_lcs_indices(ref, can, positions) for can, positions in candidates)))
        for token in (ref[i] for i in union):
            if left_can[token] > 0 and left_ref[token] > 0:
                hits += 1
                left_can[token] -= 1
                left_ref[token] -= 1
    recall = hits / total_ref
    precision = hits / total_can
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1
