"""The update plan (smart_lgbm/_engine/update_plan.py): where each set's new scores come from, over
every combination of its inputs, and the engine following it by key."""

from __future__ import annotations

import itertools

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm as sl
from smart_lgbm._engine import update_plan as up
from smart_lgbm._engine.run import BoostingRun
from smart_lgbm._engine.update_plan import SAMPLE, TRAIN, Features, RunFacts, Source, plan_updates, valid_key

WALK = {Features.CODES: Source.CODED_WALK, Features.RAW: Source.RAW_WALK}
LIGHTGBM = {Source.PARTITION, Source.PREDICTOR}


def _all_facts():
    """Every RunFacts the engine can hold, with up to two validation sets of each kind."""
    valid_lists = [()] + [(f,) for f in Features] + list(itertools.product(Features, repeat=2))
    for train, valids, needs_leaves, init, fused, network, refit in itertools.product(
            Features, valid_lists, (False, True), (False, True), (False, True), (False, True), (False, True)):
        if fused and train is not Features.CODES:
            continue  # refused (below)
        yield RunFacts(train, tuple(valids), needs_leaves, init, fused, network, refit)


def _cases():
    for facts in _all_facts():
        for all_rows, large in itertools.product((False, True), repeat=2):
            yield facts, all_rows, large


def _expected_train(facts: RunFacts, all_rows: bool, large: bool) -> Source:
    # The rules as docs/engine.md states them, one case at a time.
    if all_rows:
        if facts.network or facts.train is Features.NONE or Features.NONE in facts.valids:
            return Source.PARTITION  # LightGBM is read anyway: the tree learner already added every row's output
        return WALK[facts.train]  # the Booster stays on the training set; every row walked
    if facts.train is Features.NONE:
        return Source.PREDICTOR  # no features in memory
    if facts.train is Features.RAW:
        return Source.RAW_WALK
    if large and not facts.needs_leaves and not facts.train_init_score and not facts.refit:
        return Source.SAMPLE_READ_BACK  # (a refit changes the values the sample's outputs were read with)
    return Source.CODED_WALK


@pytest.mark.parametrize("facts, all_rows, large", list(_cases()))
def test_every_combination(facts, all_rows, large):
    plan = plan_updates(facts, all_rows=all_rows, large_sample=large)
    assert plan.train is _expected_train(facts, all_rows, large)
    assert plan.valids == tuple(WALK.get(f, Source.PREDICTOR) for f in facts.valids)
    sources = {TRAIN: plan.train, **{valid_key(i): s for i, s in enumerate(plan.valids)}}
    # every set is updated exactly once: added from LightGBM's outputs or walked
    assert set(plan.added) | set(plan.walked) == set(sources)
    assert not set(plan.added) & set(plan.walked)
    assert list(plan.added) == sorted(k for k, s in sources.items() if s in LIGHTGBM)
    assert list(plan.walked) == sorted(k for k, s in sources.items() if s not in LIGHTGBM)
    # what fit reads: the sample first when its outputs are read back, then the added sets
    assert plan.read_sample == (plan.train is Source.SAMPLE_READ_BACK)
    assert plan.read == ((SAMPLE,) if plan.read_sample else ()) + plan.added
    assert len(set(plan.read)) == len(plan.read)
    # the binned predictor is slow, and said: exactly the sets it updates
    assert plan.slow == tuple(k for k, s in sources.items() if s is Source.PREDICTOR)
    # the fused pass is the training set's coded walk, in runs that have one
    assert plan.fused == (facts.fused and plan.train in (Source.CODED_WALK, Source.SAMPLE_READ_BACK))
    # leaves for a sampler that needs them come from where the training outputs come from
    walked_train = TRAIN in plan.walked
    # a refit: in sampled iterations (every iteration on a network, where another machine
    # may sample), with every training row's leaf and the leaves of every set read from
    # LightGBM, whose outputs it maps to the new values
    refit = facts.refit and (not all_rows or facts.network)
    assert plan.refit == refit
    assert plan.want_leaves == ((facts.needs_leaves and not walked_train) or (refit and plan.added != ()))
    assert plan.walk_leaves == ((facts.needs_leaves or refit) and walked_train)
    assert not (plan.want_leaves and plan.walk_leaves) or refit
    # a sample read back is exact only when the sample's scores start at 0.0 and no
    # row's leaf is needed from the walk
    if plan.read_sample:
        assert facts.train is Features.CODES and not facts.train_init_score and not facts.needs_leaves
        assert not all_rows and large
    # the Booster stays on the training set exactly when every row was drawn and nothing is
    # read through LightGBM (which would point it at another Dataset)
    assert plan.stay_on_train == (all_rows and plan.read == ())
    if plan.stay_on_train:
        assert not facts.network and not plan.want_leaves and TRAIN in plan.walked


