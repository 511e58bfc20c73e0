"""Loaders for the data sets bundled with the package (``smart_lgbm/data``).

* ``a9a`` / ``a9a.t``: LIBSVM's a9a (UCI Adult, binarised; 32,561 / 16,281 rows, 123 sparse
  0/1 features; labels -1/+1 mapped to 0/1).  Source: LIBSVM binary data sets (Chang & Lin),
  from UCI Adult; licence CC BY 4.0.
* ``binary.train`` / ``binary.test``: LightGBM's binary-classification example, a HIGGS
  sample (7,000 / 500 rows, 28 dense features).  Source: microsoft/LightGBM
  ``examples/binary_classification``; MIT licence.

All files are stored gzip-compressed, byte for byte as published.

* ``digits``: scikit-learn's copy of the UCI optical handwritten digits (1,797 images of
  8 x 8 pixels, 10 classes), shipped with scikit-learn (:func:`sklearn.datasets.load_digits`,
  no download); split here into training and test rows with a fixed seed.
"""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

A9A_FEATURES = 123


def data_path(name: str):
    """Path-like of a bundled data file, e.g. ``data_path("a9a.gz")``."""
    return resources.files("smart_lgbm") / "data" / name


def _read_svmlight_gz(name: str, n_features: int) -> tuple[sp.csr_matrix, np.ndarray]:
    with resources.as_file(data_path(name)) as path, gzip.open(path, "rb") as fh:
        X, y = load_svmlight_file(fh, n_features=n_features)
    return X.tocsr().astype(np.float32), y


def load_a9a() -> tuple[tuple[sp.csr_matrix, np.ndarray], tuple[sp.csr_matrix, np.ndarray]]:
    """((X_train, y_train), (X_test, y_test)) of a9a with labels in {0, 1}."""
    X_tr, y_tr = _read_svmlight_gz("a9a.gz", A9A_FEATURES)
    X_te, y_te = _read_svmlight_gz("a9a.t.gz", A9A_FEATURES)
    return (X_tr, (y_tr > 0).astype(np.float64)), (X_te, (y_te > 0).astype(np.float64))


def load_higgs_sample() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """((X_train, y_train), (X_test, y_test)) of LightGBM's HIGGS example (TSV, label first)."""

    def read(name: str) -> tuple[np.ndarray, np.ndarray]:
        with resources.as_file(data_path(name)) as path:
            table = np.loadtxt(path, delimiter="\t", dtype=np.float64)
        return table[:, 1:], table[:, 0]

    return read("binary.train.gz"), read("binary.test.gz")


#: Share of the digits held out for validation, and the seed of that split.
DIGITS_TEST_SIZE = 0.3
DIGITS_SPLIT_SEED = 0


def load_digits_split() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """((X_train, y_train), (X_test, y_test)) of scikit-learn's bundled digits (10 classes).

    A seeded random split of the 1,797 rows: 30% for testing (the same rows every time).
    Labels are 0-9 as float64, pixels 0-16 as float64.
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(DIGITS_SPLIT_SEED)
    test = np.zeros(len(y), dtype=bool)
    test[rng.choice(len(y), int(round(DIGITS_TEST_SIZE * len(y))), replace=False)] = True
    X, y = X.astype(np.float64), y.astype(np.float64)
    return (X[~test], y[~test]), (X[test], y[test])
