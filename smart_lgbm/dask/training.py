"""The client side of a distributed fit: parameters, network, the workers' runs and their watch.

:func:`_fit_distributed` sets LightGBM's network parameters as lightgbm.dask sets them, starts
:func:`.worker._train_on_worker` on every worker that holds training rows, and watches the
run: a worker's error, a worker leaving the cluster, or no progress from a worker for
``time_out`` minutes fails the fit at once with a message naming the worker
(:class:`DaskTrainingError`); every worker returns a digest of its model, and the fit fails
unless all are identical.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import numpy as np

from distributed import Client, Variable, wait

from .. import _lightgbm
from ..distributed import Network
from .._engine import canonicalize
from ..samplers import AdaptiveRate, Auto
from ..sklearn import SmartClassifier, SmartRanker, _check_sampler

from .parts import _build_parts, _FitCheck, _survey
from .worker import (
    _ALLGATHER_TAGS,
    _port_of,
    _reserve_port,
    _SchedulerAllgather,
    _train_on_worker,
    _variable_name,
    _WorkerResult,
)


#: LightGBM's default ``time_out`` (minutes), as lightgbm.dask uses it.
_DEFAULT_TIME_OUT = 120
#: Seconds between the client's looks at a running fit.
_POLL_SECONDS = 0.5
_NETWORK_PARAMS = ("machines", "local_listen_port", "time_out", "num_machines")


# --------------------------------------------------------------------------- client side


def _choose(params: dict[str, Any], name: str, default: Any) -> tuple[Any, bool]:
    """Value of LightGBM parameter ``name`` given by any alias (removing them all) and
    whether it was given."""
    found, value = False, default
    for alias in _lightgbm.param_aliases().get(name, (name,)):
        if alias in params:
            if not found:
                value, found = params[alias], True
            del params[alias]
    return value, found


def _machines_to_ports(machines: str, workers: list[str]) -> dict[str, int]:
    """Each worker's port from a ``machines`` list (matched by host name, as lightgbm.dask)."""
    entries = [m.strip() for m in str(machines).split(",") if m.strip()]
    if len(set(entries)) != len(entries):
        raise ValueError(f"machines={machines!r} has duplicates; each entry must be a unique host:port")
    ports: dict[str, list[int]] = defaultdict(list)
    for entry in entries:
        host, _, port = entry.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"machines={machines!r}: entry {entry!r} is not host:port")
        ports[host].append(int(port))
    out = {}
    for worker in workers:
        host = urlparse(worker).hostname or ""
        if not ports.get(host):
            raise ValueError(f"machines={machines!r} has no (unused) entry for the host of Dask worker {worker}; "
                             "list one host:port per worker that holds training data")
        out[worker] = ports[host].pop(0)
    return out


def _adaptive_rate_tags(sampler: Any, params: dict[str, Any]) -> list[str]:
    """The tags an adaptive rate exchanges its per-leaf sums under (one per decision), so that
    the client deletes their Variables (:mod:`smart_lgbm.samplers.adaptive`)."""
    # (sampler="auto" may choose FirstOrder(rate="auto", ...) on every worker: its default rate)
    rate = AdaptiveRate() if isinstance(sampler, Auto) else getattr(sampler, "rate", None)
    if not isinstance(rate, AdaptiveRate):
        return []
    # every alias given (the estimator's n_estimators, a num_iterations in its parameters):
    # deleting a tag never used costs nothing, missing one leaves a Variable behind
    aliases = _lightgbm.param_aliases().get("num_iterations", ("num_iterations",))
    rounds = max([100, *(int(params[a]) for a in aliases if a in params)])
    return [f"adaptive_rate_{i}" for i in rate.check_iterations(rounds)]


def _cleanup_variables(client: Client, prefix: str, num_machines: int, extra_tags: Sequence[str] = ()) -> None:
    for tag, rank in itertools.product([*_ALLGATHER_TAGS, *extra_tags], range(num_machines)):
        try:
            Variable(_variable_name(prefix, tag, rank), client=client).delete()
        except Exception:  # noqa: BLE001 - best effort: never set, or the scheduler is gone
            pass


class DaskTrainingError(RuntimeError):
    """A distributed fit failed on a worker, lost a worker or stalled; the estimator is unchanged."""


def _is_network_echo(exc: BaseException | None) -> bool:
    """Whether a worker's error is LightGBM's socket error from a peer that failed first."""
    return "Socket recv error" in str(exc) or "Socket send error" in str(exc)


