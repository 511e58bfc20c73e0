"""A failed Dask fit leaves no worker inside LightGBM's network (issue 40): what one worker's
fit would refuse is refused by the survey, before any worker joins the network, naming the
worker; a failure after joining resets that worker's links, so its peers fail too instead of
waiting.  Either way the next fit on the same LocalCluster trains at once.

Every fit runs under a time guard: a hang fails the test instead of blocking the suite.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

_REASON = "the dask extra is not installed (pip install 'smart-lgbm[dask]')"
pytest.importorskip("dask", reason=_REASON)
pytest.importorskip("distributed", reason=_REASON)

import dask.array as da  # noqa: E402
import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from smart_lgbm import FirstOrder, Full  # noqa: E402
from smart_lgbm._lightgbm import split_model_string  # noqa: E402
from smart_lgbm.dask import DaskSmartClassifier, DaskSmartRanker, DaskSmartRegressor, DaskTrainingError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Parameter n_jobs will be ignored")

FAST = {"n_estimators": 5, "num_leaves": 7, "min_child_samples": 5, "verbose": -1}
#: seconds a fit may take here before it counts as hung
LIMIT = 60


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        yield client


def _guarded(fit, limit=LIMIT):
    """Run ``fit()`` in a thread; its result or exception, or a test failure after ``limit`` s."""
    box: dict = {}

    def run():
        try:
            box["result"] = fit()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        pytest.fail(f"the fit did not return within {limit} s (a worker stuck in LightGBM's network?)")
    box["seconds"] = time.monotonic() - start
    return box


def _placed(client, pieces):
    """One Dask Array whose blocks live on the two workers, in order."""
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    futures = [client.scatter(p, workers=[w]) for p, w in zip(pieces, workers, strict=True)]
    return da.concatenate([da.from_delayed(f, shape=p.shape, dtype=p.dtype)
                           for f, p in zip(futures, pieces, strict=True)]).persist()


def _rows(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)


def _fits_afterwards(client):
    """A good fit on the same cluster trains at once (nobody is stuck in LightGBM's network)."""
    X, y = _rows()
    box = _guarded(lambda: DaskSmartRegressor(client=client, sampler=Full(), **FAST).fit(
        _placed(client, [X[:2000], X[2000:]]), _placed(client, [y[:2000], y[2000:]])))
    assert "error" not in box, box.get("error")
    assert box["result"].booster_.num_trees() == 5
    assert box["seconds"] < 30


def _second_worker_gets(client, X, y, bad_rows, **columns):
    """X, y and any other columns split so that the second worker holds ``bad_rows`` rows."""
    cut = len(X) - bad_rows
    out = {name: _placed(client, [v[:cut], v[cut:]]) for name, v in columns.items()}
    return _placed(client, [X[:cut], X[cut:]]), _placed(client, [y[:cut], y[cut:]]), out


def _worker_name(client, i):
    return sorted(client.scheduler_info(n_workers=-1)["workers"])[i]


@pytest.mark.parametrize("case", ["one_row", "nan_label", "negative_weight", "nan_init_score", "binary_label",
                                  "cross_entropy_label", "eval_width"])
def test_what_one_workers_fit_would_refuse_is_refused_by_the_survey(client, case):
    X, y = _rows()
    kwargs, params, estimator = {}, dict(FAST), DaskSmartRegressor
    bad = 1 if case == "one_row" else 500
    if case == "nan_label":
        y[-3] = np.nan
    elif case == "binary_label":
        params["objective"] = "binary"
        y[-3] = 2.0
    elif case == "cross_entropy_label":
        params["objective"] = "cross_entropy"
        y[-3] = 1.5
    columns = {}
    if case == "negative_weight":
        weight = np.ones(len(X))
        weight[-3] = -1.0
        columns["sample_weight"] = weight
    elif case == "nan_init_score":
        init = np.zeros(len(X))
        init[-3] = np.nan
        columns["init_score"] = init
    Xd, yd, extra = _second_worker_gets(client, X, y, bad, **columns)
    kwargs.update(extra)
    if case == "eval_width":
        kwargs["eval_set"] = [(_placed(client, [X[:10, :4], X[10:20, :4]]), _placed(client, [y[:10], y[10:20]]))]
    box = _guarded(lambda: estimator(client=client, sampler=FirstOrder(rate=0.5), **params).fit(Xd, yd, **kwargs))
    error = box.get("error")
    assert isinstance(error, ValueError), error
    assert box["seconds"] < 30
    if case != "eval_width":  # (each worker holds a part of that evaluation set: either may be named)
        assert f"Dask worker {_worker_name(client, 1)}" in str(error)
    _fits_afterwards(client)


def test_a_ranking_worker_with_labels_beyond_label_gain_is_refused_by_the_survey(client):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 5))
    y = rng.integers(0, 4, 4000).astype(float)
    y[-5] = 40.0  # beyond the 31 default label gains: LightGBM's lambdarank refuses it
    group = np.array([100] * 40)
    Xd, yd, extra = _second_worker_gets(client, X, y, 2000)
    group_d = da.from_array(group, chunks=((20, 20),))
    box = _guarded(lambda: DaskSmartRanker(client=client, sampler=Full(), **FAST).fit(Xd, yd, group=group_d))
    assert isinstance(box.get("error"), ValueError) and "label_gain" in str(box["error"]), box.get("error")
    assert f"Dask worker {_worker_name(client, 1)}" in str(box["error"])
    _fits_afterwards(client)


class _FailAt:
    """A callback that raises on one worker at one iteration (pickled by value to the workers)."""

    order = 40

    def __init__(self, address: str, iteration: int) -> None:
        self.address, self.iteration = address, iteration

    def __call__(self, env) -> None:
        from distributed import get_worker

        if env.iteration == self.iteration and get_worker().address == self.address:
            raise RuntimeError("this worker's callback failed")


@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("sampler", [Full(), FirstOrder(rate=0.5)], ids=["full", "first_order"])
def test_a_failure_after_joining_the_network_releases_every_worker(client, rank, sampler):
    X, y = _rows()
    Xd, yd, _ = _second_worker_gets(client, X, y, 2000)
    failing = _worker_name(client, rank)
    box = _guarded(lambda: DaskSmartClassifier(client=client, sampler=sampler, **{**FAST, "n_estimators": 50}).fit(
        Xd, yd, callbacks=[_FailAt(failing, 3)]))
    error = box.get("error")
    assert isinstance(error, DaskTrainingError), error
    assert f"training failed on Dask worker {failing}: RuntimeError: this worker's callback failed" in str(error)
    _fits_afterwards(client)


def test_init_model_continues_training_on_dask(client):
    X, y = _rows()
    Xd, yd, _ = _second_worker_gets(client, X, y, 2000)
    first = lgb.train({"objective": "binary", "num_leaves": 7, "verbosity": -1}, lgb.Dataset(X, y), 3)
    box = _guarded(lambda: DaskSmartClassifier(client=client, sampler=FirstOrder(rate=0.5), **FAST).fit(
        Xd, yd.astype(int), init_model=first))
    assert "error" not in box, box.get("error")
    model = box["result"].booster_
    assert model.num_trees() == 8
    assert split_model_string(model.model_to_string())[1][:3] == split_model_string(first.model_to_string())[1]
