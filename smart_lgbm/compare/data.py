"""Data of a config's experiment: read or generate, split, cap, and wrap as LightGBM Datasets.

Every source yields a training and a validation :class:`Split` of ``(X, y, group)``
(``group`` = query sizes for ranking, None otherwise).  Without a validation file the
training data are split: by whole queries for ranking, by random rows otherwise, seeded by
the data spec's ``seed``.  ``max_rows`` keeps the first rows (whole queries) of each split,
for quick runs on a subsample.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np
import scipy.sparse as sp

from .config import ConfigError, DataSpec, error_text

Matrix = Any  # numpy array or scipy CSR matrix


@dataclass(frozen=True)
class Split:
    """One side of an experiment's data: features, labels and (for ranking) query sizes."""

    X: Matrix
    y: np.ndarray
    group: np.ndarray | None = None

    @property
    def num_rows(self) -> int:
        return int(self.X.shape[0])


@dataclass(frozen=True)
class ExperimentData:
    """Training and validation splits plus a one-line description of where they came from,
    and the categorical columns (LightGBM's ``categorical_feature``; empty: LightGBM's
    ``"auto"``, pandas ``category`` columns)."""

    train: Split
    valid: Split
    description: str
    categorical: tuple[int, ...] = ()

    @property
    def is_ranking(self) -> bool:
        return self.train.group is not None


def _head(split: Split, max_rows: int | None) -> Split:
    """The first ``max_rows`` rows of ``split``; for ranking, the whole queries that fit (at least one)."""
    if max_rows is None or split.num_rows <= max_rows:
        return split
    if split.group is None:
        return Split(split.X[:max_rows], split.y[:max_rows], None)
    ends = np.cumsum(split.group)
    n_queries = max(1, int(np.searchsorted(ends, max_rows, side="right")))
    rows = int(ends[n_queries - 1])
    return Split(split.X[:rows], split.y[:rows], split.group[:n_queries])


def _split(whole: Split, test_size: float, seed: int) -> tuple[Split, Split]:
    """Seeded random split: by whole queries for ranking, by rows otherwise (row order kept)."""
    from ..datasets.synthetic_ranking import train_test_split_by_query

    if whole.group is not None:
        (Xa, ya, ga), (Xb, yb, gb) = train_test_split_by_query(whole.X, whole.y, whole.group, test_size, seed)
        return Split(Xa, ya, ga), Split(Xb, yb, gb)
    n = whole.num_rows
    n_test = min(max(1, int(round(test_size * n))), n - 1)
    test = np.zeros(n, dtype=bool)
    test[np.random.default_rng(seed).choice(n, n_test, replace=False)] = True
    return Split(whole.X[~test], whole.y[~test], None), Split(whole.X[test], whole.y[test], None)


def _same_width(a: Matrix, b: Matrix) -> tuple[Matrix, Matrix]:
    """Pad the narrower of two sparse matrices with empty columns (LibSVM files infer widths)."""
    width = max(a.shape[1], b.shape[1])

    def pad(m: Matrix) -> Matrix:
        if m.shape[1] == width:
            return m
        m = m.tocsr()
        return sp.csr_matrix((m.data, m.indices, m.indptr), shape=(m.shape[0], width))

    return pad(a), pad(b)


def _bundled(spec: DataSpec) -> tuple[Split, Split]:
    from ..datasets import bundled, ranking

    if spec.name == "a9a":
        (X, y), (Xv, yv) = bundled.load_a9a()
        return Split(X, y), Split(Xv, yv)
    if spec.name == "higgs_sample":
        (X, y), (Xv, yv) = bundled.load_higgs_sample()
        return Split(X, y), Split(Xv, yv)
    if spec.name == "digits":
        (X, y), (Xv, yv) = bundled.load_digits_split()
        return Split(X, y), Split(Xv, yv)
    (X, y, g), (Xv, yv, gv) = ranking.load_rank_sample()
    return Split(X, y, g), Split(Xv, yv, gv)


