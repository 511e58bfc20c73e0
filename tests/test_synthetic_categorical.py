"""The mixed numerical and categorical generator (smart_lgbm.datasets.make_mixed_categorical)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from smart_lgbm.datasets import make_mixed_categorical


def test_same_seed_same_bytes_and_another_seed_other_data():
    X, y, cat = make_mixed_categorical(30_000, 20, (1000, 50, 5, 3), seed=3)
    X2, y2, cat2 = make_mixed_categorical(30_000, 20, (1000, 50, 5, 3), seed=3)
    X3, y3, _ = make_mixed_categorical(30_000, 20, (1000, 50, 5, 3), seed=4)
    assert X.tobytes() == X2.tobytes() and y.tobytes() == y2.tobytes() and cat == cat2
    assert X.tobytes() != X3.tobytes() and y.tobytes() != y3.tobytes()
    # made in chunks of 200,000 rows, each with its own generator: still one seed, one table
    X4, y4, _ = make_mixed_categorical(250_000, 20, (1000, 50, 5, 3), seed=3)
    X5, y5, _ = make_mixed_categorical(250_000, 20, (1000, 50, 5, 3), seed=3)
    assert X4.shape == (250_000, 24) and X4.tobytes() == X5.tobytes() and y4.tobytes() == y5.tobytes()
    assert not np.array_equal(X4[:50_000, 20], X4[200_000:, 20])  # the chunks differ


def test_columns_levels_nan_and_label_signal():
    levels = (1000, 50, 5, 3)
    X, y, cat = make_mixed_categorical(200_000, 20, levels, seed=1)
    assert X.dtype == np.float32 and X.shape == (200_000, 24) and cat == [20, 21, 22, 23]
    assert set(np.unique(y)) == {0.0, 1.0} and 0.2 < y.mean() < 0.8
    nan_share = np.isnan(X[:, :20]).mean(axis=0)
    assert np.all((nan_share > 0.04) & (nan_share < 0.06))
    for j, v in zip(cat, levels, strict=True):
        c = X[:, j]
        assert not np.isnan(c).any() and np.array_equal(c, np.round(c)) and c.min() >= 0 and c.max() < v
    counts = np.bincount(X[:, 20].astype(np.int64), minlength=1000)
    assert np.count_nonzero(counts) > 900  # the long tail is there
    assert counts.max() > 20 * np.median(counts)  # and a few levels are frequent (Zipf-like)
    # each level has its own effect: the frequent levels' positive rates differ far beyond
    # what binomial noise gives
    top = np.argsort(-counts)[:30]
    rates = np.array([y[X[:, 20] == t].mean() for t in top])
    noise_sd = np.sqrt(0.25 / counts[top].min())
    assert rates.std() > 4 * noise_sd


def test_defaults_are_a_real_shaped_table():
    defaults = {k: p.default for k, p in inspect.signature(make_mixed_categorical).parameters.items()}
    assert defaults["n_rows"] >= 1_000_000 and len(defaults["levels"]) >= 4 and max(defaults["levels"]) >= 1000


@pytest.mark.parametrize("kwargs, match", [
    ({"n_rows": 0}, "n_rows must be an integer >= 1"),
    ({"n_numerical": 8}, "n_numerical must be an integer >= 16"),
    ({"levels": ()}, "levels must be a non-empty tuple"),
    ({"levels": (10, 1)}, "levels must be an integer >= 2"),
    ({"levels": (1 << 25,)}, "levels must be at most 16777216"),
])
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_mixed_categorical(**{"n_rows": 100, **kwargs})
