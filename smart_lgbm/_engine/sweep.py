"""The gradient sweep: the next iteration's gradients in the same pass as the walk.

Without it an iteration reads every training row three times: the loss's gradients at the
scores, the sampler's rate solve over the importances, and, after the tree, the walk adding
its outputs to the scores.  For the built-in losses and samplers the run instead ends
iteration ``t`` with the walk of the new tree(s) over the codes followed by one compiled
sweep (:mod:`._sweep_kernels`) that computes ``g, h`` of every row at the new scores and the
statistics the next rate solve reads, and returns them as a value
(:class:`~smart_lgbm._engine.draw.Gradients`) that the run holds for iteration ``t + 1``:
its sampler solves ``rho`` from the statistics and one light pass draws and gathers
(:func:`smart_lgbm.samplers.draw.draw_sample`).  The project calls this the *fused* path
(the walk and the gradients fused into one pass over the rows); a run without a sweep takes
the *unfused* path: the loss's ``compute_gradients``, the sampler's own passes, the walk.

Who takes it is declared, not guessed: a loss's ``_fused_loss()`` and a sampler's
``_fused_statistics()`` say what the sweep computes for them, and are None for user losses
and samplers (and for a built-in's subclass that changes its gradients, importance or
draw), which keep the unfused path unchanged.  The sweep writes exactly what the unfused
kernels write (the same row functions, the same per-block sums in the same order), so a
run gives the same model byte for byte either way (``tests/test_fused.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._numba import kernel_constants as kc
from ..losses.base import Loss, Target
from ..losses.binary import label_sign
from ..samplers import Sampler
from ..samplers.rate_solve import Statistics
from .draw import Gradients
from .walk.codes import BinCodes, CodedForest, add_coded_outputs

__all__ = ["LOSSES", "GradientSweep", "sweep_for"]

#: The losses the sweep computes (their ``_fused_loss()`` names).
LOSSES = {"binary": 0, "l2": 1, "softmax": 2}


_KERNELS: Any = None


def _kernels() -> Any:
    global _KERNELS
    if _KERNELS is None:  # numba loads on first use
        from . import _sweep_kernels as kernels

        _KERNELS = kernels
    return _KERNELS


class GradientSweep:
    """The gradient sweep of one run: the loss's per-row inputs and the statistics' buffers.

    Build it with :func:`sweep_for`.
    """

    def __init__(self, loss_name: str, param: float, request: tuple[int, int], target: Target, n: int,
                 k: int) -> None:
        self.loss = LOSSES[loss_name]
        self.param = float(param)
        self.stats, self.kind = request
        label = np.asarray(target.label)
        empty_f64 = np.empty(0)
        # only the loss's own per-row input is kept (the binary sign in one byte per row)
        self.sign = label_sign(target) if loss_name == "binary" else np.empty(0, dtype=np.int8)
        self.label = np.ascontiguousarray(label, dtype=np.float64) if loss_name == "l2" else empty_f64
        self.cls = label.astype(np.int32) if loss_name == "softmax" else np.empty(0, dtype=np.int32)
        self.weight = empty_f64 if target.weight is None else np.ascontiguousarray(target.weight, dtype=np.float64)
        self.n, self.k = n, k
        self._nb = (n + kc.BLOCK - 1) // kc.BLOCK

    def walk(self, codes: BinCodes, forest: CodedForest, scores: np.ndarray,
             known: tuple[np.ndarray, np.ndarray] | None, grad: np.ndarray,
             hess: np.ndarray, leaves: np.ndarray | None = None) -> Gradients:
        """Walk ``forest`` over ``codes`` adding to ``scores`` (rows in ``known``, the
        iteration's checked sample, get their known outputs instead), then the next
        iteration's :class:`Gradients` at the new scores (:meth:`gradients`).  ``leaves``: an
        int32 ``(n, K)`` buffer the walk writes each walked row's leaf into (for a sampler
        that reads them)."""
        add_coded_outputs(codes, forest, scores, leaves, known, rows_checked=True)
        return self.gradients(scores, grad, hess)

    def gradients(self, scores: np.ndarray, grad: np.ndarray, hess: np.ndarray,
                  by_leaf: tuple[np.ndarray, np.ndarray] | None = None) -> Gradients:
        """``g, h`` of every row at ``scores`` (float64 ``(n, K)``), written into ``grad``/``hess``
        (the run's float32 buffers), with the next rate solve's statistics.

        ``by_leaf``: ``(leaves, values)``, a leaf refit's new outputs not yet in ``scores``
        (int32 ``(n, K)`` leaves, float64 ``(K, width)`` values): each row's
        ``values[k, leaves[i, k]]`` is added to its score first, block by block, the adds
        of :func:`smart_lgbm._engine.refit.add_by_leaf`, in the same pass as the gradients.

        Fresh statistics arrays each call: a state handed to a sampler keeps its own.
        """
        nb = self._nb
        bmax, bsum = np.zeros(nb), np.zeros(nb)
        bpos, bbad, bexp = np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(nb, np.int64)
        norms = np.zeros((nb, 2))
        kernels = _kernels()
        if self.k == 1:
            column = (self.loss, self.sign, self.label, self.weight, self.param, grad.reshape(self.n),
                      hess.reshape(self.n), self.stats, self.kind, bmax, bpos, bbad, bsum, norms, kernels.threads(),
                      kernels.fast_exp())
            if by_leaf is None:
                kernels.one_column(self.n, scores.reshape(self.n), *column)
            else:
                kernels.one_column_by_leaf(self.n, scores.reshape(self.n), *by_leaf, *column)
        else:
            softmax = (self.cls, self.weight, self.param, grad, hess, self.stats, self.kind, bmax, bpos, bbad, bsum,
                       norms)
            if by_leaf is None:
                kernels.gradients_statistics(self.n, scores, *softmax)
            else:
                kernels.gradients_statistics_by_leaf(self.n, scores, *by_leaf, *softmax)
        if self.stats == kc.STATS_SCAN:
            statistics = Statistics(self.kind, (bmax, bpos, bbad, bexp, bsum), None)
        elif self.stats == kc.STATS_NORMS:
            statistics = Statistics(kc.MVS, None, norms)
        else:
            statistics = Statistics(-1, None, None)
        return Gradients(grad, hess, statistics)


def sweep_for(loss: Loss, sampler: Sampler, target: Target, walk: Any, n: int, k: int) -> GradientSweep | None:
    """The run's gradient sweep, or None when the run takes the unfused path.

    A sweep when the loss and the sampler both declare it (``_fused_loss()``,
    ``_fused_statistics()``) and the training rows are walked on bin codes.  A sampler that
    reads the newest tree's leaves (an adaptive rate) gets them from the same walk.
    """
    spec = loss._fused_loss()
    request = sampler._fused_statistics()
    if spec is None or request is None or not isinstance(walk, BinCodes):
        return None
    name, param = spec
    return GradientSweep(name, param, request, target, n, k)
