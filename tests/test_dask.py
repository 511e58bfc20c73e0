"""smart_lgbm.dask on a LocalCluster of 2 worker processes with 1 thread each (issue #11).

One cluster for the module.  Partitions are placed explicitly (partition ``i`` on worker
``i % 2``, persisted), so each test knows which rows every worker holds.

lightgbm.dask ranks its workers in an order Dask does not fix (``who_has``), and the rank
decides which machine finds which feature's bins; the comparisons with it therefore use
integer features whose every value appears on every worker (the same bins whoever finds
them) and, for L2 regression (whose network initial score is the mean of the machines'
means), partitions with equal weighted label means.
"""

from __future__ import annotations

import logging
import pickle

import pytest

# the dask extra is optional: without it these tests are skipped, not errors at collection
_REASON = "the dask extra is not installed (pip install 'smart-lgbm[dask]')"
pytest.importorskip("dask", reason=_REASON)
pytest.importorskip("distributed", reason=_REASON)

import dask.array as da
import dask.dataframe as dd
import lightgbm as lgb
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster
from sklearn.metrics import roc_auc_score

from smart_lgbm import MVS, FirstOrder, Full, SmartClassifier, SmartObjective, SmartRanker, SmartRegressor
from smart_lgbm.dask import training as dask_training  # noqa: E402  (after the importorskip above)
from smart_lgbm.dask import worker as dask_worker  # noqa: E402
from smart_lgbm.dask import DaskSmartClassifier, DaskSmartRanker, DaskSmartRegressor, DaskTrainingError

pytestmark = pytest.mark.filterwarnings("ignore:Parameter n_jobs will be ignored", "ignore:.*eval_set.*deprecated")

FAST = {"n_estimators": 8, "num_leaves": 7, "learning_rate": 0.3, "min_child_samples": 5, "verbose": -1}


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def workers(client):
    return sorted(client.scheduler_info(n_workers=-1)["workers"])


def placed(client, workers, pieces):
    """A persisted Dask Array whose partition ``i`` is ``pieces[i]`` on worker ``i % 2``."""
    futures = [client.scatter(p, workers=[workers[i % len(workers)]]) for i, p in enumerate(pieces)]
    blocks = [da.from_delayed(f, shape=p.shape, dtype=p.dtype) for f, p in zip(futures, pieces)]
    return da.concatenate(blocks, axis=0).persist()


def integer_features(rng, n, width=5):
    return rng.integers(0, 12, size=(n, width)).astype(np.float64)


@pytest.fixture(scope="module")
def binary(client, workers):
    rng = np.random.default_rng(0)
    Xn = integer_features(rng, 4000)
    yn = (Xn[:, 0] + Xn[:, 1] + rng.normal(scale=3.0, size=4000) > 11).astype(np.int64)
    X = placed(client, workers, np.array_split(Xn, 4))
    y = placed(client, workers, np.array_split(yn, 4))
    return X, y, Xn, yn