def test_keys_do_not_collide():
    assert TRAIN == 0 and SAMPLE < 0
    assert [valid_key(i) for i in range(3)] == [1, 2, 3]


@pytest.mark.parametrize("train, needs_leaves", [(Features.RAW, False), (Features.NONE, False),
                                                 (Features.RAW, True)])
def test_fused_needs_coded_rows(train, needs_leaves):
    with pytest.raises(ValueError, match="fused pass needs coded training rows"):
        RunFacts(train, (), needs_leaves, False, True)


def test_fused_pass_writes_the_leaves_a_sampler_reads():
    """A sampler that reads leaves keeps the fused pass: the walk that gives the training rows
    their outputs (the fused one) writes every row's leaf, so none is read from LightGBM."""
    plan = plan_updates(RunFacts(Features.CODES, (), True, False, True), all_rows=False, large_sample=False)
    assert plan.fused and plan.walk_leaves and not plan.want_leaves and not plan.read_sample


def test_facts_must_be_features():
    with pytest.raises(TypeError, match=r"RunFacts\.valids takes Features members"):
        RunFacts(Features.CODES, ("codes",), False, False, False)


def test_plan_cache_computes_each_kind_of_iteration_once(monkeypatch):
    calls = []

    def counting(run, *, all_rows, large_sample):
        calls.append((all_rows, large_sample))
        return plan_updates(run, all_rows=all_rows, large_sample=large_sample)

    monkeypatch.setattr(up, "plan_updates", counting)
    cache = up.PlanCache(RunFacts(Features.CODES, (Features.RAW,), False, False, True))
    first = cache(False, False)
    for _ in range(5):
        assert cache(False, False) is first
    cache(True, True)
    cache(False, True)
    assert calls == [(False, False), (True, True), (False, True)]


# --------------------------------------------------------------------------- the engine follows it


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(float)
    return X, y


PARAMS = {"objective": "binary", "num_leaves": 7, "verbosity": -1, "min_data_in_leaf": 5}


def test_engine_refuses_outputs_that_do_not_match_the_plan(monkeypatch):
    # A fit that loses a set's outputs must fail, not leave that set's scores behind silently.
    X, y = _data()
    real = BoostingRun.step

    def step(self, iteration):
        fit = self.fitter.fit

        def dropping(*args, **kwargs):
            fitted = fit(*args, **kwargs)
            fitted.outputs.pop(next(iter(fitted.outputs)))
            return fitted

        self.fitter.fit = dropping
        return real(self, iteration)

    monkeypatch.setattr(BoostingRun, "step", step)
    train = lgb.Dataset(X, y, free_raw_data=False)
    with pytest.raises(RuntimeError, match="the update plan reads"):
        sl.train(PARAMS, train, 2, sampler=sl.Uniform(0.5))


@pytest.mark.parametrize("sampler, expected", [
    (sl.Full(), Source.CODED_WALK),  # (the Booster stays on the training set)
    (sl.Uniform(0.5), Source.SAMPLE_READ_BACK),
    (sl.Uniform(0.1), Source.CODED_WALK),
])
def test_engine_iterations_use_the_planned_source(monkeypatch, sampler, expected):
    X, y = _data(2000)
    seen = []
    real = up.PlanCache.__call__

    def recording(self, all_rows, large_sample):
        plan = real(self, all_rows, large_sample)
        seen.append(plan.train)
        return plan

    monkeypatch.setattr(up.PlanCache, "__call__", recording)
    sl.train(PARAMS, lgb.Dataset(X, y), 5, sampler=sampler)
    assert seen == [expected] * 5


def test_sample_read_back_and_coded_walk_give_the_same_model(monkeypatch):
    from smart_lgbm._engine import run as boosting

    X, y = _data(2000)
    read_back = sl.train(PARAMS, lgb.Dataset(X, y), 8, sampler=sl.Uniform(0.5)).model_to_string()
    monkeypatch.setattr(boosting, "READ_SAMPLE_FRACTION", 2.0)  # never large: every row walked
    walked = sl.train(PARAMS, lgb.Dataset(X, y), 8, sampler=sl.Uniform(0.5)).model_to_string()
    assert read_back == walked