def _watch(client: Client, futures: dict[str, Any], time_out_s: float, topic: str) -> dict[str, Any]:
    """Wait for every worker's training task, failing fast.

    Fails as soon as a task fails (with the worker named), a worker leaves the cluster, or
    a worker has shown no progress (its heartbeat) for ``time_out_s`` seconds.  A worker
    whose peer died may stay blocked inside LightGBM's network code (its receive loop spins
    on the closed socket; LightGBM's time-out only ends waits on a live peer), so the error
    names the workers to restart.
    """
    pending = set(futures.values())
    worker_of = {f.key: w for w, f in futures.items()}
    last_beat = {w: time.monotonic() for w in futures}
    seen = 0
    while pending:
        try:
            wait(list(pending), timeout=_POLL_SECONDS, return_when="FIRST_COMPLETED")
        except Exception:  # noqa: BLE001 - a time-out, or a task the scheduler forgot: both looked at below
            pass
        done = {f for f in pending if f.done()}
        pending -= done
        failed = [f for f in done if f.status == "error"]
        gone = _gone(client, futures)
        if failed and not gone:
            # A worker's error may be the echo of a peer that just died (a reset socket):
            # give the scheduler a moment to notice a departure, which is then the cause.
            time.sleep(_POLL_SECONDS)
            gone = _gone(client, futures)
        if gone:
            _cancel(client, futures)
            echo = "".join(f"; then worker {worker_of[f.key]} failed: {f.exception()}" for f in failed)
            raise DaskTrainingError(f"Dask worker {', '.join(gone)} left the cluster during training{echo}"
                                    f"{_restart_hint(futures, *gone)}")
        if failed and pending and all(_is_network_echo(f.exception()) for f in failed):
            # the worker that failed first ends its task a moment after its peers' echoes
            try:
                wait(list(pending), timeout=4 * _POLL_SECONDS, return_when="ALL_COMPLETED")
            except Exception:  # noqa: BLE001 - a time-out: report what there is
                pass
            more = {f for f in pending if f.done()}
            pending -= more
            failed += [f for f in more if f.status == "error"]
        if failed:
            # a worker whose training failed resets its links: its peers then fail with a
            # socket error, an echo; the cause is the other error
            failed.sort(key=lambda f: _is_network_echo(f.exception()))
            worker = worker_of[failed[0].key]
            exc = failed[0].exception()
            _cancel(client, futures)
            raise DaskTrainingError(
                f"training failed on Dask worker {worker}: {type(exc).__name__}: {exc}"
                f"{_restart_hint(futures, worker)}") from exc
        cancelled = [worker_of[f.key] for f in done if f.status == "cancelled"]
        if cancelled:
            _cancel(client, futures)
            raise DaskTrainingError(f"the training task of Dask worker {', '.join(cancelled)} was cancelled"
                                    f"{_restart_hint(futures, *cancelled)}")
        if not pending:
            break
        events = client.get_events(topic)
        now = time.monotonic()
        for _, msg in events[seen:]:
            last_beat[_worker_by_rank(futures, msg["rank"])] = now
        seen = len(events)
        stalled = [w for w in futures if futures[w] in pending and now - last_beat[w] > time_out_s]
        if stalled:
            _cancel(client, futures)
            raise DaskTrainingError(
                f"Dask worker {', '.join(stalled)} made no progress for {time_out_s:.0f} s (time_out); a peer may be "
                f"unreachable (blocked port, firewall){_restart_hint(futures)}")
    return {w: f.result() for w, f in futures.items()}


def _gone(client: Client, futures: dict[str, Any]) -> list[str]:
    """The workers of this fit that are no longer in the cluster."""
    _check_client(client, futures)
    info = client.scheduler_info(n_workers=-1)
    if "workers" not in info:  # the client lost its scheduler between the check and the call
        _check_client(client, futures, closing=True)
    alive = set(info["workers"])
    return [w for w in futures if w not in alive]


def _check_client(client: Client, futures: dict[str, Any], closing: bool = False) -> None:
    """Raise DaskTrainingError if the client was closed (or lost its scheduler) during fit."""
    if closing or client.status not in ("running", "connecting"):
        _cancel(client, futures)
        raise DaskTrainingError(
            f"the Dask client was closed (status {client.status!r}) while the fit was running; the training "
            "tasks were cancelled. Keep the client open until fit returns")


