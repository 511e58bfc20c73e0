"""The sampler specs are the one source of sampler names and parameters.

* every constrained parameter of every built-in sampler refuses what its constraints refuse,
  with a message naming it and what it accepts, and takes its boundary values;
* the constructors' signatures are the specs' parameters and defaults;
* the registry, a comparison config and the estimators accept exactly the specs' names and
  options: a fake spec added to the table appears in all three (derived, not copied).
"""

from __future__ import annotations

import inspect
import math
import re
from numbers import Integral, Real

import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._validation import Boolean, InstanceOf, Interval, NoneValue, Options, Param
from smart_lgbm.compare import config as cfg
from smart_lgbm.samplers import Sample, Sampler, registry
from smart_lgbm.samplers.registry import SamplerSpec
from smart_lgbm.samplers.spec import RATE

SPECS = list(registry.SPECS.values())
CASES = [(spec, param) for spec in SPECS for param in spec.params]
IDS = [f"{spec.name}-{param.name}" for spec, param in CASES]


# --------------------------------------------------------------------------- the constraints

def test_interval_describes_and_checks_its_ends():
    real = Param("x", (Interval(Real, 0, 1, "right"),), 0.5, "")
    assert real.accepted == "a number in (0, 1]"
    assert real.check(1) == 1.0 and isinstance(real.check(1), float)
    with pytest.raises(ValueError, match=r"^x must be a number in \(0, 1\], got 0$"):
        real.check(0)
    with pytest.raises(TypeError, match=r"^owner: x must be a number in \(0, 1\], got boolean True$"):
        real.check(True, "owner")
    positive = Param("y", (Interval(Real, 0, None, "neither"),), 1.0, "")
    assert positive.accepted == "a finite number > 0"
    for bad in (math.inf, math.nan, -1e-300, 0.0):
        with pytest.raises(ValueError, match="y must be a finite number > 0"):
            positive.check(bad)
    assert positive.check(np.float32(2.0)) == 2.0
    lag = Param("lag", (Interval(Integral, 1, None, "left"), NoneValue()), None, "")
    assert lag.accepted == "an integer >= 1 or None"
    assert lag.check(np.int64(3)) == 3 and type(lag.check(np.int64(3))) is int and lag.check(None) is None
    with pytest.raises(TypeError, match="lag must be an integer >= 1 or None, got number 1.5"):
        lag.check(1.5)


def test_options_and_instances():
    param = Param("rate", (Options(("auto",)), InstanceOf(sl.AdaptiveRate)), "auto", "")
    assert param.accepted == '"auto" or an AdaptiveRate'
    assert param.check("auto") == "auto"
    control = sl.AdaptiveRate(start=0.2)
    assert param.check(control) is control
    with pytest.raises(TypeError, match=r"rate must be \"auto\" or an AdaptiveRate, got string 'fast'"):
        param.check("fast")
    # the TOML form: no objects; None only where a config spells it
    assert param.toml().accepted == '"auto"'
    off = Param("lag", (Interval(Integral, 1, None, "left"), NoneValue()), None, "", none_in_toml="off")
    assert off.toml().accepted == 'an integer >= 1 or "off"' and off.from_toml("off") is None
    assert Param("r", (NoneValue(), Options(("a",))), None, "").toml().accepted == '"a"'


# --------------------------------------------------------------------------- specs vs samplers

def _probes(param):
    """(accepted values, refused values with their exception type) implied by the constraints."""
    good, bad = [], []
    intervals = [c for c in param.constraints if isinstance(c, Interval)]
    for c in param.constraints:
        if isinstance(c, Options):
            good += list(c.values)
        elif isinstance(c, NoneValue):
            good.append(None)
        elif isinstance(c, InstanceOf):
            good.append(c.cls())
        elif isinstance(c, Boolean):
            good += [True, False, np.bool_(True)]
            bad += [(1, TypeError), (0.0, TypeError), ("true", TypeError)]
    for c in intervals:
        integral = c.kind is Integral
        step = 1 if integral else 1e-9
        for end, closed, outward in ((c.left, c.closed in ("left", "both"), -1),
                                     (c.right, c.closed in ("right", "both"), 1)):
            if end is None:
                if not integral:
                    bad.append((outward * math.inf, ValueError))
                continue
            end = int(end) if integral else float(end)
            (good if closed else bad).append((end, ValueError) if not closed else end)
            good.append(end - outward * step)  # just inside
            bad.append((end + outward * step, ValueError))  # just outside
        if not integral:
            bad.append((math.nan, ValueError))
        else:
            bad.append(((c.left or 0) + 1.5, TypeError))
    if not any(isinstance(c, Boolean) for c in param.constraints):
        bad.append((True, TypeError))  # a bool is never a number here
    if not any(isinstance(c, Options) for c in param.constraints):
        bad.append(("some string", TypeError))
    else:
        bad.append(("not-an-option", TypeError))
    if not any(isinstance(c, NoneValue) for c in param.constraints):
        bad.append((None, TypeError))
    return good, bad


