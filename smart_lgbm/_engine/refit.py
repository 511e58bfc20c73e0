"""Leaf values from every training row for trees grown on a sample (``refit_leaves``).

A sampler with :attr:`~smart_lgbm.samplers.Sampler.refit_leaves` lets the sample choose
each tree's splits only: once LightGBM has grown the tree on the sampled rows, every
training row is sent to its leaf and each leaf gets LightGBM's Newton output from the sums
of all its rows' gradients,

    v_j = -ThresholdL1(G_j, lambda_l1) / (H_j + lambda_l2),   clipped to max_delta_step,

times the tree's shrinkage (the learning rate), instead of the output of the sample's
reweighted sums.  The importance-weighted estimate of a leaf's gradient sum has a variance
that does not shrink as the model converges (the noise floor the adaptive rate fights,
:mod:`smart_lgbm.samplers.adaptive`); with the sums of all rows each leaf's step is exact
and only the choice of splits is sampled.  The price: one more pass over the training rows
per sampled iteration, the walk to the leaves with the trees as fitted, which also forms
the sums (:func:`walk_leaf_sums`, coded rows and trees of at most 64 leaves; else the walk,
then :func:`leaf_sums` of its leaves); the scores' update then reads the leaves instead of
walking again (on the fused path inside the gradient sweep,
:meth:`smart_lgbm._engine.sweep.GradientSweep.gradients`; else :func:`add_by_leaf`).

Every sum is over fixed blocks of rows added in block order (:mod:`smart_lgbm._engine._refit_kernels`),
and on several machines the machines' sums are added in rank order, so the values, and the
model, are the same at any number of threads.  The tree's ``leaf_value`` line is rewritten
with the new values (round-trip exact); its internal nodes' values and the sample's counts
and hessian sums (``leaf_count``, ``leaf_weight``, which LightGBM's SHAP values use as
covers) are kept.

Not with ``path_smooth`` (a smoothed output depends on the parent's output fitted on the
sample) or monotone constraints (new values could break them): refused when the run starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _lightgbm
from .._numba.kernel_constants import BLOCK
from .update_plan import TRAIN, UpdatePlan
from .walk import BinCodes, CodeBook, CodedForest, Forest, RawFeatures, add_coded_outputs, add_outputs

if TYPE_CHECKING:
    from .walk.bitmask import BitmaskForest

__all__ = ["LeafRefit", "LeafRule", "RefitTrees", "add_by_leaf", "leaf_sums", "refit_values", "sum_machines",
           "value_table", "walk_leaf_sums"]

#: LightGBM's kZeroThreshold: a leaf value this close to zero is written as 0 (MaybeRoundToZero).
_ZERO = 1e-35


def _kernels() -> Any:
    from . import _refit_kernels  # numba loads on first use

    return _refit_kernels


@dataclass(frozen=True)
class LeafRule:
    """LightGBM's leaf output from a leaf's sums (``CalculateSplittedLeafOutput`` without
    path smoothing or constraints), with the run's ``lambda_l1``, ``lambda_l2`` and
    ``max_delta_step`` (:class:`smart_lgbm._engine.config.RunConfig`)."""

    lambda_l1: float = 0.0
    lambda_l2: float = 0.0
    max_delta_step: float = 0.0

    def outputs(self, grad_sums: np.ndarray, hess_sums: np.ndarray) -> np.ndarray:
        """Each leaf's output (before shrinkage) for its sums of ``g`` and ``h``; 0 for a
        leaf without hessian (no row reaches it, or only rows of zero hessian)."""
        g = grad_sums
        if self.lambda_l1 > 0.0:
            g = np.sign(g) * np.maximum(np.abs(g) - self.lambda_l1, 0.0)
        denominator = hess_sums + self.lambda_l2
        out = np.divide(-g, denominator, out=np.zeros_like(g), where=denominator > 0.0)
        if self.max_delta_step > 0.0:
            out = np.clip(out, -self.max_delta_step, self.max_delta_step)
        return out


def leaf_sums(leaves: np.ndarray, grad: np.ndarray, hess: np.ndarray,
              widths: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each tree's leaf sums ``(G, H)`` of its column of ``grad``/``hess`` over the rows in
    each leaf.

    ``leaves``: int32 ``(n, K)``; ``grad``, ``hess``: float32 ``(n, K)``; every leaf of
    tree ``k`` below ``widths[k]`` (its number of leaves), and ``G``, ``H`` of that length.
    The same doubles at any number of threads (blocks added in block order).
    """
    _check_rows(leaves, grad, hess, leaves.shape[0], len(widths))
    tables = _tables(leaves.shape[0], widths)
    _kernels().leaf_sums(leaves, grad, hess, tables)
    return _block_order_sums(tables, widths)