def test_full_classifier_is_lightgbm_dask(client, binary):
    X, y, Xn, yn = binary
    ref = lgb.DaskLGBMClassifier(client=client, **FAST).fit(X, y)
    est = DaskSmartClassifier(client=client, sampler=Full(), **FAST).fit(X, y)
    np.testing.assert_allclose(est.predict_proba(X).compute(), ref.predict_proba(X).compute(), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(est.predict(X).compute(), ref.predict(X).compute())
    local = est.to_local()
    assert type(local) is SmartClassifier and isinstance(local.booster_, lgb.Booster)
    np.testing.assert_allclose(local.predict_proba(Xn), ref.to_local().predict_proba(Xn), rtol=0, atol=1e-6)
    assert local.booster_.num_trees() == FAST["n_estimators"]
    assert est.client_ is client and "client" not in local.get_params()


def test_full_regressor_with_weights_is_lightgbm_dask_on_a_dataframe(client, workers):
    rng = np.random.default_rng(1)
    pieces = []
    for _ in range(4):
        x = integer_features(rng, 1000)
        w = rng.uniform(0.5, 2.0, size=1000)
        target = x[:, 0] * 2.0 - x[:, 2] + rng.normal(size=1000)
        target += 5.0 - np.dot(target, w) / w.sum()  # every partition's weighted mean is 5
        pieces.append((x, target, w))
    frames = [pd.DataFrame(x, columns=[f"f{j}" for j in range(x.shape[1])]) for x, _, _ in pieces]
    futures = [client.scatter(f, workers=[workers[i % 2]]) for i, f in enumerate(frames)]
    X = dd.from_delayed(futures, meta=frames[0].iloc[:0], verify_meta=False).persist()
    y = placed(client, workers, [t for _, t, _ in pieces])
    w = placed(client, workers, [w for _, _, w in pieces])
    ref = lgb.DaskLGBMRegressor(client=client, **FAST).fit(X, y, sample_weight=w)
    est = DaskSmartRegressor(client=client, sampler=Full(), **FAST).fit(X, y, sample_weight=w)
    got = est.predict(X).compute()
    np.testing.assert_allclose(got, ref.predict(X).compute(), rtol=0, atol=1e-6)
    assert type(est.to_local()) is SmartRegressor
    np.testing.assert_array_equal(got, est.to_local().predict(pd.concat(frames)))


def test_full_ranker_is_lightgbm_dask(client, workers):
    rng = np.random.default_rng(2)
    xs, labels, groups = [], [], []
    for _ in range(4):  # each partition holds whole queries
        sizes = rng.integers(8, 20, size=60)
        n = int(sizes.sum())
        x = integer_features(rng, n)
        labels.append(np.clip(np.round(x[:, 0] / 3 + rng.normal(scale=0.7, size=n)), 0, 3))
        xs.append(x)
        groups.append(sizes)
    X, y, group = (placed(client, workers, p) for p in (xs, labels, groups))
    ref = lgb.DaskLGBMRanker(client=client, **FAST).fit(X, y, group=group)
    est = DaskSmartRanker(client=client, sampler=Full(), **FAST).fit(X, y, group=group)
    np.testing.assert_allclose(est.predict(X).compute(), ref.predict(X).compute(), rtol=0, atol=1e-6)
    assert type(est.to_local()) is SmartRanker


def test_sampled_run_builds_one_model_at_the_target_rate(client, binary):
    X, y, Xn, yn = binary
    params = {**FAST, "n_estimators": 30, "learning_rate": 0.1, "seed": 5, "sampler": FirstOrder(rate=0.3)}
    outcome = dask_training._fit_distributed(client, SmartClassifier, params, X, y, fit_kwargs={})
    assert len(outcome.results) == 2
    # Every worker ended with the same trees (the fit also checks this itself).
    assert outcome.results[0].digest == outcome.results[1].digest
    for result in outcome.results:  # the rate target holds on each worker...
        assert result.num_rows == 2000
        assert abs(np.mean(result.records["sampling_rate"]) - 0.3) < 0.01
    est = DaskSmartClassifier(client=client, **params).fit(X, y)
    asri = np.mean(est.sampling_record_["sampling_rate"])  # ...and so overall
    assert abs(asri - 0.3) < 0.01
    assert len(est.worker_records_) == 2 and len(est.worker_records_[0]["tree_seconds"]) == 30
    # Same seed, same persisted data: the same model, byte for byte, but for the ``parameters:``
    # section, which records each run's network (its ports), as lightgbm.dask's models do.
    assert dask_worker._model_digest(est.booster_) == outcome.results[0].digest
    assert est.booster_.model_to_string().count("\nTree=") == 30
    # Quality: within 0.01 AUC of lightgbm.dask's full-data model with the same settings.
    full = lgb.DaskLGBMClassifier(client=client, **{k: v for k, v in params.items() if k != "sampler"}).fit(X, y)
    rng = np.random.default_rng(10)
    Xt = integer_features(rng, 4000)
    yt = (Xt[:, 0] + Xt[:, 1] + rng.normal(scale=3.0, size=4000) > 11).astype(np.int64)
    auc_full = roc_auc_score(yt, full.to_local().predict_proba(Xt)[:, 1])
    auc = roc_auc_score(yt, est.to_local().predict_proba(Xt)[:, 1])
    assert auc > auc_full - 0.01, (auc, auc_full)


def test_refit_leaves_sums_every_machine_s_rows(client, binary):
    """refit_leaves on two machines: every leaf value is the Newton step of all machines' rows
    (each machine's sums added in rank order), so both end with the same model."""
    X, y, Xn, yn = binary
    params = {**FAST, "n_estimators": 6, "learning_rate": 0.3, "seed": 2,
              "sampler": FirstOrder(rate=0.3, refit_leaves=True)}
    outcome = dask_training._fit_distributed(client, SmartClassifier, params, X, y, fit_kwargs={})
    assert outcome.results[0].digest == outcome.results[1].digest
    booster = DaskSmartClassifier(client=client, **params).fit(X, y).booster_
    leaves = booster.predict(Xn, pred_leaf=True)
    for t in range(1, 6):
        p = 1.0 / (1.0 + np.exp(-booster.predict(Xn, raw_score=True, num_iteration=t)))
        g, h = p - yn, p * (1.0 - p)
        width = leaves[:, t].max() + 1
        expected = -np.bincount(leaves[:, t], g, width) / np.bincount(leaves[:, t], h, width) * 0.3
        got = np.array([booster.get_leaf_output(t, j) for j in range(width)])
        np.testing.assert_allclose(got, expected, rtol=1e-5)


def _root_counts(booster):
    return np.array([t["tree_structure"]["internal_count"] for t in booster.dump_model()["tree_info"]])


def test_each_worker_draws_with_its_own_stream(client, workers):
    # The same rows on both workers: with one stream they would draw the same sample every
    # iteration (and every tree would see each sampled row twice).
    rng = np.random.default_rng(3)
    Xn = integer_features(rng, 1000)
    yn = (Xn[:, 0] + rng.normal(scale=3.0, size=1000) > 6).astype(np.int64)
    X, y = placed(client, workers, [Xn, Xn]), placed(client, workers, [yn, yn])
    est = DaskSmartClassifier(client=client, sampler=MVS(rate=0.3), **FAST).fit(X, y)
    first, second = (r["num_sampled"] for r in est.worker_records_)
    assert first != second
    np.testing.assert_array_equal(_root_counts(est.booster_), np.add(first, second))


def test_smart_objective_in_lightgbm_dask_classifier(client, workers):
    rng = np.random.default_rng(4)
    Xn = integer_features(rng, 1500)
    yn = (Xn[:, 0] + rng.normal(scale=3.0, size=1500) > 6).astype(np.int64)
    X, y = placed(client, workers, [Xn, Xn]), placed(client, workers, [yn, yn])
    obj = SmartObjective("binary", FirstOrder(rate=0.3), seed=2)
    est = lgb.DaskLGBMClassifier(client=client, objective=obj, **FAST).fit(X, y, callbacks=[obj.callback])
    record = est.objective.record  # worker 0's copy of the objective
    assert len(record["sampling_rate"]) == FAST["n_estimators"]
    assert abs(np.mean(record["sampling_rate"]) - 0.3) < 0.03
    # Both workers hold the same rows; with per-worker streams (their ranks, found from the
    # network parameters) their samples differ, so a tree is not twice worker 0's sample.
    counts = _root_counts(est.booster_)
    assert np.any(counts != 2 * np.array(record["num_sampled"]))
    raw = est.to_local().predict(Xn, raw_score=True)
    assert roc_auc_score(yn, raw) > 0.75


def test_eval_set_is_evaluated_on_the_rows_of_worker_0(client, binary, workers):
    X, y, Xn, yn = binary
    rng = np.random.default_rng(6)
    Xv = integer_features(rng, 800)
    yv = (Xv[:, 0] + Xv[:, 1] > 11).astype(np.int64)
    Xv_d, yv_d = placed(client, workers, np.array_split(Xv, 4)), placed(client, workers, np.array_split(yv, 4))
    est = DaskSmartClassifier(client=client, sampler=FirstOrder(rate=0.5), **FAST).fit(
        X, y, eval_set=[(X, y), (Xv_d, yv_d)], eval_names=["train", "valid"])
    assert set(est.evals_result_) == {"train", "valid"}
    logloss = est.evals_result_["valid"]["binary_logloss"]
    assert len(logloss) == FAST["n_estimators"]
    # Worker 0 (rank 0: it holds partition 0) evaluates validation partitions 0 and 2.
    rows = np.concatenate([part for i, part in enumerate(np.array_split(np.arange(800), 4)) if i % 2 == 0])
    p = est.to_local().predict_proba(Xv[rows])[:, 1]
    expected = -np.mean(yv[rows] * np.log(p) + (1 - yv[rows]) * np.log(1 - p))
    assert logloss[-1] == pytest.approx(expected, rel=1e-6)


def test_worker_with_only_empty_partitions_takes_no_part(client, workers):
    rng = np.random.default_rng(7)
    Xn = integer_features(rng, 1200)
    yn = (Xn[:, 0] > 5).astype(np.int64)
    empty_x, empty_y = Xn[:0], yn[:0]
    # partitions 0 and 2 (worker 0) hold the rows; partition 1 (worker 1) is empty
    X = placed(client, workers, [Xn[:600], empty_x, Xn[600:]])
    y = placed(client, workers, [yn[:600], empty_y, yn[600:]])
    est = DaskSmartClassifier(client=client, sampler=Full(), **FAST).fit(X, y)
    assert len(est.worker_records_) == 1
    stock = lgb.LGBMClassifier(**FAST).fit(Xn, yn)
    np.testing.assert_allclose(est.to_local().predict_proba(Xn), stock.predict_proba(Xn), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="X has no rows: every partition is empty"):
        DaskSmartClassifier(client=client, **FAST).fit(placed(client, workers, [empty_x, empty_x]),
                                                       placed(client, workers, [empty_y, empty_y]))


def test_refused_before_anything_runs(client, binary, workers):
    X, y, Xn, yn = binary
    est = DaskSmartClassifier(client=client, **FAST)
    with pytest.raises(ValueError, match="early stopping is not supported on Dask"):
        est.fit(X, y, callbacks=[lgb.early_stopping(2)])
    with pytest.raises(ValueError, match="early stopping is not supported on Dask"):
        DaskSmartClassifier(client=client, early_stopping_round=3, **FAST).fit(X, y)
    with pytest.raises(ValueError, match="tree_learner='feature' is not supported on Dask"):
        DaskSmartClassifier(client=client, tree_learner="feature", **FAST).fit(X, y)
    with pytest.raises(TypeError, match="X must be a Dask Array, Dask DataFrame or Dask Series, got ndarray"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="y has 2 partitions but X has 4"):
        est.fit(X, da.from_array(yn, chunks=2000))
    with pytest.raises(ValueError, match="sampler"):
        DaskSmartClassifier(client=client, sampler="no_such_sampler", **FAST).fit(X, y)
    with pytest.raises(ValueError, match="time_out must be a positive integer"):
        DaskSmartClassifier(client=client, time_out=0, **FAST).fit(X, y)
    # LightGBM's classifier encodes labels on each worker: every worker needs every class.
    one_class = placed(client, workers, [np.zeros(1000, np.int64), np.ones(1000, np.int64)])
    with pytest.raises(ValueError, match=r"holds labels \[0\] but the training data has \[0, 1\]"):
        est.fit(placed(client, workers, np.array_split(Xn[:2000], 2)), one_class)
    assert not hasattr(est, "fitted_")


def test_pickle_drops_the_client(client, binary):
    X, y, Xn, _ = binary
    est = DaskSmartClassifier(client=client, sampler=Full(), **FAST).fit(X, y)
    copy = pickle.loads(pickle.dumps(est))
    assert copy.client is None
    np.testing.assert_array_equal(copy.to_local().predict_proba(Xn), est.to_local().predict_proba(Xn))
    assert est.client is client


def test_watch_fails_a_worker_without_progress_within_time_out(client, workers):
    import time

    future = client.submit(time.sleep, 3, workers=[workers[0]], pure=False)
    start = time.monotonic()
    with pytest.raises(DaskTrainingError, match="made no progress for 1 s"):
        dask_training._watch(client, {workers[0]: future}, 1.0, "smart-lgbm-test-no-heartbeat")
    assert time.monotonic() - start < 3.0
