"""Distributed SMART on Dask: ``DaskSmartClassifier``, ``DaskSmartRegressor``, ``DaskSmartRanker``.

The estimators mirror :mod:`lightgbm.dask` (same constructor parameters plus ``sampler``,
``sampler_params`` and ``client``; ``fit`` on Dask arrays and DataFrames; ``predict`` on
Dask collections; ``to_local()``).  Training runs :func:`smart_lgbm.train` on every Dask
worker that holds training rows, over the partitions already there (no reshuffle):

1. the partitions of ``X``, ``y`` (and weights, groups, initial scores, evaluation sets) are
   gathered into per-partition pieces, each computed where its data lives, as lightgbm.dask
   does; the workers holding them, ordered by their first partition, get ranks 0, 1, ...;
2. a short survey counts each worker's rows (a worker with only empty partitions takes no
   part), for a classifier checks that every worker sees every class (LightGBM's
   classifier encodes labels on each worker from its own rows), and runs on every worker
   all the checks its fit makes before training (:func:`smart_lgbm.sklearn.check_fit`: at
   least two rows, labels, weights, groups, evaluation sets...), so that no refusal comes
   after a worker joined LightGBM's network;
3. LightGBM's network parameters are set as lightgbm.dask sets them (``machines``,
   ``local_listen_port``, ``time_out``; free ports found on the workers by default);
4. each worker joins LightGBM's network *before* binning its rows (bin boundaries are found
   jointly, as in lightgbm.dask) and runs the engine: its own rows' gradients, its own
   sample (sampling stream = its rank), LightGBM's data-parallel learner building each tree
   from all workers' samples, its own rows' scores updated (:mod:`smart_lgbm.distributed`);
5. the client watches the run: a worker's error, a worker leaving the cluster, or no
   progress from a worker for ``time_out`` minutes fails the fit at once with a message
   naming the worker; the estimator is only changed by a fit that succeeded.  Every worker
   returns a digest of its model, and the fit fails unless all are identical.

What is refused, and why: early stopping (each worker evaluates only its own rows and would
stop at its own iteration; the others would then wait on the network forever),
``tree_learner="feature"`` (needs all rows on every machine, and LightGBM's C API refuses
it), and everything :func:`smart_lgbm.train` refuses.  See ``docs/dask.md``.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import socket
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import lightgbm as lgb
import numpy as np
import pandas as pd
import scipy.sparse as ss

try:
    import dask.array as da
    import dask.dataframe as dd
    from dask import delayed
    from distributed import Client, Variable, default_client, get_client, get_worker, wait
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "smart_lgbm.dask needs dask and distributed: pip install 'smart-lgbm[dask]' "
        f"(import failed: {exc})"
    ) from exc

from . import _lightgbm
from .distributed import Network, Worker, on_network
from .params import canonicalize
from .samplers import AdaptiveRate
from .sklearn import SmartClassifier, SmartRanker, SmartRegressor, _check_sampler, _smart_init

__all__ = ["DaskSmartClassifier", "DaskSmartRanker", "DaskSmartRegressor", "DaskTrainingError"]

#: LightGBM's default ``time_out`` (minutes), as lightgbm.dask uses it.
_DEFAULT_TIME_OUT = 120
#: Seconds between the client's looks at a running fit.
_POLL_SECONDS = 0.5
_NETWORK_PARAMS = ("machines", "local_listen_port", "time_out", "num_machines")


# --------------------------------------------------------------------------- input parts


def _is_dask_collection(value: Any) -> bool:
    return isinstance(value, (da.Array, dd.DataFrame, dd.Series))


def _split(name: str, collection: Any, matrix: bool) -> list[Any]:
    """The delayed partitions of a Dask collection (row blocks), checked."""
    if not _is_dask_collection(collection):
        raise TypeError(f"{name} must be a Dask Array, Dask DataFrame or Dask Series, got {type(collection).__name__}")
    parts = collection.to_delayed()
    if isinstance(parts, np.ndarray):  # a Dask Array: a grid of blocks
        if parts.ndim == 2 and parts.shape[1] != 1:
            raise ValueError(f"{name} is chunked along its columns ({parts.shape[1]} column blocks); give it one "
                             f"block across the columns: {name}.rechunk({{1: {name}.shape[1]}})")
        if matrix and collection.ndim != 2:
            raise ValueError(f"{name} must be 2-D (rows x features), got {collection.ndim}-D")
        parts = parts.reshape(-1).tolist()
    return list(parts)


def _aligned(name: str, collection: Any, count: int, matrix: bool = False) -> list[Any]:
    parts = _split(name, collection, matrix)
    if len(parts) != count:
        raise ValueError(f"{name} has {len(parts)} partitions but X has {count}; give it the same partitions as X")
    return parts


def _concat(pieces: list[Any]) -> Any:
    first = pieces[0]
    if len(pieces) == 1:
        return first
    if isinstance(first, np.ndarray):
        return np.concatenate(pieces, axis=0)
    if isinstance(first, (pd.DataFrame, pd.Series)):
        return pd.concat(pieces, axis=0)
    if ss.issparse(first):
        return ss.vstack(pieces, format="csr")
    raise TypeError(f"partitions must hold numpy arrays, pandas objects or scipy sparse matrices, "
                    f"got {type(first).__name__}")


def _num_rows(part: Any) -> int:
    return int(part.shape[0])


#: Marks an evaluation set that is the training data itself (lightgbm.dask's convention:
#: the worker then passes its training X, y, and LightGBM evaluates the training set).
_TRAINING = "__training__"
_EVAL_FIELDS = ("weight", "init_score", "group")


def _build_parts(X: Any, y: Any, sample_weight: Any, init_score: Any, group: Any, eval_set: list | None,
                 eval_fields: dict[str, list | None]) -> list[dict[str, Any]]:
    """One delayed dict per partition of ``X``: its rows and their labels, weights... and
    the evaluation-set partitions assigned to it (eval partition ``j`` goes with training
    partition ``j % n``, as in lightgbm.dask)."""
    data = _split("X", X, matrix=True)
    n = len(data)
    parts: list[dict[str, Any]] = [{"data": x} for x in data]
    for key, name, value in (("label", "y", y), ("weight", "sample_weight", sample_weight),
                             ("init_score", "init_score", init_score), ("group", "group", group)):
        if value is not None:
            for part, piece in zip(parts, _aligned(name, value, n), strict=True):
                part[key] = piece
    for part in parts:
        part["eval"] = [[] for _ in eval_set or []]
    for i, (X_eval, y_eval) in enumerate(eval_set or []):
        if X_eval is X and y_eval is y:
            for part in parts:
                part["eval"][i] = _TRAINING
            continue
        x_parts = _split(f"eval_set[{i}][0]", X_eval, matrix=True)
        pieces = [{"data": x} for x in x_parts]
        for key, name, value in [("label", f"eval_set[{i}][1]", y_eval)] + [
                (f, f"eval_{'sample_weight' if f == 'weight' else f}[{i}]", _entry(eval_fields[f], i))
                for f in _EVAL_FIELDS]:
            if value is not None:
                for piece, p in zip(pieces, _aligned(name, value, len(x_parts)), strict=True):
                    piece[key] = p
        for j, piece in enumerate(pieces):
            parts[j % n]["eval"][i].append(piece)
    return [delayed(dict)(part) for part in parts]


def _entry(values: list | None, i: int) -> Any:
    return values[i] if values is not None and i < len(values) else None


@dataclass
class _Local:
    """A worker's training rows and evaluation sets, as ``fit`` arguments."""

    X: Any
    y: Any
    fit_kwargs: dict[str, Any]
    eval_names: list[str]  # names of the sets evaluated here, in order