@pytest.mark.parametrize(("spec", "param"), CASES, ids=IDS)
def test_each_constraint_matches_the_sampler(spec, param):
    good, bad = _probes(param)
    assert good and bad
    for value in good:
        sampler = spec.cls(**{param.name: value})
        stored = getattr(sampler, param.name)
        expected = param.check(value)
        if value is None and param.name == "rate":
            expected = RATE.default  # a probability sampler with neither rate nor rho
        if value is None and param.name == "refit_leaves":
            expected = spec.cls.refit_leaves  # the class attribute
        assert stored == expected, (param.name, value, stored)
        # and by name, as configs and estimators give it
        assert getattr(sl.make_sampler(spec.name, **{param.name: value}), param.name) == expected
    for value, error in bad:
        with pytest.raises(error) as info:
            spec.cls(**{param.name: value})
        message = str(info.value)
        assert re.search(rf"\b{param.name} must be ", message), message
        assert param.accepted in message, message


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_constructor_signature_is_the_spec(spec):
    params = list(inspect.signature(spec.cls).parameters.values())
    assert tuple(p.name for p in params) == spec.param_names
    assert all(p.default == spec.param(p.name).default for p in params)
    # each parameter is documented where the class is
    doc = inspect.getdoc(spec.cls) or ""
    for name in spec.param_names:
        assert re.search(rf"^{name} : ", doc, re.M), f"{spec.cls.__name__} does not document {name}"
    # make_sampler takes the spec's name and the class's name
    assert registry.find_spec(spec.name) is spec and registry.find_spec(spec.cls.__name__) is spec
    assert type(sl.make_sampler(spec.name)) is spec.cls


def test_make_sampler_names_a_sampler_s_accepted_parameters():
    with pytest.raises(ValueError, match=r"unknown parameter 'alpha' for sampler 'first_order'; accepted: rate, rho"):
        sl.make_sampler("first_order", alpha=0.1)
    with pytest.raises(ValueError, match=r"unknown parameter 'rate' for sampler 'full'; accepted: none"):
        sl.make_sampler("full", rate=0.1)


def test_config_kinds_and_keys_are_the_registry_s():
    assert cfg.engine_kinds() == tuple(registry.SPECS)
    assert cfg.kinds() == cfg.STOCK_KINDS + tuple(registry.SPECS) + cfg.PEER_KINDS
    for spec in SPECS:
        assert tuple(p.name for p in cfg.kind_options(spec.name)) == spec.param_names


# --------------------------------------------------------------------------- a fake spec everywhere

WIDTH = Param("width", (Interval(Integral, 1, 4, "both"),), 1, "a fake parameter")


class Fake(Sampler):
    """Every row, plain gradients (a sampler of the test's own).

    Parameters
    ----------
    width : int in [1, 4], default=1
        Ignored.
    """

    calls = 0

    def __init__(self, width: int = WIDTH.default) -> None:
        self.width = WIDTH.check(width, type(self).__name__)

    def sample(self, state, rng):
        Fake.calls += 1
        return Sample(np.arange(state.num_rows, dtype=np.int32), state.grad, state.hess)


@pytest.fixture
def fake(monkeypatch):
    spec = SamplerSpec("fake", Fake, (WIDTH,))
    monkeypatch.setitem(registry.SPECS, "fake", spec)
    return spec


CONFIG = """
[methods.mine]
kind = "fake"
{line}
[[experiments]]
name = "a"
metric = "binary_logloss"
data = {{ source = "bundled", name = "a9a" }}
params = {{ objective = "binary" }}
"""


def _load(tmp_path, line):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(line=line))
    return cfg.load_config(path)


