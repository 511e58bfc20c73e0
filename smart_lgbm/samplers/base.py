"""The sampler protocol: which rows a boosting iteration sees, and with what gradients.

Every sampler turns the full-data gradients of one iteration into a :class:`Sample`:
the row indices LightGBM's tree learner will see and the gradients/hessians it fits on
those rows.  Importance samplers draw row ``i`` with probability ``p_i`` independently
and divide its gradient and hessian by ``p_i`` so that every gradient sum the tree
learner forms (per node, per histogram bin) is an unbiased estimate of the full-data sum.

Writing your own sampler
------------------------
* Subclass :class:`ProbabilitySampler` and implement :meth:`ProbabilitySampler.importance`
  (any non-negative score per row); ``rate=``/``rho=`` handling, the Bernoulli draw and the
  ``1/p`` reweighting come for free.
* Or subclass :class:`Sampler` and implement :meth:`Sampler.sample` for full control
  (deterministic selection, custom weights, regularised gradients).

Samplers must draw all randomness from the ``rng`` they are given so that the same seed
gives the same model; the engine seeds it per iteration.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..losses.base import Loss, Target, defining_class
from .._numba import kernel_constants as kc
from . import buffers, draw, rate_solve
from .adaptive import AdaptiveRate, AdaptiveRateState, Allgather, ValidationScore, observe_sample, rate_state
from .spec import PROBABILITY_RATE, RATE, REFIT_LEAVES, RHO, refit_leaves_of


#: Marks an attribute without a class-level default (:meth:`Sampler._shown`).
_UNSET = object()


class GradientHistory:
    """What samplers may know about earlier iterations.

    Parameters
    ----------
    maxlen : int, default=0
        How many full-data gradient arrays to keep (0 keeps none).
    leaves : ndarray of shape (n,) or (n, K), or None
        For every training row, the leaf that holds it in the most recent tree(s)
        (int32 from the engine, which sets it after every tree).

    Notes
    -----
    :meth:`push_gradient` *copies* into ``maxlen`` ring buffers allocated on the first push
    (with its shape and dtype: float32 from the engine), because the engine reuses its
    gradient buffer every iteration.  :meth:`gradient` returns a read-only view of a ring
    buffer, valid until ``maxlen`` further pushes overwrite it.
    """

    def __init__(self, maxlen: int = 0, leaves: np.ndarray | None = None) -> None:
        self.maxlen = max(int(maxlen), 0)
        self.leaves = leaves
        self._slots: list[np.ndarray] = []
        self._count = 0
        self._next = 0

    def push_gradient(self, grad: np.ndarray) -> None:
        """Keep a copy of this iteration's full-data gradient (the newest)."""
        if self.maxlen == 0:
            return
        grad = np.asarray(grad)
        if not self._slots:
            self._slots = [np.empty(grad.shape, dtype=grad.dtype) for _ in range(self.maxlen)]
        elif grad.shape != self._slots[0].shape or grad.dtype != self._slots[0].dtype:
            raise ValueError(f"push_gradient got a {grad.dtype} array of shape {grad.shape}; this history "
                             f"holds {self._slots[0].dtype} arrays of shape {self._slots[0].shape}")
        np.copyto(self._slots[self._next], grad)
        self._next = (self._next + 1) % self.maxlen
        self._count = min(self._count + 1, self.maxlen)

    def gradient(self, lag: int) -> np.ndarray | None:
        """Full-data gradient ``lag`` iterations before the current one (1 = previous), or None."""
        if lag < 1 or lag > self._count:
            return None
        view = self._slots[(self._next - lag) % self.maxlen].view()
        view.flags.writeable = False
        return view

    @property
    def gradients(self) -> tuple[np.ndarray, ...]:
        """The gradients held, oldest first (read-only views)."""
        return tuple(g for lag in range(self._count, 0, -1) if (g := self.gradient(lag)) is not None)


