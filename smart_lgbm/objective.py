"""The drop-in for existing ``lightgbm.train`` jobs: a custom objective that samples.

``SmartObjective`` goes where ``params["objective"]`` goes.  Each iteration it computes the
loss's gradients for all rows, draws the sampler's sample (with the engine's per-iteration
random generator, so the same seed and the same scores give the same sample as
:func:`smart_lgbm.train`) and returns the importance-reweighted, regularised ``g~``/``h~``
with zeros for the rows not drawn.

This gives SMART's estimator but **not its speed-up**: LightGBM still builds histograms
over every row (zero-gradient rows cost full price and still count towards
``min_data_in_leaf``).  For the speed-up use :func:`smart_lgbm.train`, which hands the tree
learner only the sampled rows.
"""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm.callback import CallbackEnv

from .engine import iteration_rng
from .losses.base import Loss, Target
from .params import canonicalize, resolve_loss
from .samplers import GradientHistory, Sample, Sampler, SamplingState, make_sampler


class SmartObjective:
    """Custom objective ``(preds, train_data) -> (grad, hess)`` that samples rows.

    Parameters
    ----------
    objective : str or Loss, default="binary"
        A LightGBM objective name (``binary``, ``regression``, ``multiclass``,
        ``lambdarank``) or a :class:`smart_lgbm.losses.Loss`.
    sampler : Sampler or str, optional
        Default ``FirstOrder(rate=0.1)``.
    seed : int, default=0
        Seeds the per-iteration random generator exactly as the engine's ``seed``.
    **objective_params
        LightGBM parameters of the objective (``sigmoid``, ``num_class``, ``label_gain``...).

    Attributes
    ----------
    callback : callable
        A ``before_iteration`` callback for ``lightgbm.train(callbacks=[...])`` that tells the
        objective the iteration number (needed for reproducible seeding across runs) and,
        for :class:`SecondOrder`, the leaves of the newest tree.  Without it the objective
        counts its own calls.
    record : dict of lists
        Per iteration ``num_sampled`` and ``sampling_rate``.
    last_sample : Sample or None
        The most recent sample (indices and fitting gradients).

    Notes
    -----
    LightGBM does not boost from the average with a custom objective; as with any custom
    objective, set the Dataset's ``init_score`` (see :meth:`init_score`) to start where the
    stock objective would.  SecondOrder with ``eta > 0`` needs each row's leaf in the newest
    tree, which this path can only get by predicting on the raw data: build the Dataset
    with ``free_raw_data=False``.

    Examples
    --------
    >>> obj = SmartObjective("binary", FirstOrder(rate=0.2), seed=1)          # doctest: +SKIP
    >>> booster = lgb.train({"objective": obj}, dtrain, 100, callbacks=[obj.callback])  # doctest: +SKIP
    """

    def __init__(self, objective: str | Loss = "binary", sampler: Sampler | str | None = None, *, seed: int = 0,
                 **objective_params: Any) -> None:
        self.loss = resolve_loss(canonicalize({"objective": objective, **objective_params}))
        self.sampler = make_sampler(sampler if sampler is not None else "first_order")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        self.record: dict[str, list] = {"num_sampled": [], "sampling_rate": []}
        self.last_sample: Sample | None = None
        self._history = GradientHistory(maxlen=self.sampler.history_length)
        self._iteration: int | None = None
        self._calls = 0
        self._target: Target | None = None
        self._target_of: tuple | None = None

        def callback(env: CallbackEnv) -> None:
            self._iteration = env.iteration
            if self.sampler.needs_leaves and env.iteration > 0:
                self._history.leaves = self._newest_leaves(env)

        callback.before_iteration = True  # type: ignore[attr-defined]
        callback.order = 0  # type: ignore[attr-defined]
        self.callback = callback

    def __deepcopy__(self, memo: dict) -> "SmartObjective":
        # lightgbm.train deep-copies params; the objective must stay the object whose
        # ``callback`` and ``record`` the caller holds.
        return self

    def init_score(self, train_data: lgb.Dataset) -> np.ndarray:
        """Initial scores the stock objective would start from (``boost_from_average``)."""
        target = self._target_for(train_data.get_label(), train_data.get_weight(), train_data.get_group())
        scores = np.tile(self.loss.init_score(target), (target.num_rows, 1))
        return scores[:, 0] if self.loss.num_model_per_iteration == 1 else scores

    def _target_for(self, label: Any, weight: Any, group: Any) -> Target:
        # lightgbm hands the same label array every iteration: validate it once.  The arrays
        # themselves are kept and compared by identity; comparing id()s alone is wrong once
        # an array is freed and a new one is allocated at the same address.
        key = (label, weight, group)
        if (self._target is None or self._target_of is None
                or any(a is not b for a, b in zip(self._target_of, key))):
            self._target = Target(
                label=np.asarray(label, dtype=np.float32).astype(np.float64),
                weight=None if weight is None else np.asarray(weight, dtype=np.float32).astype(np.float64),
                group=None if group is None else np.asarray(group, dtype=np.int64),
            )
            self.loss.validate(self._target)
            self._target_of = key
        return self._target

    def _newest_leaves(self, env: CallbackEnv) -> np.ndarray:
        booster = env.model
        data = booster.train_set.data if booster.train_set is not None else None
        if data is None or isinstance(data, (str,)):
            raise ValueError(
                "SecondOrder with eta > 0 needs each row's leaf in the newest tree; build the training "
                "Dataset with free_raw_data=False so that SmartObjective can predict leaves on it"
            )
        leaves = booster.predict(data, pred_leaf=True, start_iteration=env.iteration - 1, num_iteration=1)
        leaves = np.asarray(leaves, dtype=np.int64)
        return leaves[:, 0] if self.loss.num_model_per_iteration == 1 else leaves

    def __call__(self, preds: np.ndarray, train_data: lgb.Dataset) -> tuple[np.ndarray, np.ndarray]:
        """Sampled, reweighted gradients for ``lightgbm.train`` (zeros for rows not drawn)."""
        return self._sampled_gradients(preds, train_data.get_label(), train_data.get_weight(), train_data.get_group())

    def sklearn(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None,
                group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The same objective in the signature of LightGBM's scikit-learn API.

        Use as ``LGBMClassifier(objective=obj.sklearn)``.
        """
        return self._sampled_gradients(y_pred, y_true, weight, group)

    def _sampled_gradients(self, preds: Any, label: Any, weight: Any, group: Any) -> tuple[np.ndarray, np.ndarray]:
        target = self._target_for(label, weight, group)
        iteration = self._iteration if self._iteration is not None else self._calls
        self._calls += 1
        raw = np.asarray(preds, dtype=np.float64)
        grad, hess = self.loss.gradient_hessian(raw, target)
        state = SamplingState(iteration, grad, hess, raw, self.loss, target, self._history)
        sample = self.sampler.sample(state, iteration_rng(self.seed, iteration))
        self._history.push_gradient(grad)
        self.last_sample = sample
        self.record["num_sampled"].append(sample.size)
        self.record["sampling_rate"].append(sample.size / target.num_rows)
        out_g = np.zeros_like(grad)
        out_h = np.zeros_like(hess)
        out_g[sample.indices] = sample.grad
        out_h[sample.indices] = sample.hess
        return out_g, out_h
