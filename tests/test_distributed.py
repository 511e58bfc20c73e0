"""smart_lgbm.distributed without Dask: ranks, the network-wide initial score, refusals."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

import smart_lgbm
from smart_lgbm.distributed import Network, Worker, machine_rank, network_rank, on_network
from smart_lgbm.losses import BinaryLogloss, MulticlassSoftmax, SquaredError
from smart_lgbm.losses.base import Target


def test_machine_rank_is_the_entry_of_this_port_and_host():
    assert machine_rank("127.0.0.1:12400,127.0.0.1:12401", 12401) == 1
    assert machine_rank("10.255.255.1:12400,localhost:12400", 12400) == 1  # the port is shared: the host decides
    with pytest.raises(ValueError, match=r"cannot tell this machine's entry .* \(0 entries fit\)"):
        machine_rank("127.0.0.1:12400,127.0.0.1:12401", 9999)
    with pytest.raises(ValueError, match="entry 'nohost' is not host:port"):
        machine_rank("nohost,127.0.0.1:1", 1)


def test_network_rank_only_for_a_network_of_several_machines():
    assert network_rank({}) is None
    assert network_rank({"machines": "127.0.0.1:5"}) is None
    assert network_rank({"machines": "127.0.0.1:5,127.0.0.1:6", "num_machines": 1}) is None
    assert network_rank({"machines": "127.0.0.1:5,127.0.0.1:6", "local_listen_port": 6}) == 1


def _gather_from(*others):
    """An allgather for rank 0 whose peers hold ``others`` (what each would contribute per tag)."""
    def allgather(tag, value):
        return [value, *(other[tag] for other in others)]
    return allgather


def test_initial_score_pools_class_sums_for_binary_and_multiclass():
    local = Target(label=np.array([1.0, 0.0, 1.0, 1.0]))
    peer = {"class_weight_sums": np.array([5.0, 1.0])}  # 5 negatives, 1 positive elsewhere
    worker = Worker(0, 2, _gather_from(peer))
    everything = Target(label=np.array([1.0, 0.0, 1.0, 1.0] + [0.0] * 5 + [1.0]))
    loss = BinaryLogloss(sigmoid=2.0)
    np.testing.assert_array_equal(worker.initial_score(loss, local), loss.init_score(everything))
    multi = MulticlassSoftmax(num_class=3)
    local3 = Target(label=np.array([0.0, 2.0, 2.0]), weight=np.array([1.0, 2.0, 0.5]))
    peer3 = {"class_weight_sums": np.array([0.0, 4.0, 1.0])}
    pooled = Target(label=np.array([0.0, 2.0, 2.0, 1.0, 2.0]), weight=np.array([1.0, 2.0, 0.5, 4.0, 1.0]))
    np.testing.assert_allclose(Worker(0, 2, _gather_from(peer3)).initial_score(multi, local3),
                               multi.init_score(pooled), rtol=1e-15)


def test_initial_score_of_other_losses_is_the_mean_of_the_machines_scores():
    # LightGBM's L2 regression on a network starts from the mean of the machines' means.
    local = Target(label=np.array([1.0, 2.0, 3.0]))
    worker = Worker(0, 2, _gather_from({"initial_score": np.array([10.0])}))
    np.testing.assert_array_equal(worker.initial_score(SquaredError(), local), [(2.0 + 10.0) / 2])


def test_network_parameters_are_refused_outside_a_network():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match="smart_lgbm.train does not join LightGBM's network itself"):
        smart_lgbm.train({"objective": "binary", "machines": "127.0.0.1:1,127.0.0.1:2", "num_machines": 2,
                          "verbosity": -1}, lgb.Dataset(X, (X[:, 0] > 0).astype(float)), 2)


def test_on_network_checks_the_rank_before_joining():
    with pytest.raises(ValueError, match="rank 2 of 2 machines does not fit a network of 2"):
        with on_network(Network("127.0.0.1:1,127.0.0.1:2", 1, 1, 2), Worker(2, 2, _gather_from())):
            pass
