"""Readers for learning-to-rank data: SVMlight/LETOR with ``qid:``, LightGBM's ``.query`` layout.

All readers return ``(X, y, group)``: ``X`` a CSR matrix, ``y`` float64 labels and
``group`` int64 query sizes in file order (LightGBM's ``group``). Paths ending in
``.gz`` (or ``.bz2``) are decompressed transparently.

Feature indices are read as LightGBM reads LibSVM files: index ``k`` is column ``k``
(``zero_based=True``), so a MSLR file with features 1..136 gives 137 columns of which
column 0 is empty, and a model trained by the LightGBM CLI on the same file uses the
same column numbers. Pass ``zero_based=False`` for 136 columns numbered from 0.
"""

from __future__ import annotations

import bz2
import gzip
import importlib.resources
import os
from contextlib import ExitStack
from pathlib import Path
from typing import IO

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file, load_svmlight_files

RankingData = tuple[sp.csr_matrix, np.ndarray, np.ndarray]

_COMPRESSED = (".gz", ".bz2")


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt")
    if path.suffix == ".bz2":
        return bz2.open(path, "rt")
    return open(path)


def group_from_qid(qid: np.ndarray) -> np.ndarray:
    """Query sizes from per-row query ids whose rows are contiguous per query.

    Raises ``ValueError`` (naming ``qid``) if a query id reappears after another one,
    because LightGBM's ``group`` can only describe contiguous queries.
    """
    qid = np.asarray(qid)
    if qid.ndim != 1 or qid.shape[0] == 0:
        raise ValueError("qid must be a non-empty 1-D array")
    starts = np.flatnonzero(np.concatenate(([True], qid[1:] != qid[:-1])))
    run_ids = qid[starts]
    if np.unique(run_ids).shape[0] != run_ids.shape[0]:
        seen: set = set()
        for q in run_ids.tolist():
            if q in seen:
                raise ValueError(
                    f"qid {q} occurs in more than one block of rows; the rows of each query must "
                    "be contiguous (sort the file by qid, keeping the document order within queries)"
                )
            seen.add(q)
    return np.diff(np.concatenate((starts, [qid.shape[0]]))).astype(np.int64)


def load_svmlight_ranking(
    path: str | os.PathLike,
    n_features: int | None = None,
    *,
    zero_based: bool = True,
    dtype: type = np.float64,
) -> RankingData:
    """Read an SVMlight/LETOR ranking file (``label qid:Q idx:val ...``).

    This is the layout of MSLR-WEB10K/30K, Yahoo! LTR and the LETOR sets.

    Parameters
    ----------
    path : str or path-like
        The file; ``.gz``/``.bz2`` are decompressed on the fly.
    n_features : int, optional
        Number of columns (to match another split); inferred from the file by default.
    zero_based : bool, default=True
        Feature index ``k`` goes to column ``k`` (LightGBM's convention); False shifts
        indices down by one.
    dtype : numpy dtype, default=np.float64
        Dtype of ``X``; ``np.float32`` halves memory for MSLR-WEB30K-sized files.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n, n_features)
    y : ndarray of shape (n,)
    group : ndarray of shape (n_queries,)
        Query sizes in file order.

    Raises
    ------
    ValueError
        If a query's rows are not contiguous.
    """
    X, y, qid = load_svmlight_file(
        os.fspath(path), n_features=n_features, dtype=dtype, zero_based=zero_based, query_id=True
    )
    return X, y, group_from_qid(qid)


def read_query_file(path: str | os.PathLike) -> np.ndarray:
    """Read a LightGBM ``.query`` file: one query size per line."""
    path = Path(path)
    with _open_text(path) as fh:
        sizes = [line.strip() for line in fh if line.strip()]
    try:
        group = np.array([int(s) for s in sizes], dtype=np.int64)
    except ValueError as exc:
        raise ValueError(f"query file {path} must hold one integer query size per line") from exc
    if group.shape[0] == 0 or np.any(group <= 0):
        raise ValueError(f"query file {path} must hold positive query sizes")
    return group


def _default_query_path(data_path: Path) -> Path:
    # LightGBM looks for "<data file>.query"; for a compressed data file also accept the
    # name without the compression suffix ("rank.train.gz" -> "rank.train.query").
    stems = [data_path]
    if data_path.suffix in _COMPRESSED:
        stems.append(data_path.with_suffix(""))
    candidates = [
        s.with_name(s.name + ".query" + comp) for s in stems for comp in ("", *_COMPRESSED)
    ]
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise FileNotFoundError(
        "no query file found for " + str(data_path) + "; tried " + ", ".join(map(str, candidates))
    )


def load_lightgbm_ranking(
    data_path: str | os.PathLike,
    query_path: str | os.PathLike | None = None,
    *,
    n_features: int | None = None,
    zero_based: bool = True,
    dtype: type = np.float64,
) -> RankingData:
    """Read LightGBM's ranking layout: a LibSVM data file plus a ``.query`` file of sizes.

    Parameters
    ----------
    data_path : str or path-like
        LibSVM data file (``label idx:val ...``), optionally compressed.
    query_path : str or path-like, optional
        Query-size file; by default ``<data_path>.query`` next to the data file (for
        ``x.gz`` also ``x.query``), optionally compressed.
    n_features, zero_based, dtype
        As for :func:`load_svmlight_ranking`.

    Returns
    -------
    X : scipy.sparse.csr_matrix, y : ndarray, group : ndarray

    Raises
    ------
    FileNotFoundError
        If no query file is given and none is found.
    ValueError
        If the query sizes do not add up to the number of rows.
    """
    data_path = Path(data_path)
    qpath = _default_query_path(data_path) if query_path is None else Path(query_path)
    X, y = load_svmlight_file(os.fspath(data_path), n_features=n_features, dtype=dtype, zero_based=zero_based)
    group = read_query_file(qpath)
    if int(group.sum()) != X.shape[0]:
        raise ValueError(
            f"group from {qpath} sums to {int(group.sum())} but {data_path} has {X.shape[0]} rows"
        )
    return X, y, group


def load_rank_sample() -> tuple[RankingData, RankingData]:
    """LightGBM's bundled ``examples/lambdarank`` data (201 train, 50 test queries).

    Returns
    -------
    (X_train, y_train, group_train), (X_test, y_test, group_test)
        Both ``X`` have the same number of columns.
    """
    root = importlib.resources.files("smart_lgbm").joinpath("data")
    with ExitStack() as stack:
        paths = {
            name: stack.enter_context(importlib.resources.as_file(root.joinpath(name)))
            for name in ("rank.train.gz", "rank.test.gz", "rank.train.query", "rank.test.query")
        }
        # Loaded together so that both splits get the same number of columns.
        X_train, y_train, X_test, y_test = load_svmlight_files(
            [os.fspath(paths["rank.train.gz"]), os.fspath(paths["rank.test.gz"])], zero_based=True
        )
        splits = []
        for X, y, qname in ((X_train, y_train, "rank.train.query"), (X_test, y_test, "rank.test.query")):
            group = read_query_file(paths[qname])
            if int(group.sum()) != X.shape[0]:
                raise ValueError(f"bundled {qname} does not match its data file")
            splits.append((X, y, group))
    return splits[0], splits[1]