def _assemble(parts: list[dict[str, Any]], eval_names: list[str] | None, eval_class_weight: list | None,
              is_ranker: bool) -> _Local:
    """Concatenate a worker's partitions into ``fit`` arguments."""
    X = _concat([p["data"] for p in parts])
    y = _concat([p["label"] for p in parts])
    kwargs: dict[str, Any] = {}
    for key, arg in (("weight", "sample_weight"), ("init_score", "init_score"), ("group", "group")):
        if key in parts[0]:
            kwargs[arg] = _concat([p[key] for p in parts])
    n_evals = len(parts[0]["eval"])
    if not n_evals:
        return _Local(X, y, kwargs, [])
    sets, names, present = [], [], []
    fields: dict[str, list] = {f: [] for f in _EVAL_FIELDS}
    for i in range(n_evals):
        name = eval_names[i] if eval_names else f"valid_{i}"
        if parts[0]["eval"][i] == _TRAINING:
            sets.append((X, y))
            for f in _EVAL_FIELDS:
                fields[f].append(kwargs.get("sample_weight" if f == "weight" else f))
        else:
            pieces = [piece for p in parts for piece in p["eval"][i]]
            if not pieces:
                continue  # no partition of this evaluation set lives here
            sets.append((_concat([q["data"] for q in pieces]), _concat([q["label"] for q in pieces])))
            for f in _EVAL_FIELDS:
                fields[f].append(_concat([q[f] for q in pieces]) if f in pieces[0] else None)
        names.append(name)
        present.append(i)
    kwargs["eval_set"] = sets
    kwargs["eval_names"] = names
    for f, arg in (("weight", "eval_sample_weight"), ("init_score", "eval_init_score"), ("group", "eval_group")):
        if f == "group" and not is_ranker:
            continue
        if any(v is not None for v in fields[f]):
            kwargs[arg] = fields[f]
    if eval_class_weight:
        kwargs["eval_class_weight"] = [eval_class_weight[i] for i in present]
    return _Local(X, y, kwargs, names)