def test_a_spec_added_to_the_table_is_a_sampler_name(fake):
    assert registry.find_spec("Fake") is fake and "fake" in registry.sampler_names()
    assert sl.make_sampler("fake", width=3).width == 3
    with pytest.raises(ValueError, match="unknown parameter 'speed' for sampler 'fake'; accepted: width"):
        sl.make_sampler("fake", speed=3)
    with pytest.raises(ValueError, match=r"width must be an integer in \[1, 4\], got 5"):
        sl.make_sampler("fake", width=5)
    with pytest.raises(ValueError, match="unknown sampler 'nope'; accepted: .*fake"):
        sl.make_sampler("nope")


def test_a_spec_added_to_the_table_is_a_config_kind(fake, tmp_path):
    method = _load(tmp_path, "width = 2").experiments[0].methods[0]
    assert method.kind == "fake" and method.options == {"width": 2} and not method.is_stock
    with pytest.raises(cfg.ConfigError, match=r"\[methods\.mine\] unknown key 'wdth'; accepted: .*width"):
        _load(tmp_path, "wdth = 2")
    with pytest.raises(cfg.ConfigError, match=r"\[methods\.mine\] key 'width' must be an integer in \[1, 4\], got 0"):
        _load(tmp_path, "width = 0")
    with pytest.raises(cfg.ConfigTypeError, match=r"key 'width' must be an integer in \[1, 4\], got string 'x'"):
        _load(tmp_path, 'width = "x"')


def test_a_spec_removed_from_the_table_is_no_config_kind(monkeypatch, tmp_path):
    monkeypatch.delitem(registry.SPECS, "mvs")
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(line="").replace('"fake"', '"mvs"'))
    with pytest.raises(cfg.ConfigError, match="key 'kind' is 'mvs'; accepted values: .*loss_based, xgboost_hist, catboost$"):
        cfg.load_config(path)


def test_a_spec_added_to_the_table_is_an_estimator_sampler(fake):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=300)
    Fake.calls = 0
    model = sl.SmartRegressor(n_estimators=3, num_leaves=4, verbose=-1, sampler="fake", sampler_params={"width": 2})
    model.fit(X, y)
    assert Fake.calls == 3 and model.booster_.num_trees() == 3
    with pytest.raises(ValueError, match=r"invalid sampler='fake' .*width must be an integer in \[1, 4\]"):
        sl.SmartRegressor(sampler="fake", sampler_params={"width": 9}).fit(X, y)
    with pytest.raises(TypeError, match=r"a sampler name \(.*fake\)"):
        sl.SmartRegressor(sampler=3).fit(X, y)


def test_deterministic_methods_follow_the_sampler_classes_and_the_role_table(fake, tmp_path):
    from smart_lgbm.compare.methods import is_deterministic

    methods = "".join(f"[methods.{kind}]\n" for kind in ("stock_full", "stock_goss", "full", "weight_trimming",
                                                           "uniform", "fake"))

    def deterministic(extra):
        path = tmp_path / "d.toml"
        path.write_text(methods + '[[experiments]]\nname = "a"\nmetric = "binary_logloss"\n'
                        'data = { source = "bundled", name = "a9a" }\n'
                        f'params = {{ objective = "binary"{extra} }}\n')
        experiment = cfg.load_config(path).experiments[0]
        return {m.label for m in experiment.methods if is_deterministic(m, experiment)}

    Fake.deterministic = True
    try:
        assert deterministic("") == {"stock_full", "full", "weight_trimming", "fake"}
        # any parameter that makes the tree learner draw: every seed differs
        for extra in (", feature_fraction = 0.5", ", extra_trees = true", ", use_quantized_grad = true"):
            assert deterministic(extra) == set(), extra
    finally:
        del Fake.deterministic


def test_config_reference_lists_each_kind_with_its_spec_s_keys():
    # the documentation's config reference is generated from the specs and the config's
    # kinds (docs/_ext/smart_lgbm_docs.py), and compare.md sends readers there
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "docs" / "_ext"))
    from smart_lgbm_docs import config_rst

    text = config_rst()
    for kind in cfg.kinds():
        assert f'kind = "{kind}"' in text, kind
    for spec in SPECS:
        for param in spec.params:
            entry = text.split(f".. config-key:: methods.{spec.name}.{param.name}\n", 1)
            assert len(entry) == 2, (spec.name, param.name)
            assert param.doc[:1].upper() + param.doc[1:] in entry[1].split(".. ", 1)[0], (spec.name, param.name)
    assert "config reference <generated/config>" in (root / "docs" / "compare.md").read_text()


def test_sklearn_docs_list_the_registry_s_names():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "sklearn.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `sampler` "))
    assert set(re.findall(r'`"(\w+)"`', row)) == set(registry.SPECS)