def _worker_by_rank(futures: dict[str, Any], rank: int) -> str:
    return list(futures)[rank]


def _restart_hint(futures: dict[str, Any], *failed: str) -> str:
    others = [w for w in futures if w not in failed]
    if not others:
        return ""
    return (f". The other workers of this fit ({', '.join(others)}) may stay blocked in LightGBM's network "
            f"calls; restart them before the next fit: client.restart_workers({others!r})")


def _cancel(client: Client, futures: dict[str, Any]) -> None:
    try:
        client.cancel(list(futures.values()), force=True)
    except Exception:  # noqa: BLE001 - cancelling is best effort on a failing cluster
        pass


@dataclass
class _FitOutcome:
    model: Any
    results: list[_WorkerResult] = field(default_factory=list)
    given_network: set[str] = field(default_factory=set)


def _fit_distributed(client: Client, model_factory: type, params: dict[str, Any], X: Any, y: Any, *,
                     sample_weight: Any = None, init_score: Any = None, group: Any = None,
                     eval_set: list | None = None, eval_names: list[str] | None = None,
                     eval_sample_weight: list | None = None, eval_class_weight: list | None = None,
                     eval_init_score: list | None = None, eval_group: list | None = None,
                     fit_kwargs: dict[str, Any]) -> _FitOutcome:
    """Train on the workers holding ``X``'s partitions; returns rank 0's fitted estimator."""
    params = dict(params)
    sampler = _check_sampler(params.get("sampler"), params.get("sampler_params"))  # fail on the client, early
    canonical = canonicalize({k: v for k, v in params.items() if k not in ("sampler", "sampler_params")})
    _refuse_for_dask(canonical, fit_kwargs)
    tree_learner, _ = _choose(params, "tree_learner", "data")
    if str(tree_learner).lower() not in ("data", "data_parallel", "voting", "voting_parallel"):
        raise ValueError(f"tree_learner={tree_learner!r} is not supported on Dask: use 'data' (the default) or "
                         "'voting'; 'feature' needs every row on every machine, and 'serial' trains one machine only")
    params["tree_learner"] = tree_learner
    for name in ("num_machines", "num_threads"):
        _choose(params, name, None)  # set per worker below, as lightgbm.dask does
    given = set()
    machines, found = _choose(params, "machines", None)
    if found:
        given.add("machines")
    listen_port, found = _choose(params, "local_listen_port", 12400)
    if found:
        given.add("local_listen_port")
    time_out, found = _choose(params, "time_out", _DEFAULT_TIME_OUT)
    if found:
        given.add("time_out")
    if isinstance(time_out, bool) or not isinstance(time_out, (int, np.integer)) or time_out < 1:
        raise ValueError(f"time_out must be a positive integer (minutes), got {time_out!r}")

    if eval_set is not None and not isinstance(eval_set, list):
        eval_set = [eval_set] if isinstance(eval_set, tuple) else eval_set
    fields = {"weight": eval_sample_weight, "init_score": eval_init_score, "group": eval_group}
    delayed_parts = _build_parts(X, y, sample_weight, init_score, group, eval_set, fields)
    part_futures = _compute_in_place(client, delayed_parts, X)
    wait(part_futures)
    for fut in part_futures:
        if fut.status == "error":
            fut.result()  # raises the partition's own error
    who_has = client.who_has(part_futures)
    by_worker: dict[str, list] = {}
    for fut in part_futures:  # ranks in the order of the workers' first partitions
        by_worker.setdefault(next(iter(who_has[fut.key])), []).append(fut)
    classifier = issubclass(model_factory, SmartClassifier)
    # (the network parameters are added per worker after the survey; each worker's own
    # checks run without them)
    check = _FitCheck(model_factory, {**params, "num_threads": 1}, eval_names, eval_class_weight, fit_kwargs,
                      issubclass(model_factory, SmartRanker))
    surveys = client.gather({w: client.submit(_survey, futs, classifier, check, workers=[w], allow_other_workers=False,
                                              pure=False) for w, futs in by_worker.items()})
    workers = [w for w in by_worker if surveys[w][0] > 0]  # a worker with only empty partitions takes no part
    if not workers:
        raise ValueError("X has no rows: every partition is empty")
    if classifier:
        classes = sorted(set().union(*(surveys[w][1] for w in workers)))
        for w in workers:
            if surveys[w][1] != classes:
                raise ValueError(
                    f"Dask worker {w} holds labels {surveys[w][1]} but the training data has {classes}: every "
                    "worker needs rows of every class (LightGBM's classifier encodes the labels on each worker "
                    "from its own rows); shuffle or repartition the data")

    if "machines" in given:
        ports = _machines_to_ports(machines, workers)
    elif "local_listen_port" in given:
        hosts = [urlparse(w).hostname for w in workers]
        if len(set(hosts)) < len(hosts):
            raise ValueError("local_listen_port was given, but a host runs more than one Dask worker holding "
                             "training data, and they cannot share a port: omit local_listen_port (free ports are "
                             "then found) or pass machines")
        ports = dict.fromkeys(workers, int(listen_port))
    else:
        reservations = {w: client.submit(_reserve_port, workers=[w], allow_other_workers=False, pure=False)
                        for w in workers}
        ports = client.gather({w: client.submit(_port_of, r, workers=[w], pure=False)
                               for w, r in reservations.items()})
    network_machines = ",".join(f"{urlparse(w).hostname}:{ports[w]}" for w in workers)
    num_machines = len(workers)
    prefix = f"smart-lgbm-{uuid.uuid4().hex}"
    topic = f"{prefix}-progress"
    ncores = client.ncores()
    futures = {}
    for rank, worker in enumerate(workers):
        network = Network(network_machines, ports[worker], int(time_out), num_machines)
        futures[worker] = client.submit(
            _train_on_worker, model_factory=model_factory, params={**params, "num_threads": ncores[worker]},
            parts=by_worker[worker], network=network, rank=rank,
            allgather=_SchedulerAllgather(prefix, rank, num_machines, float(time_out) * 60),
            topic=topic, eval_names=eval_names, eval_class_weight=eval_class_weight, fit_kwargs=fit_kwargs,
            return_model=rank == 0,
            reservation=None if "machines" in given or "local_listen_port" in given else reservations[worker],
            workers=[worker], allow_other_workers=False, pure=False)
    try:
        by_address = _watch(client, futures, float(time_out) * 60, topic)
    finally:
        _cleanup_variables(client, prefix, num_machines, _adaptive_rate_tags(sampler, params))
    results = [by_address[w] for w in workers]
    if len({r.digest for r in results}) != 1:
        raise DaskTrainingError("the workers finished with different models (they must build the same trees); "
                                "this is a bug in smart_lgbm, please report it")
    return _FitOutcome(results[0].model, results, given)