@dataclass
class RunContext:
    """What a training run tells its sampler beyond one iteration's gradients.

    A run (:func:`smart_lgbm.train`; each training set of a :class:`smart_lgbm.SmartObjective`,
    each ``lightgbm.cv`` fold) makes one when it starts and hands it to the sampler with every
    iteration's :class:`SamplingState` (``state.run``).  The run owns it: one sampler object
    may serve several runs, each with its own context.

    Attributes
    ----------
    sampler_state : object
        What the sampler's :meth:`Sampler.start_run` returned when the run started (None for
        samplers that keep nothing per run); an adaptive rate keeps its controller's state here.
    validation : tuple of (set, metric, value, higher is better)
        Every validation set's scores after the previous iteration, as
        ``evaluation_result_list`` holds them (an adaptive rate's validation rules); empty
        before the first evaluation and in runs without ``valid_sets`` (SmartObjective, Dask).
    allgather : callable or None
        On a machine of a distributed run of several machines (:mod:`smart_lgbm.dask`),
        ``allgather(tag, value)``: every machine's ``value`` in rank order, for a decision all
        machines must take alike; None on one machine.
    unsplit : bool
        After each engine iteration: whether its sample could not be split (no tree grew:
        too few rows for the split requirements); an adaptive rate then grows at its next
        decision.  Always False outside :func:`smart_lgbm.train`.
    """

    sampler_state: Any = None
    validation: tuple[ValidationScore, ...] = ()
    allgather: Allgather | None = None
    unsplit: bool = False

    @classmethod
    def start(cls, sampler: Sampler, allgather: Allgather | None = None) -> RunContext:
        """The context of a run of ``sampler`` that starts now (:meth:`Sampler.start_run`)."""
        return cls(sampler_state=sampler.start_run(), allgather=allgather)


class SamplingState:
    """Everything a sampler may look at in one iteration.

    The engine passes float32 C-contiguous ``grad``/``hess`` (the buffers it reuses every
    iteration: a state is valid for its own iteration only); tests and
    :class:`smart_lgbm.SmartObjective` may pass float64.  :attr:`grad` and :attr:`hess`
    are always float64 (converted once, on first access, when given float32), so samplers
    written against them keep working; :attr:`grad32`/:attr:`hess32` are float32, and the
    built-in samplers read the arrays as given, without a copy.

    Parameters
    ----------
    iteration : int
        0-based boosting iteration.
    grad, hess : ndarray of shape (n,) or (n, K)
        Full-data gradients and hessians at the current scores, instance weights applied.
    raw : ndarray
        Current raw scores, same shape.
    loss : Loss
        The loss being boosted.
    target : Target
        Training labels, weights and groups.
    history : GradientHistory
        Gradients of earlier iterations and the leaves of the most recent tree.
    run : RunContext, optional
        The run's context (:class:`RunContext`: the sampler's per-run state, validation
        scores, the machines' ``allgather``); a fresh one when not given, for a state made
        outside a run.
    draw_key : numpy.uint64, optional
        For a sampler whose ``sample`` takes its randomness as one key
        (:attr:`Sampler.draws_from_key`): the one 64-bit key its draw would take from the
        iteration's generator (its first ``random_raw()``), computed without building the
        generator (:func:`smart_lgbm._engine.draw.draw_key`); the sampler is then called
        with ``rng=None``.  None otherwise (the draw takes the key from ``rng``).
    statistics : smart_lgbm.samplers.rate_solve.Statistics, optional
        What the run's gradient sweep (:mod:`smart_lgbm._engine.sweep`) gathered from
        ``grad`` and ``hess`` for the built-in sampler's rate solve (what it asked for in
        ``_fused_statistics()``); None otherwise.
    """

    def __init__(self, iteration: int, grad: np.ndarray, hess: np.ndarray, raw: np.ndarray, loss: Loss,
                 target: Target, history: GradientHistory, *, run: RunContext | None = None,
                 draw_key: np.uint64 | None = None, statistics: rate_solve.Statistics | None = None) -> None:
        grad, hess = np.asarray(grad), np.asarray(hess)
        if grad.shape != hess.shape or grad.ndim not in (1, 2) or grad.shape[0] == 0:
            raise ValueError("grad and hess must have the same shape, (n,) or (n, K) with n >= 1; "
                             f"got {grad.shape} and {hess.shape}")
        self.iteration = iteration
        self.raw = raw
        self.loss = loss
        self.target = target
        self.history = history
        self.run = RunContext() if run is None else run
        self.draw_key = draw_key
        self.statistics = statistics
        self._given = {"grad": grad, "hess": hess}
        self._converted: dict[tuple[str, Any], np.ndarray] = {}

    def _as(self, name: str, dtype: Any) -> np.ndarray:
        given = self._given[name]
        if given.dtype == dtype:
            return given
        key = (name, dtype)
        if key not in self._converted:
            self._converted[key] = given.astype(dtype)
        return self._converted[key]

    @property
    def grad(self) -> np.ndarray:
        """Full-data gradients as float64."""
        return self._as("grad", np.float64)

    @property
    def hess(self) -> np.ndarray:
        """Full-data hessians as float64."""
        return self._as("hess", np.float64)

    @property
    def grad32(self) -> np.ndarray:
        """Full-data gradients as float32."""
        return self._as("grad", np.float32)

    @property
    def hess32(self) -> np.ndarray:
        """Full-data hessians as float32."""
        return self._as("hess", np.float32)

    def kernel_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(g, h)`` as ``(n, K)`` C-contiguous arrays in the dtype given (float32 or float64)."""
        key = ("rows", None)
        if key not in self._converted:
            g = buffers.as_rows(self._given["grad"])
            self._converted[key] = g
            self._converted[("rows_h", None)] = buffers.as_rows(self._given["hess"]).astype(g.dtype, copy=False)
        return self._converted[key], self._converted[("rows_h", None)]

    @property
    def num_rows(self) -> int:
        return int(self._given["grad"].shape[0])

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the gradients: ``(n,)`` or ``(n, K)``."""
        return self._given["grad"].shape

    @property
    def one_dimensional(self) -> bool:
        """Whether the gradients are ``(n,)`` (one tree per iteration) rather than ``(n, K)``."""
        return self._given["grad"].ndim == 1

    def __repr__(self) -> str:
        g = self._given["grad"]
        return f"SamplingState(iteration={self.iteration}, shape={g.shape}, dtype={g.dtype})"