def walk_leaf_sums(codes: BinCodes, forest: BitmaskForest, grad: np.ndarray, hess: np.ndarray, leaves: np.ndarray,
                   widths: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`leaf_sums` of the leaves the bitmask walk of ``forest`` over ``codes`` reaches,
    written into ``leaves`` (int32 ``(n, K)``) in the same pass: the same leaves as the
    walk's and the same doubles as :func:`leaf_sums` of them."""
    _check_rows(leaves, grad, hess, codes.num_rows, len(widths))
    if forest.tstart.shape[0] != len(widths) + 1:
        raise ValueError(f"a forest of {forest.tstart.shape[0] - 1} trees got {len(widths)} widths")
    tables = _tables(codes.num_rows, widths)
    _kernels().walk_leaf_sums(codes.codes, forest.tstart, forest.tcol, forest.table, forest.leaf_index, grad, hess,
                              leaves, tables)
    return _block_order_sums(tables, widths)


def _check_rows(leaves: np.ndarray, grad: np.ndarray, hess: np.ndarray, n: int, k: int) -> None:
    """The sum kernels index without bounds checks: refuse arrays they would overrun."""
    for name, array, dtype in (("leaves", leaves, np.int32), ("grad", grad, np.float32), ("hess", hess, np.float32)):
        if array.dtype != dtype or array.shape != (n, k):  # (any layout: LightGBM's leaves come transposed)
            raise ValueError(f"{name} must be a {np.dtype(dtype).name} array of shape {(n, k)}, got "
                             f"{array.dtype} {array.shape}")


def _tables(n: int, widths: list[int]) -> np.ndarray:
    """Zeroed per-block tables of the sum kernels, ``(n_blocks, K, 2, max width)``."""
    return np.zeros(((n + BLOCK - 1) // BLOCK, len(widths), 2, max(widths)))


def _block_order_sums(tables: np.ndarray, widths: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each tree's ``(G, H)``: the per-block tables added in block order, cut to its width."""
    sums = np.zeros(tables.shape[1:])
    _kernels().add_tables(tables, sums)  # in block order
    return [(sums[k, 0, :w], sums[k, 1, :w]) for k, w in enumerate(widths)]


def sum_machines(gathered: list[list[tuple[np.ndarray, np.ndarray]]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every machine's per-tree ``(G, H)`` (in rank order, as ``allgather`` gives them) added
    up in rank order: the same doubles on every machine."""
    totals = []
    for k in range(len(gathered[0])):
        g, h = np.zeros_like(gathered[0][k][0]), np.zeros_like(gathered[0][k][1])
        for machine in gathered:
            g, h = g + machine[k][0], h + machine[k][1]
        totals.append((g, h))
    return totals


def refit_values(fitted: np.ndarray, shrinkage: float, grad_sums: np.ndarray, hess_sums: np.ndarray,
                 rule: LeafRule, bias: float | None) -> np.ndarray:
    """A tree's new leaf values, as LightGBM writes them.

    ``fitted``: the tree's leaf values as fitted (any bias folded in; their number is the
    tree's size); ``shrinkage``: the ``shrinkage`` LightGBM wrote the tree with before any
    bias was folded in (the learning rate); ``bias``: the initial score folded into this
    tree, or None.  A one-leaf tree (no split) keeps its value, as LightGBM gives it.
    """
    if fitted.shape[0] == 1:
        return fitted
    values = rule.outputs(grad_sums, hess_sums) * shrinkage
    values[np.abs(values) <= _ZERO] = 0.0  # (Tree::Shrinkage's MaybeRoundToZero)
    if bias is not None:  # as fold_bias adds it (Tree::AddBias)
        values = values + bias
        values[np.abs(values) <= _ZERO] = 0.0
    return values


def value_table(values: list[np.ndarray]) -> np.ndarray:
    """The trees' leaf values as one float64 ``(K, most leaves)`` table (row ``k``: tree
    ``k``'s values, zero-padded), as the kernels that add by leaf read them."""
    table = np.zeros((len(values), max(v.shape[0] for v in values)))
    for k, v in enumerate(values):
        table[k, :v.shape[0]] = v
    return table


def add_by_leaf(scores: np.ndarray, leaves: np.ndarray, values: list[np.ndarray]) -> None:
    """``scores[i, k] += values[k][leaves[i, k]]``: each row's output, read from its leaf
    (the fused path does the same adds in its sweep, :meth:`smart_lgbm._engine.sweep.GradientSweep.gradients`)."""
    _kernels().add_by_leaf(scores, leaves, value_table(values))


@dataclass(frozen=True)
class RefitTrees:
    """An iteration's trees after the refit.

    Attributes
    ----------
    texts : list of str
        The trees' texts with the new leaf values.
    values : list of ndarray
        Each tree's new leaf values.
    outputs : dict
        The outputs of the sets read from LightGBM, mapped to the new values through the
        leaves ``fit`` reported (by the update plan's keys).
    forest, coded : Forest or None, CodedForest or None
        When the training rows were walked: the new trees' forest and (for coded validation
        sets to walk) coded forest, their leaf values patched in, not parsed and coded again.
    """

    texts: list[str]
    values: list[np.ndarray]
    outputs: dict[int, np.ndarray]
    forest: Forest | None
    coded: CodedForest | None


class LeafRefit:
    """The leaf refit of one run (a sampler with ``refit_leaves``).

    Parameters
    ----------
    walk : BinCodes or RawFeatures or None
        What the walk reads of the training rows (None: their leaves come from LightGBM).
    book : CodeBook or None
        The training data's bin codes' book (for coded rows).
    k : int
        Trees per iteration.
    allgather : callable or None
        On a machine of a distributed run: every machine's leaf sums, added in rank order,
        so that every machine writes the same values.
    """

    def __init__(self, walk: BinCodes | RawFeatures | None, book: CodeBook | None, k: int,
                 allgather: Callable[[str, Any], list] | None) -> None:
        self.walk = walk
        self.book = book
        self.k = k
        self.allgather = allgather
        self._scratch: np.ndarray | None = None

    def refit(self, fitted: _lightgbm.IterationTrees, plan: UpdatePlan, leaves: np.ndarray, grad: np.ndarray,
              hess: np.ndarray, rule: LeafRule, bias: np.ndarray | None, tag: str) -> RefitTrees:
        """The iteration's trees with leaf values refitted on every training row.

        ``leaves``: the run's int32 ``(n, K)`` buffer the walk to the leaves writes (when the
        plan walks the training rows); ``grad``, ``hess``: the iteration's gradients of
        every training row (the trees were fitted to a sample of them); ``bias``: the
        initial score folded into these trees, or None; ``tag``: this iteration's
        ``allgather`` tag.
        """
        n = grad.shape[0]
        grad2, hess2 = grad.reshape(n, self.k), hess.reshape(n, self.k)
        forest: Forest | None = None
        coded: CodedForest | None = None
        if TRAIN in plan.walked:  # every row's leaf in the trees as fitted
            forest = Forest.from_tree_texts(fitted.texts)
            fitted_values = list(forest.leaf_values)
            widths = [v.shape[0] for v in fitted_values]
            sums = None
            if isinstance(self.walk, BinCodes):
                assert self.book is not None  # coded only with the training data's book
                coded = self.book.coded_forest(forest)
                if coded.bitmask is not None:  # the walk and the sums in one pass
                    sums = walk_leaf_sums(self.walk, coded.bitmask, grad2, hess2, leaves, widths)
                else:  # the lockstep walk (its outputs go to a scratch), then the sums
                    add_coded_outputs(self.walk, coded, self._scratch_for(n), leaves, None)
            else:
                assert isinstance(self.walk, RawFeatures)  # the plan walks only sets with features
                add_outputs(self.walk, forest, self._scratch_for(n), leaves)
            if sums is None:
                sums = leaf_sums(leaves, grad2, hess2, widths)
        else:
            assert fitted.leaves is not None  # the plan asks fit for them (want_leaves)
            fitted_values = fitted.leaf_values
            widths = [v.shape[0] for v in fitted_values]
            sums = leaf_sums(fitted.leaves[TRAIN], grad2, hess2, widths)
        if self.allgather is not None:  # every machine's rows: the same values on every machine
            sums = sum_machines(self.allgather(tag, sums))
        # the shrinkage LightGBM wrote (a folded bias sets the texts' to 1)
        written = fitted.texts if bias is None else _lightgbm.tree_bodies(fitted.model)
        texts, values = [], []
        for k, text in enumerate(fitted.texts):
            v = refit_values(fitted_values[k], _lightgbm.tree_shrinkage(written[k]), sums[k][0], sums[k][1], rule,
                             None if bias is None else float(bias[k]))
            values.append(v)
            texts.append(_lightgbm.with_leaf_values(text, v))
        outputs = {}
        for key in plan.added:
            assert fitted.leaves is not None  # want_leaves whenever a refit reads a set
            set_leaves = fitted.leaves[key]
            out = np.empty(set_leaves.shape)
            for k, v in enumerate(values):
                out[:, k] = v[set_leaves[:, k]]
            outputs[key] = out
        if forest is not None:
            forest = forest.with_leaf_values(values)
            # (a coded validation set walks the new trees; the training rows need no walk)
            coded = coded.with_leaf_values(forest) if coded is not None and len(plan.walked) > 1 else None
        return RefitTrees(texts, values, outputs, forest, coded)

    def _scratch_for(self, n: int) -> np.ndarray:
        """The refit walk's outputs of the trees as fitted, thrown away (the walks write them)."""
        if self._scratch is None:
            self._scratch = np.zeros((n, self.k))
        return self._scratch