# --------------------------------------------------------------------------- worker side


def _check_lengths(parts: list[dict[str, Any]]) -> None:
    """Refuse partitions whose X, labels, weights, init scores and groups do not line up.

    Run in the survey, before any worker joins LightGBM's network: found later, inside
    training, one worker fails while the others wait in the network for it.
    """
    def check(piece: dict[str, Any], names: dict[str, str], what: str) -> None:
        n = _num_rows(piece["data"])
        for key, name in names.items():
            if key not in piece:
                continue
            if key == "group":
                count = int(np.sum(np.asarray(piece[key])))
                if count != n:
                    raise ValueError(f"a partition of {what} has {n} rows but its partition of {name} sums to "
                                     f"{count}: each partition's query sizes must add up to its rows")
            elif _num_rows(piece[key]) != n:
                raise ValueError(f"a partition of {what} has {n} rows but its partition of {name} has "
                                 f"{_num_rows(piece[key])}: give {name} the same row blocks (chunks) as {what}")

    for part in parts:
        check(part, {"label": "y", "weight": "sample_weight", "init_score": "init_score", "group": "group"}, "X")
        for i, pieces in enumerate(part["eval"]):
            if pieces == _TRAINING:
                continue
            for piece in pieces:
                check(piece, {"label": f"eval_set[{i}][1]", "weight": f"eval_sample_weight[{i}]",
                              "init_score": f"eval_init_score[{i}]", "group": f"eval_group[{i}]"},
                      f"eval_set[{i}][0]")


@dataclass
class _FitCheck:
    """What :func:`_survey` needs to run a worker's fit checks (:func:`smart_lgbm.sklearn.check_fit`)."""

    model_factory: type
    params: dict[str, Any]
    eval_names: list[str] | None
    eval_class_weight: list | None
    fit_kwargs: dict[str, Any]


def _survey(parts: list[dict[str, Any]], classifier: bool, check: _FitCheck | None = None) -> tuple[int, list | None]:
    """A worker's number of training rows and, for a classifier, its sorted classes (after
    :func:`_check_lengths`).

    With ``check``, a worker with rows also runs every check its fit makes before training
    (scikit-learn's, LightGBM's estimator's, smart_lgbm.train's: at least two rows, labels,
    weights, groups, initial scores, evaluation sets), on its own rows, before any worker
    joins LightGBM's network: found there, inside training, one worker's refusal would leave
    the others waiting in the network for it.  A refusal names the worker.
    """
    _check_lengths(parts)
    rows = sum(_num_rows(p["data"]) for p in parts)
    if rows and check is not None:
        from .sklearn import check_fit

        local = _assemble(parts, check.eval_names, check.eval_class_weight,
                          issubclass(check.model_factory, SmartRanker))
        try:
            check_fit(check.model_factory(**check.params), local.X, local.y,
                      **{**check.fit_kwargs, **local.fit_kwargs})
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"Dask worker {get_worker().address} ({rows} rows): {exc}") from None
    if not classifier or rows == 0:
        return rows, None
    labels = _concat([p["label"] for p in parts])
    return rows, np.unique(np.asarray(labels).reshape(-1)).tolist()


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


#: Tags the workers exchange (the client deletes their Variables after the fit).
_ALLGATHER_TAGS = ("initial_score", "class_weight_sums", "class_counts")


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
    rate = getattr(sampler, "rate", None)
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