@dataclass
class Sample:
    """The rows of one iteration and the gradients the tree is fitted on.

    Attributes
    ----------
    indices : ndarray of int32, shape (m,)
        Sorted, unique row indices, ``m >= 1``.
    grad, hess : ndarray of shape (m,) or (m, K)
        Fitting gradients and hessians for those rows (already reweighted); float32 when
        the state's arrays are float32.
    probabilities : ndarray of shape (n,) or None
        Inclusion probabilities of all rows, if the sampler chose to provide them.  The
        built-in samplers leave it None (it would cost an n-sized array per iteration);
        :meth:`ProbabilitySampler.probabilities_from_state` computes it on demand.
    """

    indices: np.ndarray
    grad: np.ndarray
    hess: np.ndarray
    probabilities: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.indices.shape[0])


class Sampler(ABC):
    """Base class of all samplers.

    Class attributes tell the engine what state to keep:

    history_length : int
        How many past full-data gradient vectors :attr:`GradientHistory.gradients` must hold.
    needs_leaves : bool
        Whether :attr:`GradientHistory.leaves` must be filled after every tree.
    deterministic : bool
        True when the sample depends only on the state, never on ``rng``: the engine then
        stops once an iteration cannot split (every later one would repeat it) instead of
        going on with the next sample.
    refit_leaves : bool
        Whether :func:`smart_lgbm.train` sets each sampled tree's leaf values from every
        training row (``-sum g / (sum h + lambda_l2)`` over the rows in the leaf, times the
        learning rate) instead of from the sample's reweighted gradients: the sample then
        only chooses the splits.  Costs one more pass over the training rows per sampled
        iteration; iterations that draw every row are left as LightGBM fits them.
    draws_from_key : bool
        Whether :meth:`sample` takes all its randomness as one 64-bit key,
        ``state.draw_key``, and accepts ``rng=None`` then (the built-in probability samplers
        and :class:`Uniform`): the run computes that key without building numpy's generator.
        False for every other sampler, and for a class that defines its own :meth:`sample`
        without declaring it again: such a sampler gets the generator.
    """

    history_length: int = 0
    needs_leaves: bool = False
    deterministic: bool = False
    refit_leaves: bool = False
    draws_from_key: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "sample" in vars(cls) and "draws_from_key" not in vars(cls):
            cls.draws_from_key = False  # its own draw: it gets the generator unless it says otherwise

    @abstractmethod
    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        """Choose this iteration's rows and fitting gradients."""

    def start_run(self) -> Any:
        """This sampler's state for one run, made when the run starts; None by default.

        A run (an engine run, each training set of a :class:`smart_lgbm.SmartObjective`,
        each ``lightgbm.cv`` fold) calls it once, keeps what it returns and hands it back
        with every iteration's state as ``state.run.sampler_state``
        (:class:`RunContext`): what a sampler learns over a run (an adaptive rate's
        controller, say) lives there, so one sampler object may serve several runs.
        """
        return None

    def _fused_statistics(self) -> tuple[int, int] | None:
        """``(stats, kind)``: what the engine's fused pass (:mod:`smart_lgbm._engine.sweep`) gathers
        for this sampler's next draw (``kernel_constants.STATS_*``, and the importance kind of
        ``STATS_SCAN``), or None: the engine takes the unfused path.  Declared by the
        built-in samplers; a user sampler keeps None."""
        return None

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if self._shown(k, v))
        return f"{type(self).__name__}({params})"

    def _shown(self, key: str, value: Any) -> bool:
        """Whether :meth:`__repr__` shows an attribute: not private, not None, and not equal
        to the class attribute of the same name (a default such as ``refit_leaves=False``)."""
        if key.startswith("_") or value is None:
            return False
        default = getattr(type(self), key, _UNSET)
        return (default is _UNSET or isinstance(default, property) or type(default) is not type(value)
                or default != value)