def _synthetic(spec: DataSpec) -> tuple[Split, Split]:
    # The config schema requires both for synthetic data (DataSpec validates them).
    assert spec.n_rows is not None and spec.n_features is not None
    if spec.generator in ("dense_binary", "dense_multiclass", "dense_regression"):
        from ..datasets import synthetic

        if spec.generator == "dense_binary":
            X, y = synthetic.make_dense_binary(spec.n_rows, spec.n_features, spec.seed)
        elif spec.generator == "dense_regression":
            X, y = synthetic.make_dense_regression(spec.n_rows, spec.n_features, spec.seed)
        else:
            assert spec.n_classes is not None  # the config gives dense_multiclass its classes
            X, y = synthetic.make_dense_multiclass(spec.n_rows, spec.n_features, spec.n_classes, spec.seed)
        # Rows are i.i.d., so the last test_size share is a random split already (and no copy).
        cut = spec.n_rows - min(max(1, int(round(spec.test_size * spec.n_rows))), spec.n_rows - 1)
        return Split(X[:cut], y[:cut]), Split(X[cut:], y[cut:])
    if spec.generator == "mixed_categorical":
        from ..datasets.synthetic_categorical import make_mixed_categorical

        X, y, _ = make_mixed_categorical(spec.n_rows, spec.n_features, seed=spec.seed)
        cut = spec.n_rows - min(max(1, int(round(spec.test_size * spec.n_rows))), spec.n_rows - 1)
        return Split(X[:cut], y[:cut]), Split(X[cut:], y[cut:])
    if spec.generator == "yahoo_like":  # sparse: CSR all the way to lightgbm.Dataset, never densified
        from ..datasets.synthetic_sparse_ranking import make_yahoo_like_split as make_split
    else:
        from ..datasets.synthetic_ranking import make_mslr_like_split as make_split

    (X, y, g), (Xv, yv, gv) = make_split(spec.n_rows, spec.n_features, spec.seed, spec.test_size)
    return Split(X, y.astype(np.float64), g), Split(Xv, yv.astype(np.float64), gv)


def _read_svmlight(path: Any) -> Split:
    from sklearn.datasets import load_svmlight_file

    from ..datasets.ranking import group_from_qid

    X, y, qid = load_svmlight_file(str(path), zero_based=True, query_id=True)
    # Files without "qid:" give qid 0 everywhere: plain classification/regression data.
    group = None if not np.any(qid) else group_from_qid(qid)
    return Split(X.tocsr(), y, group)


def _read_lightgbm(path: Any, query: Any) -> Split:
    from ..datasets.ranking import load_lightgbm_ranking

    X, y, g = load_lightgbm_ranking(path, query)
    return Split(X.tocsr(), y, g)


def _read_frame(spec: DataSpec, path: Any, where: str) -> Any:
    """A CSV or Parquet file as a pandas DataFrame, its label, group and feature columns checked."""
    import pandas as pd

    frame = pd.read_parquet(path) if spec.source == "parquet" else pd.read_csv(path)
    for column_key, column in (("label", spec.label), ("group", spec.group)):
        if column is not None and column not in frame.columns:
            raise ConfigError(f"{where}: no column {column!r} named by key {column_key!r}; columns: {', '.join(map(str, frame.columns))}")
    missing = [c for c in _feature_columns(spec, frame) if c not in frame.columns]
    if missing:
        raise ConfigError(f"{where}: key 'features' names missing columns {missing}")
    missing = [c for c in spec.categorical or () if c not in frame.columns]
    if missing:
        raise ConfigError(f"{where}: key 'categorical' names missing columns {missing}")
    return frame


def _feature_columns(spec: DataSpec, frame: Any) -> list[str]:
    if spec.features:
        return list(spec.features)
    return [c for c in frame.columns if c not in (spec.label, spec.group)]


def _categorical_columns(spec: DataSpec, frame: Any, features: list[str]) -> list[str]:
    """The declared categorical columns, plus every feature column that is not numeric
    (strings, pandas ``category``): LightGBM cannot read those as numbers, and a user who
    keeps text in a feature column means it as categories."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    declared = set(spec.categorical or ())
    return [c for c in features
            if c in declared or not (is_numeric_dtype(frame[c]) or is_bool_dtype(frame[c]))]


def _category_codes(train: Any, others: list[Any]) -> list[np.ndarray]:
    """Integer codes (as float64) of a categorical column: the categories are the training
    column's distinct values, sorted; a value the training data lack and a missing value are
    NaN, which LightGBM's categorical splits send with the missing values."""
    import pandas as pd

    categories = pd.Index(pd.unique(train.dropna()))
    try:
        categories = categories.sort_values()
    except TypeError:  # mixed types (e.g. numbers and text in one column): first-seen order
        pass
    out = []
    for column in [train, *others]:
        codes = categories.get_indexer(np.asarray(column.astype(object))).astype(np.float64)
        codes[codes < 0] = np.nan
        out.append(codes)
    return out


