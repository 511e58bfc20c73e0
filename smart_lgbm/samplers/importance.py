"""SMART's importance samplers (paper Alg. 2 and 3), minimal-variance and loss-based sampling."""

from __future__ import annotations

import numpy as np

from .._numba import kernel_constants as kc
from . import buffers, draw, rate_solve
from .adaptive import AdaptiveRate
from .base import ProbabilitySampler, SamplingState, row_norm, row_sum
from .spec import ANCHOR_LAG, ETA, PROBABILITY_RATE, REFIT_LEAVES, REG, RHO


class FirstOrder(ProbabilitySampler, importance_kernel=kc.FIRST):
    """First-gradient-proportional sampling (paper Alg. 2): ``p_i = min(1, rho * |g_i|)``.

    Drawn rows fit ``g_i / p_i`` and ``h_i / p_i``.  For K trees per iteration ``|g_i|`` is
    the Euclidean norm of the row's K gradients.

    Parameters
    ----------
    rate : float in (0, 1], "auto" or AdaptiveRate, optional
        Target expected sampling rate (``rho`` solved per iteration); default 0.1.  "auto":
        start low and grow while the trees are noise-dominated (:class:`AdaptiveRate`).
    rho : float > 0, optional
        The paper's fixed ``rho``.  Give ``rate`` or ``rho``, not both.
    refit_leaves : bool or None, default=None
        Leaf values from every training row (:attr:`Sampler.refit_leaves`); None takes the
        class attribute (False here; a subclass may declare ``refit_leaves = True``).
    """

    def importance(self, grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
        return row_norm(grad)

    def _fused_statistics(self) -> tuple[int, int] | None:
        return self._fused_as(kc.FIRST, kc.STATS_SCAN)


class SecondOrder(ProbabilitySampler, importance_kernel=kc.SECOND, fit_kernel=True):
    """Second-gradient-proportional sampling (paper Alg. 3), optionally with its DANE-style
    regularised gradient.

    ``p_i = min(1, rho * h_i)`` (sum of the K hessians for multiclass); drawn rows fit
    ``h~_i = h_i / p_i`` and, with the regulariser on (``anchor_lag`` set),

    ``g~_i = (g_i - l'(y~_i) + eta * mean_{k in I_j(i)} l'(y~_k)) / p_i``,

    otherwise ``g~_i = g_i / p_i``.

    This project's reading of the paper (which leaves it loose): ``y~`` is the model output
    ``anchor_lag`` iterations ago, so ``l'(y~_i)`` is the gradient the engine computed at
    iteration ``t - anchor_lag`` (kept in a short history, never recomputed), and ``I_j(i)``
    is the leaf of the most recent tree holding row ``i`` (the tree being fitted does not
    exist yet).  Until ``anchor_lag`` iterations of history exist the plain gradient is used.
    ``SecondOrder(anchor_lag=2)`` is the paper's Alg. 3 ("the hypothesis of the last two
    iterations").

    The regulariser is off by default: measured on a9a it makes the model worse at every
    rate tried (``docs/results/second_order_ablation.md``, made by
    ``scripts/ablation_second_order.py``): the leaf-mean term pulls each row's gradient
    towards the mean of the leaf the previous tree already put it in, which discourages the
    new tree from refining structure the shrunken previous tree only partly fitted, and
    dividing that non-vanishing term by the small ``p_i`` of low-hessian rows adds variance.

    Parameters
    ----------
    rate : float in (0, 1], "auto" or AdaptiveRate, optional
        Target expected sampling rate; default 0.1 ("auto": :class:`AdaptiveRate`).
    rho : float > 0, optional
        Fixed ``rho``.  Give ``rate`` or ``rho``, not both.
    eta : float >= 0, default=1.0
        Weight of the leaf-mean anchor term (used only with ``anchor_lag``).
    anchor_lag : int >= 1 or None, default=None
        How many iterations back the anchor ``y~`` lies; None turns the regulariser off
        (plain second-gradient-proportional sampling).
    refit_leaves : bool or None, default=None
        Leaf values from every training row (:attr:`Sampler.refit_leaves`); None takes the
        class attribute (False here; a subclass may declare ``refit_leaves = True``).
    """

    def __init__(
        self,
        rate: float | str | AdaptiveRate | None = PROBABILITY_RATE.default,
        rho: float | None = RHO.default,
        eta: float = ETA.default,
        anchor_lag: int | None = ANCHOR_LAG.default,
        refit_leaves: bool | None = REFIT_LEAVES.default,
    ) -> None:
        super().__init__(rate=rate, rho=rho, refit_leaves=refit_leaves)
        self.eta = ETA.check(eta, type(self).__name__)
        self.anchor_lag = ANCHOR_LAG.check(anchor_lag, type(self).__name__)

    # Derived from anchor_lag and eta, not stored: they tell the engine what to keep.
    @property
    def history_length(self) -> int:  # type: ignore[override]
        return 0 if self.anchor_lag is None else self.anchor_lag

    @property
    def needs_leaves(self) -> bool:  # type: ignore[override]
        return (self.anchor_lag is not None and self.eta > 0) or super().needs_leaves

    def importance(self, grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
        return row_sum(hess)

    def _fused_statistics(self) -> tuple[int, int] | None:
        # (the regulariser's leaf means read every row's leaf, which the fused walk writes)
        return self._fused_as(kc.SECOND, kc.STATS_SCAN)

    def _anchor_and_leaves(self, state: SamplingState) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The anchor gradient and the newest leaves, or ``(None, None)`` when the
        regulariser is off or its history does not exist yet (plain gradient then)."""
        if self.anchor_lag is None:
            return None, None
        anchor = state.history.gradient(self.anchor_lag)
        leaves = state.history.leaves
        if anchor is None or (self.eta > 0 and leaves is None):
            return None, None
        if np.shape(anchor) != state.shape:
            raise ValueError(f"{type(self).__name__}: the anchor gradient has shape {np.shape(anchor)}; "
                             f"expected {state.shape}")
        return anchor, leaves if self.eta > 0 else None

    def fitting_gradient(self, state: SamplingState) -> np.ndarray:
        anchor, leaves = self._anchor_and_leaves(state)
        if anchor is None:
            return state.grad
        return regularised_gradient(state.grad, np.asarray(anchor, dtype=np.float64), leaves, self.eta)

    def _fit(self, state: SamplingState) -> draw.Fit:
        # the regularised gradient of the drawn rows only; the leaf means run over all rows
        g = state.kernel_arrays()[0]
        anchor, leaves = self._anchor_and_leaves(state)
        if anchor is None:
            return draw.Fit(g)
        anchor = buffers.as_rows(anchor).astype(g.dtype, copy=False)
        if leaves is None:
            return draw.Fit(g, kc.FIT_ANCHOR, anchor)
        leaves = draw.check_leaves(leaves, g.shape, type(self).__name__)
        return draw.Fit(g, kc.FIT_REGULARISED, anchor, leaves, draw.leaf_means(anchor, leaves), self.eta)


def regularised_gradient(
    grad: np.ndarray, anchor: np.ndarray, leaves: np.ndarray | None, eta: float
) -> np.ndarray:
    """``g - l'(y~) + eta * leafmean(l'(y~))`` for (n,) or (n, K) arrays, as float64.

    ``leaves[:, k]`` (or ``leaves`` for K = 1) gives each row's leaf in tree k; the mean of
    the anchor gradient is taken over all training rows of that leaf (the same compiled,
    thread-count independent sums :class:`SecondOrder`'s draw uses).
    """
    grad = np.asarray(grad, dtype=np.float64)
    anchor = np.asarray(anchor, dtype=np.float64)
    out = grad - anchor
    if eta == 0.0:
        return out
    anchor_rows = buffers.as_rows(anchor)
    leaf_rows = draw.check_leaves(leaves, anchor_rows.shape, "regularised_gradient", "leaves")
    means = draw.leaf_means(anchor_rows, leaf_rows)
    per_row = means[np.arange(means.shape[0])[None, :], leaf_rows]  # [i, k] = means[k, leaves[i, k]]
    return out + eta * per_row.reshape(out.shape)


class MVS(ProbabilitySampler, importance_kernel=kc.MVS):
    """Minimal-variance sampling (Ibragimov & Gusev 2019; CatBoost's default bootstrap).

    ``p_i = min(1, sqrt(g_i^2 + lambda * h_i^2) / mu)`` with ``mu`` solved for the target
    rate (``rho = 1 / mu``).  For K trees per iteration ``g_i^2`` and ``h_i^2`` are squared
    Euclidean norms over the K columns.

    Parameters
    ----------
    rate : float in (0, 1], "auto" or AdaptiveRate, optional
        Target expected sampling rate; default 0.1 ("auto": :class:`AdaptiveRate`).
    rho : float > 0, optional
        Fixed ``1 / mu``.  Give ``rate`` or ``rho``, not both.
    reg : float >= 0 or "auto", default="auto"
        ``lambda``.  "auto" sets it each iteration to ``(sum|g| / sum h)^2``, the squared
        size of a typical Newton step, so that both terms weigh about equally (our choice;
        CatBoost derives it from the previous iteration's leaf values to the same effect).
    refit_leaves : bool or None, default=None
        Leaf values from every training row (:attr:`Sampler.refit_leaves`); None takes the
        class attribute (False here; a subclass may declare ``refit_leaves = True``).
    """

    def __init__(self, rate: float | str | AdaptiveRate | None = PROBABILITY_RATE.default,
                 rho: float | None = RHO.default, reg: float | str = REG.default,
                 refit_leaves: bool | None = REFIT_LEAVES.default) -> None:
        super().__init__(rate=rate, rho=rho, refit_leaves=refit_leaves)
        self.reg = REG.check(reg, type(self).__name__)

    def importance(self, grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
        g = row_norm(grad)
        h = row_norm(hess)
        if self.reg == "auto":
            h_sum = h.sum()
            lam = (g.sum() / h_sum) ** 2 if h_sum > 0 else 0.0
        else:
            lam = self.reg
        return np.sqrt(g * g + lam * h * h)

    def _fused_statistics(self) -> tuple[int, int] | None:
        # the importance needs lambda of all rows first: the pass gathers lambda's sums
        return self._fused_as(kc.MVS, kc.STATS_NORMS if self.reg == "auto" else kc.STATS_NONE)

    def _importance_of(self, g: np.ndarray, h: np.ndarray, kind: int,
                       state: SamplingState | None = None) -> rate_solve.Importance:
        if self.reg != "auto":
            lam = self.reg
        else:
            lam = rate_solve.mvs_lambda(g, h, None if state is None else state.statistics)
        return rate_solve.Importance(kind, g.shape[0], g, h, lam=lam)


class LossBased(ProbabilitySampler, importance_kernel=kc.LOSS):
    """Loss-proportional sampling (the paper's "loss-based" row): ``p_i = min(1, rho * l_i)``.

    ``l_i`` is the loss's per-row loss at the current scores (for LambdaRank, each
    document's share of its pairwise losses).

    Parameters
    ----------
    rate : float in (0, 1], "auto" or AdaptiveRate, optional
        Target expected sampling rate; default 0.1 ("auto": :class:`AdaptiveRate`).
    rho : float > 0, optional
        Fixed ``rho``.  Give ``rate`` or ``rho``, not both.
    refit_leaves : bool or None, default=None
        Leaf values from every training row (:attr:`Sampler.refit_leaves`); None takes the
        class attribute (False here; a subclass may declare ``refit_leaves = True``).
    """

    def importance(self, grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
        raise TypeError("LossBased importance needs the per-row loss; use probabilities_from_loss(loss_values)")

    def probabilities_from_loss(self, loss_values: np.ndarray) -> np.ndarray:
        """Inclusion probabilities for per-row losses ``loss_values``."""
        return self.probabilities_from_importance(np.maximum(loss_values, 0.0))

    def importance_from_state(self, state: SamplingState) -> np.ndarray:
        return np.maximum(state.loss.loss(state.raw, state.target), 0.0)

    def _importance_of(self, g: np.ndarray, h: np.ndarray, kind: int,
                       state: SamplingState | None = None) -> rate_solve.Importance:
        if state is None:  # probabilities() without a state takes the Python path (kind LOSS)
            raise ValueError(f"{type(self).__name__}: the per-row loss needs the sampling state")
        # the per-row loss, written into a buffer reused across iterations
        buf = buffers.workspace_of(self).array("loss", state.num_rows, np.float64)
        state.loss.compute_loss(state.raw, state.target, buf)
        np.maximum(buf, 0.0, out=buf)  # NaN stays NaN and is refused by the solve
        return rate_solve.Importance(kc.BUFFER, state.num_rows, g, h, buf)
