"""Percentiles agree with numpy's default method; histogram bins are predictable."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracesim._report import histogram, histogram_edges, percentile


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 1000])
@pytest.mark.parametrize("seed", range(5))
def test_percentile_matches_numpy_linear_on_random_data(n: int, seed: int) -> None:
    rng = random.Random(seed)
    values = sorted(rng.lognormvariate(0, 1) for _ in range(n))
    for q in [0, 1, 25, 50, 90, 95, 99, 99.9, 100, rng.uniform(0, 100)]:
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-12, abs=0)


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60),
    st.floats(0, 100),
)
def test_percentile_matches_numpy_for_any_data(values: list[float], q: float) -> None:
    values.sort()
    expected = float(np.percentile(values, q))
    assert percentile(values, q) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_percentile_small_cases_exactly() -> None:
    assert percentile([5.0], 99) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([0.0, 1.0], 95) == 0.95
    assert percentile([1.0, 2.0, 3.0], 0) == 1.0
    assert percentile([1.0, 2.0, 3.0], 100) == 3.0


def test_percentile_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], 101)


def test_unit_scores_get_tenths() -> None:
    edges = histogram_edges([0.0, 0.55, 1.0], thresholds=[0.8])
    assert edges == tuple(i / 10 for i in range(11))
    assert histogram([0.0, 0.55, 0.1, 1.0, 0.95], edges).counts == (1, 1, 0, 0, 0, 1, 0, 0, 0, 2)


def test_rating_scale_gets_one_bin_per_value() -> None:
    edges = histogram_edges([1.0, 2.0, 5.0], thresholds=[3.0])
    assert edges == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert histogram([1.0, 2.0, 2.0, 5.0], edges).counts == (1, 2, 0, 0, 1)


def test_other_ranges_get_ten_equal_bins_covering_thresholds() -> None:
    edges = histogram_edges([-3.0, 7.5], thresholds=[12.0])
    assert len(edges) == 11
    assert edges[0] == -3.0
    assert edges[-1] == 12.0
    counts = histogram([-3.0, 7.5, 12.0], edges).counts
    assert sum(counts) == 3
    assert counts[0] == 1
    assert counts[-1] == 1


def test_single_value_and_no_values() -> None:
    assert histogram_edges([42.5]) == (42.0, 43.0)
    assert histogram_edges([]) == tuple(i / 10 for i in range(11))
    assert histogram([], histogram_edges([])).counts == (0,) * 10
