"""The bitmask walk's form of a coded forest (trees of at most 64 leaves).

:func:`bitmask_forest` turns a :class:`~smart_lgbm._engine.walk.codes.CodedForest` into per-tree,
per-code-column tables of leaf masks (see :mod:`smart_lgbm._engine.walk._bitmask_kernels`), which
:func:`smart_lgbm._engine.walk.add_coded_outputs` walks instead of the lockstep walk when present:
the same leaves and the same doubles, without a dependent load per tree level.  Forests with
a tree of more than 64 leaves get None and keep the lockstep walk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _bitmask_kernels as _bk


@dataclass(frozen=True, eq=False)
class BitmaskForest:
    """Per tree ``k``: tables ``tstart[k]:tstart[k + 1]``, table ``e`` over code column
    ``tcol[e]`` at ``table[256 * e:256 * e + 256]``; the tree's ``i``-th leaf from the
    left has value ``leaf_value[64 * k + i]`` and index ``leaf_index[64 * k + i]``."""

    tstart: np.ndarray
    tcol: np.ndarray
    table: np.ndarray
    leaf_value: np.ndarray
    leaf_index: np.ndarray

    def with_leaf_values(self, values: tuple[np.ndarray, ...]) -> BitmaskForest:
        """The same tables with tree ``k``'s leaf values ``values[k]`` (in leaf-index order)."""
        leaf_value = np.zeros_like(self.leaf_value)
        for k, v in enumerate(values):
            base = _bk.MAX_LEAVES * k
            count = v.shape[0]
            leaf_value[base:base + count] = v[self.leaf_index[base:base + count]]
        return BitmaskForest(self.tstart, self.tcol, self.table, leaf_value, self.leaf_index)


def bitmask_forest(info: np.ndarray, child: np.ndarray, node_value: np.ndarray, node_leaf: np.ndarray,
                   roots: np.ndarray, num_columns: int) -> BitmaskForest | None:
    """The bitmask tables of a coded forest's node arrays (those of
    :class:`~smart_lgbm._engine.walk.codes.CodedForest`) over ``num_columns`` code columns, or None
    when a tree has more than :data:`_bk.MAX_LEAVES` leaves."""
    total = info.shape[0]
    k = roots.shape[0]
    # a tree of L leaves has 2L - 1 nodes: refuse before allocating the tables (this runs
    # every iteration, so in plain Python on the K roots: numpy's diff and max of a few
    # values cost more than the kernel's work on a 31-leaf tree)
    bounds = [*roots.tolist(), total]
    if max(b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True)) > 2 * _bk.MAX_LEAVES - 1:
        return None
    # entries: at most one per internal node (K trees of 2L - 1 nodes have (total - K) / 2),
    # and one per column and tree
    entries = min((total - k) // 2, k * num_columns)
    tstart = np.empty(k + 1, np.int64)
    tcol = np.empty(entries, np.int64)
    table = np.empty(_bk.NUM_CODES * entries, np.uint64)
    leaf_value = np.zeros(_bk.MAX_LEAVES * k)
    leaf_index = np.zeros(_bk.MAX_LEAVES * k, np.int32)
    scratch = (np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int64),
               np.full(num_columns, -1, np.int64))
    if _bk.bitmask_tables(info, child, node_value, node_leaf, roots, total, tstart, tcol, table, leaf_value,
                          leaf_index, *scratch) == _bk.TOO_MANY_LEAVES:
        return None
    return BitmaskForest(tstart, tcol, table, leaf_value, leaf_index)

