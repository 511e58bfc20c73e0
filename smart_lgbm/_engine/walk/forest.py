"""Each row's output of one boosting iteration's trees, from the caller's raw features.

The engine adds every new tree's output to the tracked raw score of every training and
validation row.  :func:`add_outputs` does it with a compiled walk of the trees over the
raw features (:class:`smart_lgbm._engine.walk.raw.RawFeatures`), adding for each row and tree
exactly the double that ``lightgbm.Booster.predict(raw_score=True)`` adds for that tree,
with one double addition, so a score summed this way iteration by iteration (from
zeros) equals ``predict(raw_score=True)`` bit for bit.

Exactness rules (LightGBM 4.6, ``include/LightGBM/tree.h``, ``src/c_api.cpp``):

* The value a node tests is the one LightGBM's row function hands its predictor: dense
  and CSC input drop ``|x| <= kZeroThreshold`` (``1e-35f`` widened to double), which then
  reads 0; CSR input keeps such values (its row function does not filter).  NaN is kept.
  Missing entries of sparse input read 0.  Duplicate entries: the last one of a CSR row
  wins; in a CSC column the first (see :mod:`smart_lgbm._engine.walk._kernels` for unsorted
  columns).
* Numerical split: missing type None reads NaN as 0; Zero sends NaN and ``|x| <=
  kZeroThreshold`` the default way; NaN sends NaN the default way; otherwise left iff
  ``x <= threshold``.
* Categorical split (trees with ``num_cat > 0``): NaN, or ``static_cast<int>(x) < 0``,
  goes right; so do values beyond ``int`` range; otherwise left iff the category's bit
  is set in the node's bitset (categories past its end go right).
* A 1-leaf tree adds its only leaf value; its leaf index is 0.

Layouts and copies: the walk reads the arrays :class:`~smart_lgbm._engine.walk.raw.RawFeatures`
holds (by reference for float32/float64 numpy arrays in any layout and for CSR/CSC
matrices; see that module for the converted cases).  The walk itself copies nothing:
dense rows are read in place, blocks of rows at a time; sparse rows are first gathered,
per block, into a small buffer holding only the features the trees split on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from collections.abc import Sequence

import numba
import numpy as np

from ... import _lightgbm
from . import _kernels as _k
from .raw import RawFeatures

#: Rows per lockstep block.  Dense: 32-64 were best in the lead's prototype on 2M x 28
#: float32 (a block's rows stay in L1 while the block descends).  The sparse sizes are
#: untuned starting points: CSR's buffer is ``rows x split features`` doubles; for CSC a
#: larger block spreads each column's binary search over more rows.
DENSE_BLOCK_ROWS = 32
CSR_BLOCK_ROWS = 32
CSC_BLOCK_ROWS = 128
#: Chunks of consecutive blocks per numba thread: a few per thread keep the threads busy
#: when another process takes a core for a while (results do not depend on it).
CHUNKS_PER_THREAD = 4


@dataclass(frozen=True, eq=False)
class Forest:
    """The K trees of one boosting iteration, flattened for the kernels.

    Tree ``k``'s internal nodes and leaves are consecutive nodes from ``roots[k]`` on
    (internal nodes first, then leaves in leaf-index order).  A leaf's two children are
    itself, so every row takes exactly ``depths[k]`` steps down tree ``k``.

    Attributes
    ----------
    num_trees : int
        K: 1, or ``num_class`` for multiclass.
    feature : ndarray of int32
        Per node, the raw feature it tests (0 for leaves).
    used_features : ndarray of int32
        The distinct features the trees split on, sorted.
    slot : ndarray of int32
        Per node, the position of its feature in ``used_features`` (0 for leaves).
    threshold : ndarray of float64
    flags : ndarray of uint8
        LightGBM's ``decision_type`` bits (categorical, default left, missing type), the
        categorical bit cleared in trees without categorical splits (``num_cat == 0``:
        LightGBM then takes every split as numerical).
    left, right : ndarray of int32
        Children, as node indices.
    cat_start, cat_len : ndarray of int32
        Categorical nodes: their bitset's first word in ``cat_bits`` and its length.
    cat_bits : ndarray of uint32
    node_value : ndarray of float64
        Leaves: their output (learning rate applied); 0 for internal nodes.
    node_leaf : ndarray of int32
        Leaves: their leaf index in their tree.
    roots, depths : ndarray of int32, shape (K,)
    leaf_values : tuple of ndarray
        Each tree's leaf values, in leaf-index order.
    """

    num_trees: int
    feature: np.ndarray
    threshold: np.ndarray
    flags: np.ndarray
    left: np.ndarray
    right: np.ndarray
    cat_start: np.ndarray
    cat_len: np.ndarray
    cat_bits: np.ndarray
    node_value: np.ndarray
    node_leaf: np.ndarray
    roots: np.ndarray
    depths: np.ndarray
    leaf_values: tuple[np.ndarray, ...]

    @classmethod
    def from_tree_texts(cls, texts: Sequence[str]) -> Forest:
        """The forest of tree bodies as :func:`smart_lgbm._lightgbm.tree_bodies` gives them.

        Raises
        ------
        ValueError
            No trees, a linear tree, or malformed tree text.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of tree bodies, not one string")
        return cls.from_trees([_lightgbm.parse_tree(text) for text in texts])

    @classmethod
    def from_trees(cls, trees: Sequence[_lightgbm.TreeArrays]) -> Forest:
        """The forest of parsed trees (see :func:`smart_lgbm._lightgbm.parse_tree`)."""
        if len(trees) == 0:
            raise ValueError("texts must hold at least one tree")
        keys = ("feature", "threshold", "flags", "left", "right", "cat_start", "cat_len", "cat_bits", "node_value",
                "node_leaf")
        if len(trees) == 1:  # (the engine's every iteration outside multiclass: nothing to join)
            nodes = _flatten_tree(trees[0], 0, 0, 0)
            return cls(num_trees=1, roots=np.zeros(1, dtype=np.int32), depths=np.array([nodes["depth"]], dtype=np.int32),
                       leaf_values=(trees[0].leaf_value,), **{key: nodes[key] for key in keys})
        parts: dict[str, list[np.ndarray]] = {key: [] for key in keys}
        roots, depths = [], []
        base = cat_base = 0
        for k, tree in enumerate(trees):
            nodes = _flatten_tree(tree, k, base, cat_base)
            for key in keys:
                parts[key].append(nodes[key])
            roots.append(base)
            depths.append(nodes["depth"])
            base += 2 * tree.num_leaves - 1
            cat_base += tree.cat_threshold.size
        return cls(
            num_trees=len(trees),
            roots=np.array(roots, dtype=np.int32),
            depths=np.array(depths, dtype=np.int32),
            leaf_values=tuple(tree.leaf_value for tree in trees),
            **{key: np.concatenate(values) for key, values in parts.items()},
        )

    def with_leaf_values(self, values: Sequence[np.ndarray]) -> Forest:
        """The same trees with tree ``k``'s leaf values replaced by ``values[k]`` (float64,
        one per leaf, in leaf-index order): a leaf refit's trees without parsing their
        rewritten text again (the values are those the text holds: it is written
        round-trip exact)."""
        if len(values) != self.num_trees:
            raise ValueError(f"{self.num_trees} trees got {len(values)} arrays of leaf values")
        node_value = self.node_value.copy()
        for k, v in enumerate(values):
            count = self.leaf_values[k].shape[0]
            if v.shape != (count,):
                raise ValueError(f"tree {k} has {count} leaves, got values of shape {v.shape}")
            first = int(self.roots[k]) + count - 1  # (its internal nodes first, then its leaves in order)
            node_value[first:first + count] = v
        return dataclasses.replace(self, node_value=node_value,
                                   leaf_values=tuple(np.asarray(v, dtype=np.float64) for v in values))

    # The raw walk's feature slots, computed when it first asks: the coded walk (the
    # engine's, every iteration) does not read them.
    @cached_property
    def used_features(self) -> np.ndarray:
        """The distinct features the trees split on, sorted (int32)."""
        return np.unique(self.feature[self._internal]).astype(np.int32)

    @cached_property
    def slot(self) -> np.ndarray:
        """Per node, the position of its feature in ``used_features`` (0 for leaves), int32."""
        slot = np.zeros(self.feature.shape[0], dtype=np.int32)
        slot[self._internal] = np.searchsorted(self.used_features, self.feature[self._internal])
        return slot

    @property
    def _internal(self) -> np.ndarray:
        return self.left != np.arange(self.left.shape[0])

    @property
    def kernel_arrays(self) -> tuple[np.ndarray, ...]:
        """The node arrays the kernels take, as one tuple (see ``_kernels._walk_block``)."""
        return (self.threshold, self.flags, self.left, self.right, self.cat_start, self.cat_len, self.cat_bits,
                self.node_value, self.node_leaf, self.roots, self.depths)

    @property
    def max_feature(self) -> int:
        """The largest feature index split on (-1 when no tree splits)."""
        return int(self.used_features[-1]) if self.used_features.size else -1