def _is_network_echo(exc: BaseException | None) -> bool:
    """Whether a worker's error is LightGBM's socket error from a peer that failed first."""
    return "Socket recv error" in str(exc) or "Socket send error" in str(exc)


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
    check = _FitCheck(model_factory, {**params, "num_threads": 1}, eval_names, eval_class_weight, fit_kwargs)
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


# --------------------------------------------------------------------------- prediction


def _predict_part(part: Any, model: Any, method: str, kwargs: dict[str, Any]) -> Any:
    if part.shape[0] == 0:
        result = np.zeros((0,))
    else:
        result = getattr(model, method)(part, **kwargs)
    if isinstance(part, pd.DataFrame):
        if result.ndim == 2:
            return pd.DataFrame(result, index=part.index)
        return pd.Series(result, index=part.index, name="predictions")
    return result


def _predict(model: Any, X: Any, method: str, dtype: Any, kwargs: dict[str, Any]) -> da.Array:
    """``model.method(X_partition)`` for every partition, as one Dask Array."""
    if isinstance(X, dd.DataFrame):
        sample = _predict_part(X._meta_nonempty, model, method, kwargs)
        meta = sample.iloc[:0]
        return X.map_partitions(_predict_part, model, method, kwargs, meta=meta).values
    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows x features), got {X.ndim}-D")
        if len(X.chunks[1]) != 1:
            X = X.rechunk({1: X.shape[1]})
        meta_row = X._meta if ss.issparse(X._meta) else np.zeros((1, X.shape[1]), dtype=X.dtype)
        if ss.issparse(meta_row):
            meta_row = ss.csr_matrix((1, X.shape[1]), dtype=X.dtype)
        sample = _predict_part(meta_row, model, method, kwargs)
        if sample.ndim == 1:
            return X.map_blocks(_predict_part, model, method, kwargs, drop_axis=1, dtype=dtype,
                                meta=np.zeros((0,), dtype=dtype))
        return X.map_blocks(_predict_part, model, method, kwargs, chunks=(X.chunks[0], (sample.shape[1],)),
                            dtype=dtype, meta=np.zeros((0, 0), dtype=dtype))
    raise TypeError(f"X must be a Dask Array or Dask DataFrame, got {type(X).__name__}")


# --------------------------------------------------------------------------- estimators


class _DaskSmartModel:
    """What the three Dask estimators share: the fit on the workers, ``to_local``, pickling."""

    # (The estimators' fit/predict take and give Dask collections, so their signatures
    # differ from the local estimators' ("type: ignore[override]"), as in lightgbm.dask.)
    _local_class: type
    # from the LGBMModel subclass each estimator also derives from
    client: Client | None
    get_params: Callable[..., dict[str, Any]]

    @property
    def client_(self) -> Client:
        """The Dask client used by ``fit`` and ``predict`` (``client`` or the default one)."""
        if not getattr(self, "fitted_", False):
            raise _lightgbm.sklearn_not_fitted_error()("Cannot access property client_ before calling fit().")
        return self._dask_client()

    def _dask_client(self) -> Client:
        return self.client if self.client is not None else default_client()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["client"] = None  # a Client cannot be pickled (lightgbm.dask drops it too)
        return state

    def _dask_fit(self, X: Any, y: Any, **kwargs: Any) -> Any:
        params = self.get_params()
        params.pop("client", None)
        known = {k: kwargs.pop(k) for k in ("sample_weight", "init_score", "group", "eval_set", "eval_names",
                                            "eval_sample_weight", "eval_class_weight", "eval_init_score",
                                            "eval_group") if k in kwargs}
        for key in ("eval_metric", "eval_at"):
            if kwargs.get(key) is None:
                kwargs.pop(key, None)
        client = self._dask_client()
        try:
            outcome = _fit_distributed(client, self._local_class, params, X, y, **known, fit_kwargs=kwargs)
        except DaskTrainingError:
            raise
        except Exception as exc:
            if client.status in ("running", "connecting"):
                raise
            # closed at any step of the fit (survey, port search, training): whatever the
            # step's own error (a cancelled future, a KeyError from an empty scheduler reply)
            raise DaskTrainingError(
                f"the Dask client was closed (status {client.status!r}) while the fit was running "
                f"({type(exc).__name__} in the meantime); keep the client open until fit returns") from exc
        # Only now, after success, does the estimator change.
        own = set(self.get_params())
        for key, value in outcome.model.__dict__.items():
            if key not in own and key not in ("_other_params", "client"):
                self.__dict__[key] = value
        self._worker_records = [r.records for r in outcome.results]
        self._worker_rows = [r.num_rows for r in outcome.results]
        self._sampling_record = _combine_records(outcome.results)
        return self

    @property
    def worker_records_(self) -> list[dict[str, list]]:
        """list of dict: Each worker's engine record per iteration, in rank order: rows drawn
        (``num_sampled``), ``sampling_rate``, and the seconds of the sample, the tree (including
        LightGBM's network exchange) and the score update."""
        if not getattr(self, "fitted_", False):
            raise _lightgbm.sklearn_not_fitted_error()("No worker record found. Need to call fit beforehand.")
        return self._worker_records

    def to_local(self) -> Any:
        """The fitted model as the matching local estimator (``SmartClassifier``...), holding
        a stock :class:`lightgbm.Booster`."""
        params = self.get_params()
        params.pop("client", None)
        local = self._local_class(**params)
        own = set(params) | {"client"}
        for key, value in self.__dict__.items():
            if key not in own and key != "_other_params":
                local.__dict__[key] = value
        return local

    def _dask_predict(self, X: Any, method: str, dtype: Any, **kwargs: Any) -> da.Array:
        if not getattr(self, "fitted_", False):
            raise _lightgbm.sklearn_not_fitted_error()("Estimator not fitted, call fit before exploiting the model.")
        return _predict(self.to_local(), X, method, dtype, kwargs)


