"""Dask failures that are early and clear, never a hang, and leave the cluster usable
(issue 19, class 4)."""

from __future__ import annotations

import logging
import time

import pytest

_REASON = "the dask extra is not installed (pip install 'smart-lgbm[dask]')"
pytest.importorskip("dask", reason=_REASON)
pytest.importorskip("distributed", reason=_REASON)

import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from smart_lgbm import FirstOrder, Full  # noqa: E402
from smart_lgbm.dask import DaskSmartClassifier, DaskSmartRanker, DaskTrainingError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Parameter n_jobs will be ignored")

FAST = {"n_estimators": 5, "num_leaves": 7, "min_child_samples": 5, "verbose": -1}


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.CRITICAL) as cluster:
        yield cluster


@pytest.fixture
def client(cluster):
    with Client(cluster) as client:
        yield client


def _data(rows=4000, chunks=2000):
    rng = np.random.default_rng(0)
    Xn = rng.normal(size=(rows, 5))
    yn = (Xn[:, 0] + rng.normal(size=rows) > 0).astype(np.int64)
    return Xn, yn, da.from_array(Xn, chunks=(chunks, 5)), da.from_array(yn, chunks=chunks)


def _fits_afterwards(client):
    """The same cluster trains the next fit at once (nobody is stuck in LightGBM's network)."""
    _, _, X, y = _data()
    start = time.monotonic()
    est = DaskSmartClassifier(client=client, sampler=Full(), **FAST).fit(X, y)
    assert est.booster_.num_trees() == 5
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("bad", ["y", "sample_weight", "init_score", "eval_y"])
def test_misaligned_partitions_fail_before_training_and_the_cluster_stays_usable(client, bad):
    Xn, yn, X, y = _data()
    kwargs = {}
    # same number of partitions as X, but different row blocks
    if bad == "y":
        y = da.from_array(yn, chunks=((1500, 2500),))
    elif bad == "sample_weight":
        kwargs["sample_weight"] = da.from_array(np.ones(4000), chunks=((2500, 1500),))
    elif bad == "init_score":
        kwargs["init_score"] = da.from_array(np.zeros(4000), chunks=((1000, 3000),))
    else:
        kwargs["eval_set"] = [(X, da.from_array(yn, chunks=((1999, 2001),)))]
    start = time.monotonic()
    with pytest.raises(ValueError, match="rows but its partition of .*same row blocks"):
        DaskSmartClassifier(client=client, sampler=FirstOrder(rate=0.5), **FAST).fit(X, y, **kwargs)
    assert time.monotonic() - start < 30
    _fits_afterwards(client)


def test_group_sizes_that_do_not_add_up_fail_before_training(client):
    Xn, yn, X, y = _data()
    group = da.from_array(np.array([100] * 19 + [50] * 2 + [90] * 20), chunks=((21, 20),))  # 2000 and 1800 rows
    with pytest.raises(ValueError, match="query sizes must add up"):
        DaskSmartRanker(client=client, sampler=Full(), **FAST).fit(X, y, group=group)
    _fits_afterwards(client)


def test_voting_parallel_trains_like_lightgbm_dask(client):
    _, _, X, y = _data()
    est = DaskSmartClassifier(client=client, sampler=Full(), tree_learner="voting", top_k=2, **FAST).fit(X, y)
    assert est.booster_.num_trees() == 5
    est2 = DaskSmartClassifier(client=client, sampler=FirstOrder(rate=0.5), tree_learner="voting_parallel",
                               **FAST).fit(X, y)
    assert est2.booster_.num_trees() == 5


@pytest.mark.parametrize("step", ["_compute_in_place", "Network"])  # placing partitions; after survey and ports
def test_closing_the_client_during_fit_fails_clearly_and_the_cluster_stays_usable(cluster, monkeypatch, step):
    from smart_lgbm.dask import training as smart_dask  # (where the fit calls them)

    _, _, X, y = _data()
    client = Client(cluster)
    real = getattr(smart_dask, step)

    def close_then_go_on(*args, **kwargs):
        client.close()
        return real(*args, **kwargs)

    monkeypatch.setattr(smart_dask, step, close_then_go_on)
    start = time.monotonic()
    with pytest.raises(DaskTrainingError, match="client was closed"):
        DaskSmartClassifier(client=client, sampler=Full(), **FAST).fit(X, y)
    assert time.monotonic() - start < 60
    monkeypatch.undo()
    with Client(cluster) as fresh:
        _fits_afterwards(fresh)
