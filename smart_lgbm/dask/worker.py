"""What runs on each Dask worker of a distributed fit: the network's ports, the machines'
exchange through the scheduler, the heartbeat, and :func:`_train_on_worker`, which joins
LightGBM's network and runs the engine on the worker's rows (:mod:`smart_lgbm.distributed`).
"""

from __future__ import annotations

import hashlib
import socket
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import lightgbm as lgb
import numpy as np

from distributed import Variable, get_client, get_worker

from .._engine import AUTO_ALLGATHER_TAG
from ..distributed import Network, Worker, on_network
from ..sklearn import SmartRanker

from .parts import _assemble, _num_rows


class _PortReservation:
    """A free port held open on a worker until its training task starts (lightgbm.dask's way
    of finding ports: bind to port 0, keep the socket, release it right before LightGBM binds)."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("", 0))
        self.port = int(self.socket.getsockname()[1])

    def release(self) -> None:
        self.socket.close()


def _reserve_port() -> _PortReservation:
    return _PortReservation()


def _port_of(reservation: _PortReservation) -> int:
    return reservation.port


class _SchedulerAllgather:
    """``allgather(tag, value)`` through the Dask scheduler: each rank sets a
    ``distributed.Variable`` and reads every rank's (a few numbers per fit, once)."""

    def __init__(self, prefix: str, rank: int, num_machines: int, timeout: float) -> None:
        self.prefix, self.rank, self.num_machines, self.timeout = prefix, rank, num_machines, timeout

    def __call__(self, tag: str, value: Any) -> list[Any]:
        client = get_client()
        Variable(_variable_name(self.prefix, tag, self.rank), client=client).set(_to_plain(value))
        out = []
        for rank in range(self.num_machines):
            try:
                got = Variable(_variable_name(self.prefix, tag, rank), client=client).get(timeout=self.timeout)
            except TimeoutError:
                raise TimeoutError(f"rank {self.rank}: no {tag!r} from rank {rank} within {self.timeout:.0f} s "
                                   "(time_out)") from None
            out.append(np.asarray(got) if isinstance(value, np.ndarray) else got)
        return out


def _to_plain(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


def _variable_name(prefix: str, tag: str, rank: int) -> str:
    return f"{prefix}-{tag}-{rank}"


#: Tags the workers exchange (the client deletes their Variables after the fit): the initial
#: score's, the class sums and counts, and sampler="auto"'s training rows of every machine.
_ALLGATHER_TAGS = ("initial_score", "class_weight_sums", "class_counts", AUTO_ALLGATHER_TAG)


class _WorkerLog:
    """Callback on every worker: keeps the engine's record of each iteration and tells the
    client that training moves on (a Dask event per iteration: the heartbeat)."""

    order = 30  # after LightGBM's own callbacks
    #: Seconds between heartbeats at the most: the client only needs to know within
    #: ``time_out`` minutes, and each beat is a message through the scheduler.
    interval = 1.0

    def __init__(self, topic: str, rank: int) -> None:
        self.topic, self.rank = topic, rank
        self.records: dict[str, list] = defaultdict(list)
        self._last = -np.inf

    def beat(self, iteration: int) -> None:
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            get_worker().log_event(self.topic, {"rank": self.rank, "iteration": iteration})

    def __call__(self, env: lgb.callback.CallbackEnv) -> None:
        for key, value in getattr(env.model, "last_record", {}).items():
            self.records[key].append(value)
        self.beat(env.iteration + 1)


@dataclass
class _WorkerResult:
    rank: int
    num_rows: int
    digest: str
    records: dict[str, list]
    model: Any = None


#: The lines of a tree that every machine must agree on: its structure and its outputs.
#: The others (split_gain, leaf/internal weights and counts, internal values) are what a
#: machine computes from its own rows under tree_learner="voting", which syncs only the
#: chosen splits' histograms: they differ between machines in stock LightGBM too.
_AGREED_TREE_KEYS = ("num_leaves", "num_cat", "split_feature", "threshold", "decision_type", "left_child",
                     "right_child", "leaf_value", "cat_boundaries", "cat_threshold", "is_linear", "shrinkage")


def _model_digest(booster: lgb.Booster) -> str:
    """Digest of what every machine's model must share: the header (without the
    ``parameters:`` section, which names this machine's port) and each tree's structure and
    outputs (:data:`_AGREED_TREE_KEYS`)."""
    text = booster.model_to_string()
    text = text[: text.find("\nparameters:\n")]
    kept = [line for line in text.split("\n")
            if "=" not in line or line.startswith("Tree=") or line.split("=", 1)[0] in _AGREED_KEYS]
    return hashlib.sha256("\n".join(kept).encode("utf-8")).hexdigest()


# (tree_sizes, the trees' text lengths, follows the machine-local numbers: left out)
_AGREED_KEYS = frozenset(_AGREED_TREE_KEYS) | {"version", "num_class", "num_tree_per_iteration", "label_index",
                                              "max_feature_idx", "objective", "feature_names", "feature_infos"}


def _train_on_worker(*, model_factory: type, params: dict[str, Any], parts: list[dict[str, Any]],
                     network: Network, rank: int, allgather: _SchedulerAllgather, topic: str,
                     eval_names: list[str] | None, eval_class_weight: list | None, fit_kwargs: dict[str, Any],
                     return_model: bool, reservation: _PortReservation | None) -> _WorkerResult:
    """One worker's part of a fit: its rows, LightGBM's network, the engine."""
    log = _WorkerLog(topic, rank)
    log.beat(0)
    local = _assemble(parts, eval_names, eval_class_weight, issubclass(model_factory, SmartRanker))
    model = model_factory(**params, machines=network.machines, local_listen_port=network.local_listen_port,
                          time_out=network.time_out, num_machines=network.num_machines)
    kwargs = {**fit_kwargs, **local.fit_kwargs}
    kwargs["callbacks"] = [*(fit_kwargs.get("callbacks") or []), log]
    if reservation is not None:
        reservation.release()  # LightGBM binds this port next
    with on_network(network, Worker(rank, network.num_machines, allgather)):
        model.fit(local.X, local.y, **kwargs)
    if eval_names:  # every requested name present, as lightgbm.dask pads them
        for name in eval_names:
            model.evals_result_.setdefault(name, {})
            model.best_score_.setdefault(name, {})
    return _WorkerResult(rank, _num_rows(local.X), _model_digest(model.booster_), dict(log.records),
                         model if return_model else None)
