"""Loaders for the data sets bundled with the package (``smart_lgbm/data``).

* ``a9a`` / ``a9a.t``: LIBSVM's a9a (UCI Adult, binarised; 32,561 / 16,281 rows, 123 sparse
  0/1 features; labels -1/+1 mapped to 0/1).  Source: LIBSVM binary data sets (Chang & Lin),
  from UCI Adult; licence CC BY 4.0.
* ``binary.train`` / ``binary.test``: LightGBM's binary-classification example, a HIGGS
  sample (7,000 / 500 rows, 28 dense features).  Source: microsoft/LightGBM
  ``examples/binary_classification``; MIT licence.

All files are stored gzip-compressed, byte for byte as published.
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