def _combine_records(results: list[_WorkerResult]) -> dict[str, list]:
    """The run's sampling record from the workers': rows drawn added up, the rate over all
    rows, and the seconds of the slowest worker (every iteration waits for it)."""
    total_rows = sum(r.num_rows for r in results)
    sampled = [sum(values) for values in zip(*(r.records.get("num_sampled", []) for r in results), strict=False)]
    out: dict[str, list] = {"num_sampled": sampled, "sampling_rate": [s / total_rows for s in sampled]}
    for key in ("sample_seconds", "seconds"):
        out[key] = [max(values) for values in zip(*(r.records.get(key, []) for r in results), strict=False)]
    return out


def _dask_init(self: Any, *, client: Client | None = None, **kwargs: Any) -> None:
    # Only stores parameters (scikit-learn's rule), as the local estimators.
    self.client = client
    _smart_init(self, **kwargs)


_params = list(inspect.signature(_smart_init).parameters.values())
_dask_init.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    _params[:-1] + [inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None)] + _params[-1:])
_dask_init.__doc__ = (_smart_init.__doc__ or "").replace(
    "    **kwargs",
    """    client : dask.distributed.Client or None, optional (default=None)
        Dask client; None uses ``distributed.default_client()`` when fitting and predicting.
        Not kept when the estimator is pickled.
    **kwargs""", 1)

_FIT_DOC = """Fit on Dask collections: every worker trains on the partitions it holds.

        Parameters
        ----------
        X : Dask Array or Dask DataFrame of shape = [n_samples, n_features]
            Row-partitioned; each worker's partitions are its rows.
        y : Dask Array or Dask Series, partitioned like X
        sample_weight, init_score{group} : Dask Array or Dask Series, optional
            Partitioned like X.
        eval_set : list of (X, y) pairs of Dask collections, optional
            Partition ``j`` is evaluated on the worker of training partition ``j % n``; each
            worker evaluates only the rows it holds, and ``evals_result_`` is worker 0's.
        eval_names, eval_sample_weight, eval_init_score{eval_more} : optional
            As in lightgbm.dask.
        eval_metric : str, callable or list, optional
        **kwargs
            Passed to the local estimator's ``fit`` on every worker (``callbacks``,
            ``feature_name``, ``categorical_feature``...).  Early stopping is refused.

        Returns
        -------
        self
        """


