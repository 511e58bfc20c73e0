"""Every built-in loss and sampler takes its registered compiled path (issue #20, item 5).

The compiled kernels and the Python methods they stand for give the same values, so a
built-in that silently fell back to its Python method (a renamed method, a lost
registration) would train the same model, only slower: no other test would notice.  Here
the Python methods raise, so such a fallback fails the training.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm.losses.base import Loss
from smart_lgbm.losses.binary import BinaryLogloss
from smart_lgbm.losses.lambdarank import LambdaRank
from smart_lgbm.losses.multiclass import MulticlassSoftmax
from smart_lgbm.losses.regression import SquaredError
from smart_lgbm.samplers import base as sampler_base
from smart_lgbm.samplers.base import ProbabilitySampler, SamplingState

LOSSES = (BinaryLogloss, SquaredError, MulticlassSoftmax, LambdaRank)
PROBABILITY_SAMPLERS = (sl.FirstOrder, sl.SecondOrder, sl.MVS, sl.LossBased)

SAMPLERS = {
    "full": lambda: sl.Full(),
    "uniform": lambda: sl.Uniform(rate=0.3),
    "weight_trimming": lambda: sl.WeightTrimming(alpha=0.1),
    "first_order": lambda: sl.FirstOrder(rate=0.3),
    "second_order": lambda: sl.SecondOrder(rate=0.3),
    "second_order_anchored": lambda: sl.SecondOrder(rate=0.3, anchor_lag=1, eta=0.5),
    "mvs": lambda: sl.MVS(rate=0.3),
    "mvs_fixed_reg": lambda: sl.MVS(rate=0.3, reg=0.5),
    "loss_based": lambda: sl.LossBased(rate=0.3),
}


def _refuse(name):
    def refused(*args, **kwargs):
        raise AssertionError(f"the Python {name} was called: a built-in lost its compiled path")

    return refused


@pytest.fixture
def python_paths_refused(monkeypatch):
    """Every Python method a built-in's compiled kernel stands for raises, and so do the
    state's float64 gradient copies (what the Python protocol reads)."""
    # replaced where the package defines them, so that no class's layout changes
    for classes, names in (((Loss, *LOSSES), ("gradient_hessian", "loss")),
                           ((ProbabilitySampler, *PROBABILITY_SAMPLERS),
                            ("importance", "importance_from_state", "fitting_gradient"))):
        for cls in classes:
            for name in names:
                if name in vars(cls) and not getattr(vars(cls)[name], "__isabstractmethod__", False):
                    monkeypatch.setattr(cls, name, _refuse(f"{cls.__name__}.{name}"))
    for name in ("grad", "hess"):
        monkeypatch.setattr(SamplingState, name, property(_refuse(f"SamplingState.{name}")))


def _data(objective):
    rng = np.random.default_rng(3)
    n = 1200
    X = rng.normal(size=(n, 6))
    score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=n)
    params = {"objective": objective, "verbosity": -1, "num_leaves": 7, "min_data_in_leaf": 5, "seed": 1}
    group = None
    if objective == "binary":
        y = (score > 0).astype(float)
    elif objective == "regression":
        y = score
    elif objective == "multiclass":
        y = np.digitize(score, [-0.7, 0.7]).astype(float)
        params["num_class"] = 3
    else:
        y = np.clip(np.round(score + 1.5), 0, 4)
        group = [20] * (n // 20)
    return params, lgb.Dataset(X, y, group=group)


@pytest.mark.parametrize("objective", ["binary", "regression", "multiclass", "lambdarank"])
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_builtins_train_without_their_python_methods(python_paths_refused, objective, name):
    if objective == "lambdarank" and name in ("weight_trimming", "second_order_anchored"):
        pytest.skip("not a combination the ranking docs offer")  # (both run the same kernels as binary)
    params, data = _data(objective)
    booster = sl.train(params, data, 4, sampler=SAMPLERS[name]())
    assert booster.num_trees() >= 1


def test_the_refusal_catches_a_python_fallback(python_paths_refused):
    """The check above can fail: a built-in whose registration is gone trains through its
    Python importance, and that raises."""

    class Unregistered(sl.FirstOrder):
        def importance(self, grad, hess):  # overrides below the registered class: Python path
            return np.abs(grad)

    Unregistered.importance = _refuse("Unregistered.importance")
    params, data = _data("binary")
    with pytest.raises(AssertionError, match="was called"):
        sl.train(params, data, 2, sampler=Unregistered(rate=0.3))


def test_every_builtin_is_registered():
    assert {cls: sampler_base._IMPORTANCE_KERNELS.get(cls) is not None for cls in PROBABILITY_SAMPLERS} == {
        cls: True for cls in PROBABILITY_SAMPLERS}
    for cls in LOSSES:
        loss = cls(num_class=3) if cls is MulticlassSoftmax else cls()
        assert loss._compiled("gradient_hessian") is not None, cls
        assert loss._compiled("loss") is not None, cls


def test_user_subclasses_keep_the_python_protocol():
    class Doubled(BinaryLogloss):
        def gradient_hessian(self, raw, target):
            g, h = super().gradient_hessian(raw, target)
            return 2 * g, 2 * h

    class Squared(sl.FirstOrder):
        def importance(self, grad, hess):
            return np.abs(grad) ** 2

    assert Doubled()._compiled("gradient_hessian") is None
    assert Doubled()._compiled("loss") is not None  # (its loss is still the registered one)
    assert Squared()._compiled_kind() is None
    assert sl.FirstOrder()._compiled_kind() is not None


def test_registration_refuses_what_the_class_lacks():
    with pytest.raises(TypeError, match="does not define both"):
        class NoKernel(Loss, kernels={"gradient_hessian": "_gradient_kernel"}):  # noqa: F841
            def gradient_hessian(self, raw, target):
                return raw, raw

            def init_score(self, target):
                return np.zeros(target.num_rows)

    with pytest.raises(TypeError, match="importance_kernel"):
        class NoImportance(ProbabilitySampler, importance_kernel=0):  # noqa: F841
            pass

    with pytest.raises(TypeError, match="fit_kernel"):
        class NoFit(sl.FirstOrder, fit_kernel=True):  # noqa: F841
            pass