def _flatten_tree(tree: _lightgbm.TreeArrays, k: int, base: int, cat_base: int) -> dict:
    """One tree's nodes in the forest's layout (node indices offset by ``base``), checked:
    the kernels index without bounds checks, so a malformed tree must not reach them."""
    m = tree.left_child.shape[0]
    n = 2 * m + 1
    arrays = (np.zeros(n, np.int32), np.zeros(n), np.zeros(n, np.uint8), np.empty(n, np.int32),
              np.empty(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n), np.zeros(n, np.int32))
    scratch = (np.zeros(m, np.bool_), np.zeros(m + 1, np.bool_), np.zeros(m, np.int64), np.empty(m, np.int64))
    depth = _k.flatten_tree(tree.split_feature, tree.threshold, tree.decision_type, tree.left_child, tree.right_child,
                            tree.leaf_value, tree.num_cat, tree.cat_boundaries, base, cat_base, *arrays, *scratch)
    if depth == _k.NEGATIVE_FEATURE:
        raise ValueError(f"tree {k}: negative split_feature")
    if depth == _k.BAD_BITSET:
        raise ValueError(f"tree {k}: a categorical split refers to a bitset outside 0..{tree.num_cat - 1}")
    if depth < 0:
        raise ValueError(f"tree {k}: left_child/right_child do not form a binary tree with {tree.num_leaves} leaves")
    nodes = dict(zip(("feature", "threshold", "flags", "left", "right", "cat_start", "cat_len", "node_value",
                      "node_leaf"), arrays, strict=True))
    nodes["cat_bits"] = tree.cat_threshold
    nodes["depth"] = depth
    return nodes