def row_norm(values: np.ndarray) -> np.ndarray:
    """|v| per row for (n,) arrays, the Euclidean norm over K columns for (n, K) arrays."""
    return np.abs(values) if values.ndim == 1 else np.sqrt(np.einsum("ij,ij->i", values, values))


def row_sum(values: np.ndarray) -> np.ndarray:
    return values if values.ndim == 1 else values.sum(axis=1)


def solve_rho(importance: np.ndarray, expected_size: float, max_rounds: int = 64) -> float:
    """Find ``rho`` with ``sum_i min(1, rho * s_i) = expected_size``.

    O(n) and scale-free (see :mod:`smart_lgbm.samplers.rate_solve`): a few compiled passes,
    then, only if Newton's iteration has not settled after ``max_rounds`` passes, an exact
    solve by sorting.  If ``expected_size`` is at least the number of rows with positive
    importance, every such row gets ``p = 1`` and ``inf`` is returned (also when ``rho``
    exceeds the float range, e.g. for importances around 1e-320).

    Raises
    ------
    ValueError
        If an importance is NaN, infinite or negative.
    """
    return rate_solve.solve_rho_raw(importance, expected_size, max_rounds)


class ProbabilitySampler(Sampler):
    """Importance sampling with ``p_i = min(1, rho * s_i)`` for an importance score ``s``.

    Parameters
    ----------
    rate : float in (0, 1], "auto" or AdaptiveRate, optional
        Target expected sampling rate; ``rho`` is solved each iteration so that
        ``sum_i p_i = rate * n`` (up to float rounding).  Default 0.1 when neither is given.
        ``"auto"`` (or an :class:`AdaptiveRate` for control) starts low and grows the rate
        while the sampled trees are noise-dominated (:mod:`smart_lgbm.samplers.adaptive`).
    rho : float > 0, optional
        Fixed ``rho`` as in the paper (the rate then varies per iteration).
    refit_leaves : bool or None, default=None
        Leaf values from every training row, the sample choosing only the splits
        (:attr:`Sampler.refit_leaves`); None takes the class attribute (False here; a user's
        subclass may declare ``refit_leaves = True``).

    Notes
    -----
    The built-in subclasses compute their importances inside compiled kernels; a user
    subclass's :meth:`importance` (or :meth:`importance_from_state`) is called once per
    iteration and must return one finite, non-negative number per row, else a
    ``ValueError`` names the sampler.  Rows of zero importance are never drawn, except at
    ``rate=1.0`` (fixed, or an adaptive rate at 1.0), which draws every row: full boosting;
    if every importance is zero the draw is uniform at ``rate`` (every row with a fixed ``rho``).
    """

    #: the built-in draw takes its randomness as ``state.draw_key`` (:meth:`sample`)
    draws_from_key = True

    def __init_subclass__(cls, importance_kernel: int | None = None, fit_kernel: bool = False,
                          **kwargs: Any) -> None:
        """Register ``cls``'s compiled kernels (the built-in samplers).

        ``importance_kernel``: the importance kind (``kc.FIRST``, ...) the kernels
        recompute in place of ``cls``'s :meth:`importance` (and of the base
        :meth:`importance_from_state` that calls it); ``fit_kernel``: ``cls``'s ``_fit``
        gives its :meth:`fitting_gradient` to the gather kernel for the drawn rows only.
        A subclass that overrides either method below ``cls`` gets its own method used.

        Explicit, so that renaming a method cannot silently send a built-in sampler down
        the Python path: registering a method ``cls`` does not define is refused here, and
        ``tests/test_kernel_registration.py`` checks that every built-in sampler trains
        without its Python methods.
        """
        super().__init_subclass__(**kwargs)
        if importance_kernel is not None:
            if "importance" not in vars(cls) or importance_kernel not in kc.IMPORTANCE_KINDS:
                raise TypeError(f"{cls.__name__}: importance_kernel needs an importance method in the class and "
                                f"one of {sorted(kc.IMPORTANCE_KINDS)}, got {importance_kernel!r}")
            _IMPORTANCE_KERNELS[cls] = importance_kernel
        if fit_kernel:
            if "fitting_gradient" not in vars(cls) or "_fit" not in vars(cls):
                raise TypeError(f"{cls.__name__}: fit_kernel needs fitting_gradient and _fit in the class")
            _FIT_KERNELS.add(cls)

    def __init__(self, rate: float | str | AdaptiveRate | None = PROBABILITY_RATE.default,
                 rho: float | None = RHO.default, refit_leaves: bool | None = REFIT_LEAVES.default) -> None:
        if rate is not None and rho is not None:
            raise ValueError("give either rate or rho, not both")
        owner = type(self).__name__
        rate = PROBABILITY_RATE.check(rate, owner)
        # (the rate Params convert "auto" to an AdaptiveRate)
        self.rate = cast("float | AdaptiveRate | None", RATE.default if rate is None and rho is None else rate)
        self.rho = RHO.check(rho, owner)
        self.refit_leaves = refit_leaves_of(self, refit_leaves)

    @property
    def needs_leaves(self) -> bool:  # type: ignore[override]
        """An adaptive rate reads the newest tree's leaves (:mod:`.adaptive`)."""
        return isinstance(self.rate, AdaptiveRate)

    def start_run(self) -> AdaptiveRateState | None:
        """An adaptive rate's controller state for the run (None for a fixed rate or ``rho``)."""
        return self.rate.start_run() if isinstance(self.rate, AdaptiveRate) else None

    def _fixed_rate(self) -> float | None:
        """The rate outside a run (``probabilities...``): an adaptive rate's start."""
        return self.rate.start if isinstance(self.rate, AdaptiveRate) else self.rate

    @abstractmethod
    def importance(self, grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
        """Non-negative importance score ``s_i`` per row, shape (n,)."""

    def importance_from_state(self, state: SamplingState) -> np.ndarray:
        """Importance for this iteration; override when it needs more than ``grad``/``hess``."""
        return self.importance(state.grad, state.hess)

    def fitting_gradient(self, state: SamplingState) -> np.ndarray:
        """Gradient the tree fits before reweighting (the plain gradient by default)."""
        return state.grad

    # ------------------------------------------------------------ probabilities

    def _compiled_kind(self) -> int | None:
        """The built-in kernel computing this sampler's importance, or None for a user's own."""
        cls = type(self)
        owner = defining_class(cls, "importance")
        kind = None if owner is None else _IMPORTANCE_KERNELS.get(owner)
        from_state = defining_class(cls, "importance_from_state")
        if kind is None or from_state not in (ProbabilitySampler, owner):
            return None
        return kind

    def _fused_as(self, kind: int, stats: int) -> tuple[int, int] | None:
        """``(stats, kind)`` for a built-in sampler whose importance is the compiled ``kind``
        and whose draw is :meth:`sample` here; None for a subclass that changes either (it
        takes the unfused path)."""
        if self._compiled_kind() != kind or defining_class(type(self), "sample") is not ProbabilitySampler:
            return None
        return stats, kind

    def _importance_of(self, g: np.ndarray, h: np.ndarray, kind: int,
                       state: SamplingState | None = None) -> rate_solve.Importance:
        """A built-in importance over ``(n, K)`` arrays; subclasses add their parameters
        (MVS's lambda) or read more of ``state`` (LossBased's per-row loss)."""
        return rate_solve.Importance(kind, g.shape[0], g, h)

    def _importance_of_state(self, state: SamplingState) -> rate_solve.Importance:
        g, h = state.kernel_arrays()
        kind = self._compiled_kind()
        if kind is None:
            return rate_solve.buffer_importance(self.importance_from_state(state), state.num_rows,
                                              type(self).__name__, g, h)
        return self._importance_of(g, h, kind, state)

    def _solve(self, imp: rate_solve.Importance) -> rate_solve.Solution:
        return rate_solve.solve(imp, self._fixed_rate(), self.rho, type(self).__name__)

    def probabilities_from_importance(self, importance: np.ndarray) -> np.ndarray:
        """``p_i = min(1, rho * s_i)`` with ``rho`` fixed or solved for the target rate."""
        arr = np.asarray(importance)
        n = arr.shape[0] if arr.ndim == 1 else -1
        if n < 0:
            raise ValueError(f"{type(self).__name__}: importance must be 1-D, got shape {arr.shape}")
        return rate_solve.probabilities(self._solve(rate_solve.buffer_importance(arr, n, type(self).__name__)))

    def probabilities(self, grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
        """Inclusion probability ``p_i`` of every row, shape (n,)."""
        kind = self._compiled_kind()
        if kind is None or kind == kc.LOSS:
            return self.probabilities_from_importance(self.importance(grad, hess))
        g, h = buffers.as_rows(grad), buffers.as_rows(hess)
        return rate_solve.probabilities(self._solve(self._importance_of(g, h.astype(g.dtype, copy=False), kind)))

    def probabilities_from_state(self, state: SamplingState) -> np.ndarray:
        """Inclusion probability ``p_i`` of every row in the draw :meth:`sample` makes for ``state``."""
        imp = self._importance_of_state(state)
        return rate_solve.probabilities(rate_solve.solve(imp, self._rate_of(state), self.rho, type(self).__name__))

    def _rate_of(self, state: SamplingState) -> float | None:
        """This iteration's rate: the fixed one, or the adaptive rate's for the state's run."""
        if isinstance(self.rate, AdaptiveRate):
            return self.rate.rate_for(rate_state(self, state), state.iteration)
        return self.rate

    # ------------------------------------------------------------ the draw

    def _fit(self, state: SamplingState) -> draw.Fit:
        """The fitting gradient as the gather kernel takes it (the plain gradient here)."""
        return draw.Fit(state.kernel_arrays()[0])

    def _fit_of_state(self, state: SamplingState) -> draw.Fit:
        owner = defining_class(type(self), "fitting_gradient")
        if owner in _FIT_KERNELS:  # a built-in fitting gradient: computed for drawn rows only
            return cast("type[ProbabilitySampler]", owner)._fit(self, state)
        source = np.asarray(self.fitting_gradient(state))
        if source.shape != state.shape:
            raise ValueError(f"{type(self).__name__}.fitting_gradient returned shape {source.shape}; "
                             f"expected {state.shape}")
        return draw.Fit(buffers.as_rows(source))

    def sample(self, state: SamplingState, rng: np.random.Generator | None) -> Sample:
        imp = self._importance_of_state(state)
        workspace = buffers.workspace_of(self)
        # The previous iteration's rho starts this one's solve (same answer, fewer passes);
        # only within one run (the iterations follow each other), whatever the sampler did before.
        previous = cast("tuple[int, float] | None", workspace.value("solved_rho"))
        start = previous[1] if previous is not None and previous[0] == state.iteration - 1 else None
        solution = rate_solve.solve(imp, self._rate_of(state), self.rho, type(self).__name__, start=start,
                                  statistics=state.statistics, workspace=workspace)
        workspace.keep("solved_rho", None if solution.solved_rho is None else (state.iteration, solution.solved_rho))
        h = state.kernel_arrays()[1]
        indices, grad, hess = draw.draw_sample(solution, h, self._fit_of_state(state), rng, workspace,
                                                   state.one_dimensional, state.draw_key)
        if isinstance(self.rate, AdaptiveRate):
            observe_sample(self, state, indices, grad, hess)
        return Sample(indices, grad, hess)


#: The built-in samplers' compiled kernels, by the class that registered them
#: (:meth:`ProbabilitySampler.__init_subclass__`): its importance kind, and whether its
#: ``_fit`` stands for its ``fitting_gradient``.
_IMPORTANCE_KERNELS: dict[type, int] = {}
_FIT_KERNELS: set[type] = {ProbabilitySampler}