class DaskSmartClassifier(SmartClassifier, _DaskSmartModel):
    """Distributed :class:`smart_lgbm.SmartClassifier` on Dask, mirroring
    :class:`lightgbm.DaskLGBMClassifier`; see :mod:`smart_lgbm.dask`."""

    _local_class = SmartClassifier
    __init__ = _dask_init

    def fit(self, X: Any, y: Any, sample_weight: Any = None, init_score: Any = None, eval_set: list | None = None,  # type: ignore[override]
            eval_names: list[str] | None = None, eval_sample_weight: list | None = None,
            eval_class_weight: list | None = None, eval_init_score: list | None = None, eval_metric: Any = None,
            **kwargs: Any) -> DaskSmartClassifier:
        return self._dask_fit(X, y, sample_weight=sample_weight, init_score=init_score, eval_set=eval_set,
                              eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                              eval_class_weight=eval_class_weight, eval_init_score=eval_init_score,
                              eval_metric=eval_metric, **kwargs)

    fit.__doc__ = _FIT_DOC.format(group="", eval_more=", eval_class_weight")

    def predict(self, X: Any, **kwargs: Any) -> da.Array:  # type: ignore[override]
        """Predicted class labels (or raw scores, leaves, contributions, as ``kwargs`` ask)
        of every row of a Dask Array or DataFrame, as a Dask Array."""
        return self._dask_predict(X, "predict", self.classes_.dtype, **kwargs)

    def predict_proba(self, X: Any, **kwargs: Any) -> da.Array:  # type: ignore[override]
        """Class probabilities of every row of a Dask Array or DataFrame, as a Dask Array."""
        return self._dask_predict(X, "predict_proba", np.float64, **kwargs)


class DaskSmartRegressor(SmartRegressor, _DaskSmartModel):
    """Distributed :class:`smart_lgbm.SmartRegressor` on Dask, mirroring
    :class:`lightgbm.DaskLGBMRegressor`; see :mod:`smart_lgbm.dask`."""

    _local_class = SmartRegressor
    __init__ = _dask_init

    def fit(self, X: Any, y: Any, sample_weight: Any = None, init_score: Any = None, eval_set: list | None = None,  # type: ignore[override]
            eval_names: list[str] | None = None, eval_sample_weight: list | None = None,
            eval_init_score: list | None = None, eval_metric: Any = None, **kwargs: Any) -> DaskSmartRegressor:
        return self._dask_fit(X, y, sample_weight=sample_weight, init_score=init_score, eval_set=eval_set,
                              eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                              eval_init_score=eval_init_score, eval_metric=eval_metric, **kwargs)

    fit.__doc__ = _FIT_DOC.format(group="", eval_more="")

    def predict(self, X: Any, **kwargs: Any) -> da.Array:  # type: ignore[override]
        """Predictions for every row of a Dask Array or DataFrame, as a Dask Array."""
        return self._dask_predict(X, "predict", np.float64, **kwargs)


class DaskSmartRanker(SmartRanker, _DaskSmartModel):
    """Distributed :class:`smart_lgbm.SmartRanker` on Dask, mirroring
    :class:`lightgbm.DaskLGBMRanker`; see :mod:`smart_lgbm.dask`.  Every query must lie
    within one partition (``group`` gives the query sizes of each partition in order)."""

    _local_class = SmartRanker
    __init__ = _dask_init

    def fit(self, X: Any, y: Any, sample_weight: Any = None, init_score: Any = None, group: Any = None,  # type: ignore[override]
            eval_set: list | None = None, eval_names: list[str] | None = None, eval_sample_weight: list | None = None,
            eval_init_score: list | None = None, eval_group: list | None = None, eval_metric: Any = None,
            eval_at: list[int] | tuple[int, ...] = (1, 2, 3, 4, 5), **kwargs: Any) -> DaskSmartRanker:
        if group is None:
            raise ValueError("group is required for ranking: a Dask Array or Series of query sizes, partitioned "
                             "like X (each partition's queries in order, every query within one partition)")
        return self._dask_fit(X, y, sample_weight=sample_weight, init_score=init_score, group=group,
                              eval_set=eval_set, eval_names=eval_names, eval_sample_weight=eval_sample_weight,
                              eval_init_score=eval_init_score, eval_group=eval_group, eval_metric=eval_metric,
                              eval_at=eval_at, **kwargs)

    fit.__doc__ = _FIT_DOC.format(group=", group", eval_more=", eval_group, eval_at")

    def predict(self, X: Any, **kwargs: Any) -> da.Array:  # type: ignore[override]
        """Relevance scores for every row of a Dask Array or DataFrame, as a Dask Array."""
        return self._dask_predict(X, "predict", np.float64, **kwargs)