def add_outputs(features: RawFeatures, forest: Forest, out: np.ndarray,
                leaves: np.ndarray | None = None) -> None:
    """Add each row's output of each tree of ``forest`` to ``out``; optionally its leaf.

    For every row ``i`` and tree ``k``, ``out[i, k] += v`` with ``v`` bit for bit what
    ``Booster.predict(raw_score=True)`` adds for that tree at that row (one double
    addition).  Parallel over blocks of rows on numba's threads (set their number with
    ``numba.set_num_threads``); the result does not depend on it.

    Parameters
    ----------
    features : RawFeatures
        ``n`` rows with at least ``forest.max_feature + 1`` features.
    forest : Forest
        The ``K`` trees of one iteration.
    out : ndarray of shape (n, K), float64, C-contiguous
        Updated in place.
    leaves : ndarray of shape (n, K), int32, C-contiguous, optional
        If given, receives each row's leaf index in each tree (what
        ``predict(pred_leaf=True)`` returns).

    Raises
    ------
    TypeError
        Wrong types or dtypes of the arguments.
    ValueError
        Shapes that do not match, or a forest splitting on a feature ``features`` lacks.
    """
    if not isinstance(features, RawFeatures):
        raise TypeError(f"features must be a RawFeatures, got {type(features).__name__}")
    if not isinstance(forest, Forest):
        raise TypeError(f"forest must be a Forest, got {type(forest).__name__}")
    shape = (features.num_rows, forest.num_trees)
    _check_output("out", out, np.float64, shape)
    if leaves is not None:
        _check_output("leaves", leaves, np.int32, shape)
    if forest.max_feature >= features.num_features:
        raise ValueError(f"the trees split on feature {forest.max_feature}, but features has only "
                         f"{features.num_features} columns")
    want_leaves = leaves is not None
    if leaves is None:
        leaves = np.empty((0, forest.num_trees), dtype=np.int32)
    if features.num_rows == 0:
        return
    chunks = CHUNKS_PER_THREAD * numba.get_num_threads()
    arrays = forest.kernel_arrays
    if features.layout == "dense":
        _k.walk_dense(features.dense, DENSE_BLOCK_ROWS, chunks, forest.feature, arrays, out, leaves, want_leaves)
        return
    is_csc = features.layout == "csc"
    # CSR rows are scattered into the buffer by feature: map every feature to its column
    slot_of_feature = np.full(0 if is_csc else features.num_features, -1, dtype=np.int32)
    if not is_csc:
        slot_of_feature[forest.used_features] = np.arange(forest.used_features.size, dtype=np.int32)
    _k.walk_sparse(is_csc, features.num_rows, features.indptr, features.indices, features.values,
                   features.search if is_csc else features.indices, slot_of_feature, forest.used_features,
                   CSC_BLOCK_ROWS if is_csc else CSR_BLOCK_ROWS, chunks, forest.slot, arrays, out, leaves,
                   want_leaves)


def _check_output(name: str, array: np.ndarray, dtype: type, shape: tuple[int, int]) -> None:
    if not isinstance(array, np.ndarray) or array.dtype != dtype:
        got = array.dtype if isinstance(array, np.ndarray) else type(array).__name__
        raise TypeError(f"{name} must be a numpy array of {np.dtype(dtype).name}, got {got}")
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape} (rows, trees), got {array.shape}")
    if not array.flags.c_contiguous or not array.flags.writeable:
        raise ValueError(f"{name} must be C-contiguous and writeable")