def _table_splits(spec: DataSpec, train_frame: Any, valid_frame: Any | None,
                  wheres: tuple[str, str]) -> tuple[Split, Split | None, tuple[int, ...]]:
    """Features, labels and query sizes of CSV/Parquet frames, categorical columns as codes
    shared by both (the training frame's categories), and those columns' feature indices.
    ``wheres``: how messages name the training file and the validation file."""
    from ..datasets.ranking import group_from_qid

    features = _feature_columns(spec, train_frame)
    categorical = _categorical_columns(spec, train_frame, features)
    numeric = [c for c in features if c not in categorical]
    frames = [(train_frame, wheres[0])] if valid_frame is None else [(train_frame, wheres[0]), (valid_frame, wheres[1])]
    if valid_frame is not None:
        missing = [c for c in features if c not in valid_frame.columns]
        if missing:
            raise ConfigError(f"{wheres[1]}: the validation file lacks the training file's feature columns {missing}")
    matrices = []
    for frame, where in frames:
        try:
            block = frame[numeric].to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: a numeric feature column holds values that are not numbers "
                              f"({error_text(exc)}); list the column in key 'categorical'") from None
        X = np.empty((len(frame), len(features)), dtype=np.float64)
        X[:, [features.index(c) for c in numeric]] = block
        matrices.append(X)
    for column in categorical:
        j = features.index(column)
        for X, codes in zip(matrices, _category_codes(train_frame[column], [f[column] for f, _ in frames[1:]]),
                            strict=True):
            X[:, j] = codes
    splits = []
    for (frame, where), X in zip(frames, matrices, strict=True):
        try:
            y = frame[spec.label].to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: label column {spec.label!r} holds values that are not numbers "
                              f"({error_text(exc)})") from None
        try:
            group = group_from_qid(frame[spec.group].to_numpy()) if spec.group else None
        except ValueError as exc:  # a query's rows not contiguous
            raise ConfigError(f"{where}: group column {spec.group!r}: {error_text(exc)}") from None
        splits.append(Split(X, y, group))
    return splits[0], (splits[1] if len(splits) > 1 else None), tuple(features.index(c) for c in categorical)


def _files(spec: DataSpec, where: str) -> tuple[Split, Split, tuple[int, ...]]:
    def file_where(key: str, path: Any) -> str:
        return f"{where} key {key!r} ({path})"

    def read(path: Any, key: str, reader: Any) -> Any:
        named = file_where(key, path)
        try:
            return reader(named)
        except ConfigError:
            raise
        except (ValueError, OSError, EOFError) as exc:
            # Malformed lines, a missing or mismatched .query file, a non-contiguous qid,
            # a broken archive: one line naming the file instead of a reader's traceback.
            raise ConfigError(f"{named}: cannot read it as {spec.source} data: {error_text(exc)}") from None

    def check(split: Split, key: str, path: Any) -> None:
        if split.num_rows == 0 or split.X.shape[1] == 0:
            raise ConfigError(f"{where} key {key!r} ({path}): the file holds {split.num_rows} rows and "
                              f"{split.X.shape[1]} features; it needs at least one of each")

    categorical: tuple[int, ...] = ()
    valid: Split | None
    if spec.source in ("csv", "parquet"):
        train_frame = read(spec.train, "train", lambda w: _read_frame(spec, spec.train, w))
        valid_frame = None if spec.valid is None else read(spec.valid, "valid",
                                                           lambda w: _read_frame(spec, spec.valid, w))
        # (each frame's errors name its own file)
        train, valid, categorical = _table_splits(spec, train_frame, valid_frame,
                                                  (file_where("train", spec.train), file_where("valid", spec.valid)))
    else:
        def file(path: Any, query: Any) -> Split:
            return _read_svmlight(path) if spec.source == "svmlight" else _read_lightgbm(path, query)

        train = read(spec.train, "train", lambda w: file(spec.train, spec.train_query))
        valid = None if spec.valid is None else read(spec.valid, "valid", lambda w: file(spec.valid, spec.valid_query))
    check(train, "train", spec.train)
    if valid is None:
        return (*_split(train, spec.test_size, spec.seed), categorical)
    check(valid, "valid", spec.valid)
    if (train.group is None) != (valid.group is None):
        raise ConfigError(f"{where} key 'valid': one file has query groups and the other has none")
    if sp.issparse(train.X) and sp.issparse(valid.X):
        Xa, Xb = _same_width(train.X, valid.X)
        train, valid = Split(Xa, train.y, train.group), Split(Xb, valid.y, valid.group)
    elif train.X.shape[1] != valid.X.shape[1]:
        raise ConfigError(f"{where} keys 'train' and 'valid' have {train.X.shape[1]} and {valid.X.shape[1]} features")
    return train, valid, categorical