def _partition_holders(client: Client, X: Any, count: int) -> list[str | None]:
    """The worker holding each partition of a persisted ``X`` (None where unknown)."""
    futures = client.futures_of(X)
    if not futures:
        return [None] * count  # not persisted: Dask decides
    wait(futures)
    who_has = client.who_has(futures)
    holders: list[str | None] = [None] * count
    for fut in futures:
        key = fut.key
        index = key[1] if isinstance(key, tuple) and len(key) >= 2 and isinstance(key[1], int) else None
        workers = sorted(who_has.get(key, ()))
        if index is not None and 0 <= index < count and workers:
            holders[index] = workers[0]
    return holders


def _compute_in_place(client: Client, parts: list[Any], X: Any) -> list[Any]:
    """Compute each partition's pieces on the worker that holds its ``X`` partition.

    Left to itself, Dask may run these small tasks anywhere (it balances them like root
    tasks), moving the data and giving a different placement, hence different ranks and
    bins, on every fit.  Pinned to where ``X`` lives, nothing moves but the labels and
    weights that live elsewhere, and the same persisted data gives the same fit.
    """
    holders = _partition_holders(client, X, len(parts))
    if all(h is None for h in holders):
        return client.compute(parts)
    return [client.compute(part, workers=[h] if h else None, allow_other_workers=h is None)
            for part, h in zip(parts, holders, strict=True)]


def _refuse_for_dask(params: dict[str, Any], fit_kwargs: dict[str, Any]) -> None:
    early = params.get("early_stopping_round")
    callbacks = fit_kwargs.get("callbacks") or []
    if (early is not None and int(early) > 0) or any(_lightgbm.is_early_stopping_callback(cb) for cb in callbacks):
        raise ValueError(
            "early stopping is not supported on Dask: each worker evaluates only its own rows and would stop at "
            "its own iteration, leaving the others waiting on LightGBM's network; choose n_estimators instead")
