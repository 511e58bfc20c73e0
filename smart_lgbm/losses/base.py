"""The loss protocol shared by every objective the engine can boost.

A loss is a small, stateless description of an objective (its hyper-parameters only).
The rows it is evaluated on travel separately in a :class:`Target` so that one loss
object can serve the training set and every validation set, and so that losses which
need per-data-set precomputation (LambdaRank's inverse max-DCG per query) can cache it
on the target instead of on themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np


@dataclass
class Target:
    """The rows a loss is evaluated on: labels, optional weights and query sizes.

    Parameters
    ----------
    label : ndarray of shape (n,)
        Labels as LightGBM stores them (float32 values, held as float64).
    weight : ndarray of shape (n,) or None
        Instance weights, or None for unit weights.
    group : ndarray of shape (n_queries,) or None
        Query sizes for ranking losses (LightGBM's ``group``), or None.
    cache : dict
        Scratch space a loss may use for precomputation tied to these rows.
    """

    label: np.ndarray
    weight: np.ndarray | None = None
    group: np.ndarray | None = None
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)  # keys: names, or tuples of them

    @property
    def num_rows(self) -> int:
        return int(self.label.shape[0])

    @property
    def query_boundaries(self) -> np.ndarray | None:
        """Cumulative query boundaries ``[0, s_0, s_0 + s_1, ...]`` or None."""
        if self.group is None:
            return None
        if "query_boundaries" not in self.cache:
            self.cache["query_boundaries"] = np.concatenate(
                ([0], np.cumsum(self.group, dtype=np.int64))
            )
        return self.cache["query_boundaries"]


class Loss(ABC):
    """A twice-differentiable loss on raw scores.

    Raw scores have shape ``(n,)`` when ``num_model_per_iteration == 1`` and ``(n, K)``
    otherwise (one column per tree of an iteration, as LightGBM's multiclass objective).

    Subclasses implement :meth:`gradient_hessian`; the others have sensible defaults.
    """

    #: Trees fitted per boosting iteration (K for multiclass, else 1).
    num_model_per_iteration: int = 1
    #: LightGBM's name of the equivalent built-in objective, or None for a custom loss.
    lightgbm_objective: str | None = None
    #: Metric LightGBM would report by default for that objective.
    default_metric: str | None = None
    #: Whether the rows must come in whole queries (ranking losses).
    needs_group: bool = False

    def validate(self, target: Target) -> None:  # noqa: B027 (an optional hook: accepts anything)
        """Raise ``ValueError`` if the labels (or groups) cannot be used with this loss."""

    def lightgbm_params(self) -> dict[str, Any]:
        """Parameters that make stock LightGBM train the same objective."""
        return {"objective": self.lightgbm_objective} if self.lightgbm_objective else {}

    def model_objective_line(self) -> str | None:
        """What a stock model file writes after ``objective=`` (None: no line)."""
        return self.lightgbm_objective

    def init_score(self, target: Target) -> np.ndarray:
        """Constant raw score to start boosting from (LightGBM's ``boost_from_average``).

        Returns an array of shape ``(K,)``; zeros means "start from 0".
        """
        return np.zeros(self.num_model_per_iteration)

    def describe(self) -> str:
        """How error messages name this loss (e.g. ``"loss Huber"``)."""
        return f"loss {type(self).__name__}"

    @abstractmethod
    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        """First and second derivative of the loss at ``raw``, instance weights applied.

        Returns float64 arrays of the same shape as ``raw``.
        """

    def compute_gradients(self, raw: np.ndarray, target: Target, grad: np.ndarray, hess: np.ndarray) -> None:
        """Write ``g`` and ``h`` of every row, instance weights applied, into float32 buffers.

        This is what the engine calls each iteration (the buffers are reused).  The default
        calls :meth:`gradient_hessian` and checks its output for *every* row, so that a user
        loss returning NaN or infinite values is caught here, naming the loss, whichever
        rows a sampler draws later.  The built-in losses override it with compiled kernels
        whose float32 values are LightGBM's own gradients bit for bit.

        Parameters
        ----------
        raw : ndarray of float64, shape (n,) or (n, K)
            Current raw scores.
        target : Target
            Labels, weights and groups of the same rows.
        grad, hess : ndarray of float32, C-contiguous, same shape as ``raw``
            Outputs.

        Raises
        ------
        ValueError
            If ``gradient_hessian`` returns arrays of the wrong shape, or any NaN or
            infinite value (values beyond float32's range count as infinite).
        """
        check_gradient_buffers(raw, grad, hess)
        kernel = self._compiled("gradient_hessian")
        if kernel is not None:
            kernel(raw, target, grad, hess)
            return
        values = self.gradient_hessian(raw, target)
        if not isinstance(values, tuple) or len(values) != 2:
            raise TypeError(f"{self.describe()} must return a (gradient, hessian) pair, got {type(values).__name__}")
        for name, value, out in (("gradient", values[0], grad), ("hessian", values[1], hess)):
            try:
                value = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{self.describe()} returned a {name} that is not numeric: {exc}") from None
            if value.shape != out.shape:
                raise ValueError(
                    f"{self.describe()} returned a {name} of shape {value.shape}; expected {out.shape} "
                    "(the shape of the raw scores)"
                )
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
                np.copyto(out, value, casting="unsafe")
            bad = count_nonfinite(out)
            if bad:
                raise ValueError(
                    f"{self.describe()} returned {bad} NaN or infinite {name} value(s); every row's "
                    f"{name} must be finite (and within float32 range, as LightGBM stores them)"
                )

    def loss(self, raw: np.ndarray, target: Target) -> np.ndarray:
        """Per-row loss of shape ``(n,)``, instance weights applied (for loss-based sampling)."""
        if self._compiled("loss") is None:
            raise NotImplementedError(f"{type(self).__name__} does not define a per-row loss")
        out = np.empty(target.num_rows)
        self.compute_loss(raw, target, out)
        return out

    def compute_loss(self, raw: np.ndarray, target: Target, out: np.ndarray) -> None:
        """Write :meth:`loss` of every row into the float64 buffer ``out`` of shape ``(n,)``.

        The built-in losses run compiled kernels (LossBased sampling calls this each
        iteration with a reused buffer); otherwise :meth:`loss` is called and its shape checked.
        """
        if out.shape != (target.num_rows,) or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 array of shape ({target.num_rows},)")
        kernel = self._compiled("loss")
        if kernel is not None:
            kernel(raw, target, out)
            return
        values = np.asarray(self.loss(raw, target), dtype=np.float64)
        if values.shape != out.shape:
            raise ValueError(f"{self.describe()} returned a per-row loss of shape {values.shape}; expected {out.shape}")
        out[...] = values

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Map raw scores to what ``Booster.predict`` returns for the stock objective."""
        return raw

    def _fused_loss(self) -> tuple[str, float] | None:
        """``(name, parameter)`` of the row function the engine's fused pass
        (:mod:`smart_lgbm._engine.sweep`) computes this loss's gradients with, or None: the engine
        calls :meth:`compute_gradients` (the unfused path).  Declared by the built-in
        losses; a user loss keeps None."""
        return None

    def __init_subclass__(cls, kernels: dict[str, str] | None = None, **kwargs: Any) -> None:
        """Register ``cls``'s compiled kernels: ``kernels`` maps a Python method
        (``"gradient_hessian"``, ``"loss"``) to the name of the method of ``cls`` that
        computes the same values compiled (the built-in losses; see :meth:`_compiled`).

        Explicit, so that renaming a method cannot silently send a built-in loss down the
        Python path: a registered kernel or method that ``cls`` lacks is refused here, and
        ``tests/test_kernel_registration.py`` checks that every built-in loss trains
        without its Python methods."""
        super().__init_subclass__(**kwargs)
        if kernels is None:
            return
        for method, kernel in kernels.items():
            if method not in _KERNEL_METHODS:
                raise TypeError(f"{cls.__name__}: kernels can stand for {sorted(_KERNEL_METHODS)}, not {method!r}")
            if kernel not in vars(cls) or not callable(getattr(cls, method, None)):
                raise TypeError(f"{cls.__name__} registers {kernel!r} for {method!r} but does not define both")
        _REGISTERED_KERNELS[cls] = dict(kernels)

    def _fused_as(self, owner: type, name: str, param: float) -> tuple[str, float] | None:
        """``(name, param)`` when the gradients are ``owner``'s registered compiled kernel's,
        else None (a subclass that changes them takes the unfused path)."""
        cls = type(self)
        if (_registrant(cls, "gradient_hessian") is not owner or defining_class(cls, "compute_gradients") is not Loss
                or self._compiled("gradient_hessian") is None):
            return None
        return name, param

    def _compiled(self, method: str) -> Any:
        """The bound compiled kernel registered for ``method`` (see :meth:`__init_subclass__`), or None.

        None for a user loss, and for a subclass of a built-in loss that overrides ``method``
        below the class that registered the kernel: its own method is used instead.
        """
        cls = type(self)
        registrant, owner = _registrant(cls, method), defining_class(cls, method)
        if registrant is None or owner is None or not issubclass(registrant, owner):
            return None
        return getattr(self, _REGISTERED_KERNELS[registrant][method])

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"


def apply_weight(values: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    """Multiply per-row values (shape ``(n,)`` or ``(n, K)``) by instance weights in place."""
    if weight is None:
        return values
    if values.ndim == 1:
        values *= weight
    else:
        values *= weight[:, None]
    return values


def count_nonfinite(values: np.ndarray) -> int:
    """Number of NaN or infinite entries of ``values``."""
    # One vectorised test, counted only when it fails: faster than a sum of the values
    # (no floating-point state to guard: nothing here can overflow) and exact.
    finite = np.isfinite(values)
    if finite.all():
        return 0
    return int(np.size(values) - np.count_nonzero(finite))


def check_finite(name: str, values: np.ndarray) -> None:
    """Raise ``ValueError`` naming ``name`` if any entry is NaN or infinite."""
    bad = count_nonfinite(values)
    if bad:
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s); all must be finite")


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_float32_finite(name: str, values: np.ndarray) -> None:
    """Raise ``ValueError`` naming ``name`` unless every entry is finite and stays finite as
    the float32 LightGBM takes gradients in (a finite float64 beyond float32's range would
    become infinite in the cast and wreck the tree silently)."""
    check_finite(name, values)
    if values.dtype.itemsize > 4 and values.size:
        biggest = float(np.max(np.abs(values)))
        with np.errstate(over="ignore"):
            if not np.isfinite(np.float32(biggest)):
                raise ValueError(f"{name} contains values beyond float32's range (|value| up to {biggest:g} > "
                                 f"{_FLOAT32_MAX:g}); LightGBM takes them as float32, where they would be infinite")


#: The Python methods a compiled kernel can stand for, and the kernels registered for them,
#: by the class that registered them (:meth:`Loss.__init_subclass__`).
_KERNEL_METHODS = frozenset({"gradient_hessian", "loss"})
_REGISTERED_KERNELS: dict[type, dict[str, str]] = {}


def _registrant(cls: type, method: str) -> type | None:
    """The nearest class in ``cls``'s MRO that registered a compiled kernel for ``method``."""
    for klass in cls.__mro__:
        if method in _REGISTERED_KERNELS.get(klass, ()):
            return klass
    return None


def defining_class(cls: type, name: str) -> type | None:
    """The class in ``cls``'s MRO whose body defines attribute ``name`` (None if none does)."""
    return next((c for c in cls.__mro__ if name in vars(c)), None)


def check_gradient_buffers(raw: np.ndarray, grad: np.ndarray, hess: np.ndarray) -> None:
    """Refuse output buffers ``compute_gradients`` cannot write into (shape, dtype, layout)."""
    for name, buf in (("grad", grad), ("hess", hess)):
        if not isinstance(buf, np.ndarray) or buf.dtype != np.float32 or not buf.flags.c_contiguous:
            raise TypeError(f"{name} must be a C-contiguous float32 numpy array")
        if buf.shape != raw.shape:
            raise ValueError(f"{name} has shape {buf.shape}; expected the raw score shape {raw.shape}")
        if not buf.flags.writeable:
            raise ValueError(f"{name} must be writeable")


def loss_buffer_arrays(raw: np.ndarray, target: Target, num_class: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(raw, label, weight)`` as the compiled loss kernels take them.

    ``raw`` float64 C-contiguous, ``(n,)`` for one tree per iteration, ``(n, K)`` otherwise;
    ``label`` float64; ``weight`` float64 or an empty array for unit weights.  No copies
    when the inputs already have that form.
    """
    n = target.num_rows
    shape = (n,) if num_class == 1 else (n, num_class)
    raw = np.ascontiguousarray(raw, dtype=np.float64)
    if raw.shape != shape:
        raise ValueError(f"raw must have shape {shape}, got {raw.shape}")
    label = np.ascontiguousarray(target.label, dtype=np.float64)
    weight = _NO_WEIGHT if target.weight is None else np.ascontiguousarray(target.weight, dtype=np.float64)
    return raw, label, weight


_NO_WEIGHT = np.empty(0, dtype=np.float64)

#: LightGBM's ``kEpsilon`` (include/LightGBM/meta.h): the *float* literal ``1e-15f``, so the
#: clamps of its initial scores use float32(1e-15) = 1.0000000036274937e-15, not 1e-15.
K_EPSILON = float(np.float32(1e-15))


@numba.njit(cache=True)
def _row_by_row_sums(values: np.ndarray, weight: np.ndarray) -> tuple[float, float]:  # pragma: no cover - compiled
    suml = 0.0
    sumw = 0.0
    if weight.shape[0] == 0:
        for i in range(values.shape[0]):
            suml += values[i]
        return suml, float(values.shape[0])
    for i in range(values.shape[0]):
        suml += values[i] * weight[i]
        sumw += weight[i]
    return suml, sumw


def weighted_sums(values: np.ndarray, weight: np.ndarray | None) -> tuple[float, float]:
    """``(sum(values * weight), sum(weight))`` in double, added row by row.

    LightGBM's ``BoostFromScore`` adds the float32 labels (times the float32 weights) into a
    double one row after another (``deterministic=true`` or one thread); numpy's pairwise
    or BLAS sums round differently in the last bits, and those bits are the initial score
    folded into the first tree.  Without weights the second sum is the row count.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    weight = _NO_WEIGHT if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
    suml, sumw = _row_by_row_sums(values, weight)
    return float(suml), float(sumw)