def load_data(spec: DataSpec, where: str = "[data]") -> ExperimentData:
    """Read or generate the data of an experiment.

    Parameters
    ----------
    spec : DataSpec
        A validated data spec (see :mod:`smart_lgbm.compare.config`).
    where : str, default="[data]"
        How messages refer to the data table, e.g. ``"[experiments.web] data"``.

    Returns
    -------
    ExperimentData
        Training and validation splits, capped to ``spec.max_rows`` rows each.

    Raises
    ------
    ConfigError
        If a file cannot be read (malformed, empty, a missing or mismatched query file,
        non-contiguous query ids) or too few rows or queries are left to split; the
        message names the key and the file.
    """
    categorical: tuple[int, ...] = ()
    try:
        if spec.source == "bundled":
            train, valid = _bundled(spec)
        elif spec.source == "synthetic":
            train, valid = _synthetic(spec)
        else:
            train, valid, categorical = _files(spec, where)
    except ConfigError:
        raise
    except ValueError as exc:  # e.g. one query or one row cannot be split into train and validation
        raise ConfigError(f"{where}: {error_text(exc)}") from None
    train, valid = _head(train, spec.max_rows), _head(valid, spec.max_rows)
    desc = f"{spec.describe()}: {train.num_rows} train / {valid.num_rows} valid rows, {train.X.shape[1]} features"
    if train.group is not None and valid.group is not None:
        desc += f", {len(train.group)} / {len(valid.group)} queries"
    if spec.generator == "mixed_categorical":
        from ..datasets.synthetic_categorical import DEFAULT_LEVELS

        assert spec.n_features is not None
        categorical = tuple(range(spec.n_features, spec.n_features + len(DEFAULT_LEVELS)))
    if categorical:
        desc += f" ({len(categorical)} of them categorical)"
    return ExperimentData(train, valid, desc, categorical)


def fingerprint(data: ExperimentData) -> str:
    """A digest of the rows themselves (features, labels, query sizes of both splits).

    Records store it: a folder's records are merged with new runs only when these are
    equal, so that a data file replaced at the same path (the config table unchanged) is
    told apart.  One pass over the data, before any training.
    """
    digest = hashlib.blake2b(digest_size=16)

    def add(name: str, values: Any) -> None:
        if values is None:
            digest.update(f"{name}:none;".encode())
            return
        if sp.issparse(values):
            csr = values.tocsr()
            digest.update(f"{name}:csr{csr.shape}:{csr.dtype};".encode())
            for part in (csr.indptr, csr.indices, csr.data):
                add(f"{name}.part", np.asarray(part))
            return
        arr = np.ascontiguousarray(values)
        digest.update(f"{name}:{arr.shape}:{arr.dtype.str};".encode())
        if arr.dtype.hasobject:
            digest.update(repr(arr.tolist()).encode())
        else:
            digest.update(arr.reshape(-1).view(np.uint8).data)

    for side, split in (("train", data.train), ("valid", data.valid)):
        add(f"{side}.X", split.X)
        add(f"{side}.y", split.y)
        add(f"{side}.group", split.group)
    return digest.hexdigest()


def head(data: ExperimentData, max_rows: int) -> ExperimentData:
    """The first ``max_rows`` rows (whole queries) of both splits, e.g. for a warm-up run."""
    return ExperimentData(_head(data.train, max_rows), _head(data.valid, max_rows), data.description,
                          data.categorical)


def make_datasets(data: ExperimentData) -> tuple[lgb.Dataset, lgb.Dataset]:
    """Fresh, unconstructed LightGBM Datasets for one run (training, validation).

    A fresh pair per run keeps runs independent: no method can see another's binning or
    init scores.  Binning happens inside ``lightgbm.train`` / ``smart_lgbm.train`` with the
    run's parameters, before the first iteration, so it is not part of the per-iteration times.
    """
    train = lgb.Dataset(data.train.X, data.train.y, group=data.train.group,
                        categorical_feature=list(data.categorical) if data.categorical else "auto")
    valid = lgb.Dataset(data.valid.X, data.valid.y, group=data.valid.group, reference=train)
    return train, valid
