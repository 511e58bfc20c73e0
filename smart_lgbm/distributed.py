"""The engine on one machine of a LightGBM network: what a distributed run adds.

A distributed run (:mod:`smart_lgbm.dask`) runs :func:`smart_lgbm.train` on every machine
over the rows that machine holds.  Three things make those runs one model:

* **LightGBM's network**, joined by the thread that trains (:func:`on_network`) *before*
  the engine bins its training rows: LightGBM then finds the bin boundaries jointly, and
  the tree-fitting Booster (``tree_learner=data``) grows every tree from the histograms of
  all machines' samples, so every machine gets the same trees.  The engine's per-iteration
  C-API sequence (reset the Booster's training data to this machine's sample, update with
  custom gradients, read the outputs, park on a one-row set, roll back) works on a network
  with a different sample size on each machine (``tests/test_lightgbm_internals.py`` pins
  it); no step other than the tree update itself talks to the other machines.
* **Per-machine sampling streams**: each machine draws its own rows with stream = its rank
  (:func:`smart_lgbm._engine.draw.stream_rng`), so no two machines draw with the same numbers.
  A rate target holds per machine, and so overall.
* **The initial score of all machines' rows**, as LightGBM's ``boost_from_average`` computes
  it on a network (:meth:`Worker.initial_score`).  LightGBM's C API has no collective call
  for Python, so the caller supplies an ``allgather`` for these few numbers (the Dask layer
  goes through its scheduler).

This module does not import Dask: any cluster framework that can start one process per
machine and exchange a few numbers can use it.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _lightgbm
from .losses.base import Loss, Target
from .losses.binary import BinaryLogloss
from .losses.multiclass import MulticlassSoftmax

__all__ = ["Network", "Worker", "current_worker", "machine_rank", "on_network", "network_rank"]


@dataclass(frozen=True)
class Network:
    """LightGBM's network parameters for one machine (names as in LightGBM).

    Attributes
    ----------
    machines : str
        ``"host1:port1,host2:port2,..."``; rank ``r`` is entry ``r``.
    local_listen_port : int
        This machine's port.
    time_out : int
        LightGBM's socket time-out, minutes.
    num_machines : int
    """

    machines: str
    local_listen_port: int
    time_out: int
    num_machines: int


@dataclass(frozen=True)
class Worker:
    """This machine's place in a distributed run.

    Attributes
    ----------
    rank : int
        Position in ``Network.machines``; also this machine's sampling stream.
    num_machines : int
    allgather : callable
        ``allgather(tag, value) -> list`` of every machine's ``value`` in rank order; every
        machine calls it with the same ``tag``, once per tag.
    """

    rank: int
    num_machines: int
    allgather: Callable[[str, Any], list]

    def initial_score(self, loss: Loss, target: Target) -> np.ndarray:
        """The score boosting starts from, over all machines' rows, as LightGBM's
        ``boost_from_average`` computes it on a network.

        Binary and multiclass objectives pool the class weight sums of all machines
        (LightGBM's ``GlobalSyncUpBySum`` in their ``BoostFromScore``/``Init``), so the score
        is that of all rows; every other loss averages the machines' own scores, summed in
        rank order and divided by the number of machines (``GBDT::BoostFromAverage``'s
        ``GlobalSyncUpByMean``; for L2 regression, the mean of the machines' means).
        """
        if isinstance(loss, (BinaryLogloss, MulticlassSoftmax)) and loss.boost_from_average:
            num_class = 2 if isinstance(loss, BinaryLogloss) else loss.num_class
            weight = np.ones(target.num_rows) if target.weight is None else target.weight
            sums = np.bincount(target.label.astype(np.int64), weights=weight, minlength=num_class)
            totals = _sum_in_order(self.allgather("class_weight_sums", sums))
            # The loss's own formula on one row per class weighted by all machines' sums.
            pooled = Target(label=np.arange(num_class, dtype=np.float64), weight=totals)
            return loss.init_score(pooled)
        local = np.asarray(loss.init_score(target), dtype=np.float64)
        return _sum_in_order(self.allgather("initial_score", local)) / self.num_machines

    def share_class_counts(self, loss: Loss, target: Target) -> None:
        """Put the class counts of all machines' rows into ``target`` for a binary loss with
        ``is_unbalance`` (LightGBM's ``BinaryLogloss::Init`` sums them over the network), so
        that every machine weighs the classes alike; nothing for any other loss."""
        if isinstance(loss, BinaryLogloss) and loss.is_unbalance:
            positive = int(np.count_nonzero(target.label > 0.0))
            counts = np.array([target.num_rows - positive, positive], dtype=np.int64)
            target.cache["class_counts"] = tuple(int(c) for c in _sum_in_order(self.allgather("class_counts", counts)))


def _sum_in_order(values: list[np.ndarray]) -> np.ndarray:
    total = np.zeros_like(np.asarray(values[0], dtype=np.float64))
    for value in values:
        total = total + value
    return total


_CURRENT: ContextVar[Worker | None] = ContextVar("smart_lgbm_worker", default=None)


def current_worker() -> Worker | None:
    """The machine the engine runs on in this context, None outside :func:`on_network`."""
    return _CURRENT.get()


@contextmanager
def on_network(network: Network, worker: Worker) -> Iterator[None]:
    """Join LightGBM's network for the block; engine runs in it are ``worker``'s.

    Everything that touches the network must run in the calling thread (LightGBM keeps the
    network in thread-local state): train inside the block, e.g.
    ``with on_network(net, me): SmartClassifier(**params).fit(X, y)`` with the network
    parameters and ``tree_learner="data"`` in ``params``.  The network is left on exit,
    also when training fails; then this machine's links are reset rather than closed
    (:func:`smart_lgbm._lightgbm.reset_links`), so that the peers waiting on it fail too
    instead of waiting forever.
    """
    if not 0 <= worker.rank < network.num_machines or worker.num_machines != network.num_machines:
        raise ValueError(f"rank {worker.rank} of {worker.num_machines} machines does not fit a network of "
                         f"{network.num_machines}")
    _lightgbm.network_init(network.machines, network.local_listen_port, network.time_out, network.num_machines)
    token = _CURRENT.set(worker)
    try:
        yield
    except BaseException:
        # a failure here: the peers may be waiting in LightGBM's receives from this machine;
        # reset links make them fail at once and leave the network too (not hang)
        _lightgbm.reset_links(network.machines, network.local_listen_port)
        raise
    finally:
        _CURRENT.reset(token)
        _lightgbm.network_free()


def _local_addresses() -> set[str]:
    addresses = {"127.0.0.1", "::1", "localhost", socket.gethostname(), socket.getfqdn()}
    try:
        addresses.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:  # a host name that does not resolve: the loopback names remain
        pass
    return addresses


def _resolves_locally(host: str, local: set[str]) -> bool:
    if host in local:
        return True
    try:
        return bool(set(socket.gethostbyname_ex(host)[2]) & local)
    except OSError:
        return False


def machine_rank(machines: str, local_listen_port: int) -> int:
    """This machine's rank in LightGBM's ``machines`` list, found as LightGBM finds it: the
    entry whose port is ``local_listen_port`` and whose host is this machine.

    Raises
    ------
    ValueError
        When no entry, or more than one, fits.
    """
    entries = []
    for entry in str(machines).split(","):
        host, _, port = entry.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"machines={machines!r}: entry {entry.strip()!r} is not host:port")
        entries.append((host, int(port)))
    candidates = [i for i, (_, port) in enumerate(entries) if port == int(local_listen_port)]
    if len(candidates) > 1:
        local = _local_addresses()
        candidates = [i for i in candidates if _resolves_locally(entries[i][0], local)]
    if len(candidates) != 1:
        raise ValueError(f"cannot tell this machine's entry in machines={machines!r} with local_listen_port="
                         f"{local_listen_port} ({len(candidates)} entries fit)")
    return candidates[0]


def network_rank(params: dict[str, Any]) -> int | None:
    """The rank of this machine for canonical LightGBM ``params`` that describe a network of
    more than one machine (``machines``, ``local_listen_port``), else None."""
    machines = params.get("machines")
    if not machines or len(str(machines).split(",")) < 2 or int(params.get("num_machines", 2)) < 2:
        return None
    return machine_rank(str(machines), int(params.get("local_listen_port", 12400)))
