"""User-defined losses from plain gradient/hessian functions."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .base import Loss, Target, apply_weight

GradHessFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


class CustomLoss(Loss):
    """Any twice-differentiable loss given as functions of ``(label, raw)``.

    Parameters
    ----------
    grad_hess : callable
        ``grad_hess(label, raw) -> (g, h)`` with arrays shaped like ``raw``;
        instance weights are applied by the loss, not by the function.
    loss : callable, optional
        ``loss(label, raw) -> per-row loss``; needed only by ``LossBased`` sampling.
    init_score : float, default=0.0
        Constant raw score to start from.
    transform : callable, optional
        Maps raw scores to predictions for metrics; identity by default.  Saved models
        carry no ``objective=`` line, so ``Booster.predict`` returns raw scores.
    name : str, default="custom"
        Shown in logs and reports.

    Examples
    --------
    A pseudo-Huber loss:

    >>> import numpy as np
    >>> def pseudo_huber(y, f, d=1.0):
    ...     r = f - y
    ...     s = np.sqrt(1 + (r / d) ** 2)
    ...     return r / s, 1 / s**3
    >>> loss = CustomLoss(pseudo_huber)
    """

    def __init__(
        self,
        grad_hess: GradHessFn,
        loss: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
        init_score: float = 0.0,
        transform: Callable[[np.ndarray], np.ndarray] | None = None,
        name: str = "custom",
    ) -> None:
        if not callable(grad_hess):
            raise TypeError(f"grad_hess must be callable, got {type(grad_hess).__name__}")
        if loss is not None and not callable(loss):
            raise TypeError(f"loss must be callable or None, got {type(loss).__name__}")
        if transform is not None and not callable(transform):
            raise TypeError(f"transform must be callable or None, got {type(transform).__name__}")
        self.grad_hess = grad_hess
        self.loss_fn = loss
        self.init_value = float(init_score)
        self.transform_fn = transform
        self.name = str(name)

    def describe(self) -> str:
        return f"custom loss {self.name!r}"

    def init_score(self, target: Target) -> np.ndarray:
        return np.array([self.init_value])

    def gradient_hessian(self, raw: np.ndarray, target: Target) -> tuple[np.ndarray, np.ndarray]:
        grad, hess = self.grad_hess(target.label, raw)
        grad = np.array(grad, dtype=np.float64)  # copy: weights are applied in place
        hess = np.array(hess, dtype=np.float64)
        if grad.shape != raw.shape or hess.shape != raw.shape:
            raise ValueError(
                f"grad_hess of {self.name!r} returned shapes {grad.shape} and {hess.shape}; "
                f"both must equal the raw score shape {raw.shape}"
            )
        return apply_weight(grad, target.weight), apply_weight(hess, target.weight)

    def loss(self, raw: np.ndarray, target: Target) -> np.ndarray:
        if self.loss_fn is None:
            raise ValueError(f"custom loss {self.name!r} has no loss function; pass loss=... to CustomLoss")
        return apply_weight(np.array(self.loss_fn(target.label, raw), dtype=np.float64), target.weight)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return raw if self.transform_fn is None else self.transform_fn(raw)
