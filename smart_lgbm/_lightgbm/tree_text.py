"""One tree body of a model text read into arrays, as LightGBM's ``Tree(const char*)`` reads it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TreeArrays:
    """One tree of a LightGBM model text, as LightGBM's ``Tree(const char*)`` reads it.

    Node ``i`` (``0 <= i < num_leaves - 1``) is internal; a child ``c >= 0`` is internal
    node ``c`` and ``c < 0`` is leaf ``~c`` (LightGBM's encoding).  A 1-leaf tree has
    empty node arrays.

    Attributes
    ----------
    num_leaves, num_cat : int
    split_feature : ndarray of int32, shape (num_leaves - 1,)
        The raw feature index each internal node splits on.
    threshold : ndarray of float64, shape (num_leaves - 1,)
        Numerical nodes: go left when ``x <= threshold``.  Categorical nodes: the index
        of the node's bitset in ``cat_boundaries`` (``static_cast<int>`` of it).
    decision_type : ndarray of int8, shape (num_leaves - 1,)
        Bit 0 categorical, bit 1 default left, bits 2-3 missing type (0 None, 1 Zero,
        2 NaN); zeros when the text has no ``decision_type`` line, as LightGBM reads it.
    left_child, right_child : ndarray of int32, shape (num_leaves - 1,)
    leaf_value : ndarray of float64, shape (num_leaves,)
    cat_boundaries : ndarray of int32, shape (num_cat + 1,) (empty when num_cat is 0)
    cat_threshold : ndarray of uint32, shape (cat_boundaries[-1],)
        The concatenated category bitsets (bit ``c`` of a bitset: category ``c`` goes left).
    """

    num_leaves: int
    num_cat: int
    split_feature: np.ndarray
    threshold: np.ndarray
    decision_type: np.ndarray
    left_child: np.ndarray
    right_child: np.ndarray
    leaf_value: np.ndarray
    cat_boundaries: np.ndarray
    cat_threshold: np.ndarray


def _tree_fields(text: str) -> dict[str, str]:
    # LightGBM reads ``key=value`` lines up to the first empty line.
    fields = {}
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line:
            break
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"tree text: line {line[:40]!r} is not key=value")
        fields[key] = value
    return fields


#: The integer fields' bounds (``np.iinfo`` costs a microsecond per call, and a tree has five
#: integer fields).
_INT_BOUNDS = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in (np.int8, np.int32, np.uint32)}


def _tree_array(fields: dict[str, str], key: str, dtype: Any, size: int,
                default: np.ndarray | None = None) -> np.ndarray:
    if key not in fields:
        if default is not None:
            return default
        raise ValueError(f"tree text has no {key}= line")
    text = fields[key]
    if np.dtype(dtype).kind == "f":
        raw = text.split(" ") if text else []
        if len(raw) != size:
            raise ValueError(f"tree text: {key} has {len(raw)} values, expected {size}")
        # Python's float() rounds correctly, as LightGBM's parser does: the doubles
        # LightGBM wrote (shortest round-trip repr) come back bit for bit.
        return np.array([float(v) for v in raw], dtype=dtype)
    # Integers: numpy's text reader, in C (the engine parses every iteration's trees, and
    # a Python int() per value is most of that time); int64 saturates, so an out-of-range
    # value fails the bounds check below instead of wrapping.
    try:
        values = np.fromstring(text, dtype=np.int64, sep=" ")  # (text mode: not deprecated)
    except ValueError:  # a value that is not an integer
        raise ValueError(f"tree text: {key} has a value that is not an integer") from None
    if values.shape[0] != size or (size and text.count(" ") != size - 1):
        raise ValueError(f"tree text: {key} has {len(text.split(' ')) if text else 0} values, expected {size}")
    low, high = _INT_BOUNDS[np.dtype(dtype)]
    if size and (values.min() < low or values.max() > high):
        raise ValueError(f"tree text: {key} has values outside the range of {np.dtype(dtype).name}")
    return values.astype(dtype)


#: A numerical tree's (empty) categorical arrays, shared by the trees the fast path reads (nothing can
#: be written into an empty array; left writeable, as numba compiles read-only arrays apart)
_NO_CATEGORIES = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint32))
_plain: Any = None  # (the scan kernel, its key table and lengths), loaded on first use


def _parse_plain(text: str) -> TreeArrays | None:
    """:func:`parse_tree` of a body in the exact form LightGBM writes a numerical tree of at
    least two leaves (:mod:`._tree_text_kernels`), or None for any other body.

    One compiled scan reads the integer fields and checks the decimal ones, which numpy's
    reader then converts: ``np.fromstring`` rounds each value correctly, so it gives the
    double ``float()`` gives (``tests/test_lightgbm_internals.py`` pins that), and on such
    bodies the arrays equal :func:`_parse_general`'s.
    """
    global _plain
    if _plain is None:
        from . import _tree_text_kernels as kernels  # numba loads on first use

        _plain = (kernels.scan_plain_tree, *kernels.key_table(), kernels.INFO_SIZE, kernels.THRESHOLD,
                  kernels.LEAF_VALUE)
    scan, keys, key_lengths, info_size, threshold_key, leaf_value_key = _plain
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        return None
    buf = np.frombuffer(raw, dtype=np.uint8)
    ints = np.empty(buf.shape[0] // 2 + 4, dtype=np.int64)
    info = np.empty(info_size, dtype=np.int64)
    if not scan(buf, keys, key_lengths, ints, info):
        return None
    num_leaves = int(info[0])
    m = num_leaves - 1
    # (spans of ASCII text: byte offsets are character offsets)
    threshold = np.fromstring(text[info[1 + 2 * threshold_key]:info[2 + 2 * threshold_key]], dtype=np.float64,
                              sep=" ")
    leaf_value = np.fromstring(text[info[1 + 2 * leaf_value_key]:info[2 + 2 * leaf_value_key]], dtype=np.float64,
                               sep=" ")
    if threshold.shape[0] != m or leaf_value.shape[0] != num_leaves:  # (the scan checked the counts)
        return None
    split_feature, left_child, right_child = (ints[s * m:(s + 1) * m].astype(np.int32) for s in (0, 2, 3))
    return TreeArrays(num_leaves, 0, split_feature, threshold, ints[m:2 * m].astype(np.int8), left_child,
                      right_child, leaf_value, *_NO_CATEGORIES)


def parse_tree(text: str) -> TreeArrays:
    """Read one tree body (as :func:`tree_bodies` returns it) into numpy arrays.

    Mirrors ``Tree::Tree(const char*)`` of LightGBM 4.6: ``num_leaves``, ``num_cat`` and
    ``leaf_value`` are required; a 1-leaf tree needs nothing else; ``decision_type``
    defaults to all zeros; ``cat_boundaries`` and ``cat_threshold`` are read when
    ``num_cat > 0``.

    Raises
    ------
    ValueError
        For a linear tree (``is_linear=1``: its leaves are linear models of the
        features, which the walk does not evaluate) or malformed text.
    """
    tree = _parse_plain(text)
    return tree if tree is not None else _parse_general(text)


def _parse_general(text: str) -> TreeArrays:
    """:func:`parse_tree` for any body: field by field, with every check and its message."""
    fields = _tree_fields(text)
    for key in ("num_leaves", "num_cat"):
        if key not in fields:
            raise ValueError(f"tree text has no {key}= line")
    num_leaves, num_cat = int(fields["num_leaves"]), int(fields["num_cat"])
    if num_leaves < 1 or num_cat < 0:
        raise ValueError(f"tree text: num_leaves={num_leaves}, num_cat={num_cat}")
    if int(fields.get("is_linear", "0")) != 0:
        raise ValueError("linear trees (is_linear=1, from linear_tree=true) are not supported: "
                         "their leaves are linear models, not constants")
    leaf_value = _tree_array(fields, "leaf_value", np.float64, num_leaves)
    m = num_leaves - 1
    if m == 0:
        empty_i = np.zeros(0, dtype=np.int32)
        return TreeArrays(1, num_cat, empty_i, np.zeros(0), np.zeros(0, dtype=np.int8), empty_i,
                          empty_i, leaf_value, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint32))
    cat_boundaries = np.zeros(0, dtype=np.int32)
    cat_threshold = np.zeros(0, dtype=np.uint32)
    if num_cat > 0:
        cat_boundaries = _tree_array(fields, "cat_boundaries", np.int32, num_cat + 1)
        if cat_boundaries[0] != 0 or np.any(np.diff(cat_boundaries) < 0):
            raise ValueError("tree text: cat_boundaries must start at 0 and never decrease")
        cat_threshold = _tree_array(fields, "cat_threshold", np.uint32, int(cat_boundaries[-1]))
    return TreeArrays(
        num_leaves=num_leaves,
        num_cat=num_cat,
        split_feature=_tree_array(fields, "split_feature", np.int32, m),
        threshold=_tree_array(fields, "threshold", np.float64, m),
        decision_type=_tree_array(fields, "decision_type", np.int8, m, np.zeros(m, dtype=np.int8)),
        left_child=_tree_array(fields, "left_child", np.int32, m),
        right_child=_tree_array(fields, "right_child", np.int32, m),
        leaf_value=leaf_value,
        cat_boundaries=cat_boundaries,
        cat_threshold=cat_threshold,
    )
