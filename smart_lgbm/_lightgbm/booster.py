"""The run's one tree-fitting C Booster: reset to the sample, one custom update, read the
outputs, park on one row, roll back; or, while every row is drawn, stay on the training
set and keep the trees (:class:`OneIterationBooster`)."""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import lightgbm as lgb
import numpy as np

from ._capi import _LIB, _c_str, _check
from .datasets import SubsetHandle
from .model_text import exact_internal_values, fold_bias, leaf_values_of, split_model_string, tree_bodies
from .params import param_aliases


@dataclass
class IterationTrees:
    """The K trees of one engine iteration.

    When no tree could split (LightGBM's "finished"), ``finished`` is True, ``texts`` holds
    LightGBM's constant trees (output 0, plus the bias if one was folded in) and
    ``outputs`` is empty.

    ``outputs`` and ``leaves`` are keyed as the ``sets`` given to
    :meth:`OneIterationBooster.fit` (the engine's keys: :mod:`smart_lgbm._engine.update_plan`),
    never by position.

    Attributes
    ----------
    texts : list of str
        Each tree's body in LightGBM's model text (without the ``Tree=i`` line); empty
        only for a finished iteration after kept ones (``fit(keep=True)``), whose run has
        trees already.
    outputs : dict of key -> ndarray of shape (n_set, K), float64
        For every requested binned set, each row's output in each of the K trees: exactly
        the double a stock model adds for that tree when predicting the row.
    leaves : dict of key -> ndarray of shape (n_set, K), int32, or None
        Each row's leaf in each of the K trees, when asked for.
    model : str
        The model text LightGBM wrote for these trees (``header`` and ``parameters`` come
        from it).
    finished : bool
    """

    texts: list[str]
    outputs: dict[int, np.ndarray]
    leaves: dict[int, np.ndarray] | None
    model: str
    finished: bool = False

    @property
    def leaf_values(self) -> list[np.ndarray]:
        """Each tree's leaf outputs (learning rate applied), parsed from ``texts`` exactly."""
        return [leaf_values_of(t) for t in self.texts]

    @property
    def header(self) -> str:
        """The model text header (feature names and infos) LightGBM wrote."""
        return split_model_string(self.model)[0]

    @property
    def parameters(self) -> str:
        """The ``parameters:`` section LightGBM wrote."""
        return split_model_string(self.model)[2]


class _StringBuffer:
    """A reusable output buffer for LGBM_BoosterSaveModelToString."""

    def __init__(self) -> None:
        self.size = 1 << 16
        self.buf = ctypes.create_string_buffer(self.size)

    def model_string(self, booster: ctypes.c_void_p, start_iteration: int = 0, num_iteration: int = -1) -> str:
        # (a start_iteration writes that iteration's trees as Tree=0...; num_iteration=1 also
        # keeps the feature importances LightGBM appends from counting every kept tree)
        out_len = ctypes.c_int64(0)
        for _ in range(2):
            _check(
                _LIB.LGBM_BoosterSaveModelToString(
                    booster, ctypes.c_int(start_iteration), ctypes.c_int(num_iteration), ctypes.c_int(0),
                    ctypes.c_int64(self.size), ctypes.byref(out_len), self.buf,
                )
            )
            if out_len.value <= self.size:
                # (exactly the string's bytes: ``buf.raw`` would copy the whole buffer first)
                return ctypes.string_at(self.buf, out_len.value - 1).decode("utf-8")
            self.size = int(out_len.value * 2)
            self.buf = ctypes.create_string_buffer(self.size)
        raise RuntimeError("model string did not fit the buffer")  # pragma: no cover


def _leaf_index_step(inits: list[np.ndarray]) -> float:
    """The power of two that leaf indices are written as multiples of.

    LightGBM's predictor starts from a set's init score, so a leaf is read back as
    ``round((init + j * step) - init) / step``.  The roundings of those sums are below
    2**-11 * step while ``|init| < 2**40 * step``; ``step`` is 1 unless init scores are
    that large (near 2**53 a step of 1 would lose the index itself).
    """
    largest = max((float(np.abs(init).max(initial=0.0)) for init in inits), default=0.0)
    return 1.0 if largest < 2.0**40 else math.ldexp(1.0, math.frexp(largest)[1] - 40)


def _samples_columns_by_tree(params: str) -> bool:
    """Whether LightGBM's column sampler draws a feature subset per tree with these
    parameters (``feature_fraction`` below 1): then every reset of the training data, as every
    parameter reset, draws one subset from its random generator (``ColSampler::ResetByTree``)."""
    names = set(param_aliases()["feature_fraction"])
    for pair in params.split():
        key, _, value = pair.partition("=")
        if key in names:
            try:
                return float(value) < 1.0
            except ValueError:  # LightGBM refuses it when the Booster is created or reset
                return False
    return False


def _featureless(header: str) -> bool:
    """Whether a model header's ``feature_infos`` says no feature is used (all ``none``)."""
    for line in header.split("\n"):
        if line.startswith("feature_infos="):
            return all(info == "none" for info in line[len("feature_infos="):].split(" "))
    return False


class OneIterationBooster:
    """Fits the K trees of one iteration at a time on subset Datasets, with given gradients.

    One C Booster (custom objective) lives for the whole run and never keeps a tree: per
    iteration it is pointed at the sample's Dataset (``LGBM_BoosterResetTrainingData``),
    runs one ``UpdateOneIterCustom``, hands its trees back as text and rolls them back.
    Creating a Booster per iteration instead costs more than the tree itself on small
    data: LightGBM seeds a random generator per feature and allocates the histogram pool
    every time.

    Each row's tree output on each requested binned set is computed inside LightGBM: the
    Booster is pointed at that set, and LightGBM's binned-data predictor (the one that
    updates scores in stock training, O(n)) adds the trees' outputs to scores starting
    at 0.0, which are then those outputs exactly.  When leaves are wanted (or a set has
    LightGBM init scores), the leaf outputs are first overwritten with the leaf indices
    0..L-1, so that the predictor writes each row's leaf, and the outputs are looked up.
    Either way the engine adds exactly the doubles a stock model adds when predicting.
    Before the rollback the Booster is pointed at a one-row Dataset, so that removing the
    trees costs nothing.

    Iterations that draw every row (``fit(..., keep=True)``) skip all of that, as stock
    training does: the Booster stays on the whole training set and keeps their trees (its
    own training scores, their sum, are never read; the engine walks its rows itself), and
    only the newest iteration's trees are written as text.  The first fit that does not
    keep parks the Booster on the one-row Dataset and rolls the kept trees back there.
    A kept iteration grows the same trees as one reset to the training set and rolled
    back: a reset changes nothing the tree learner reads except the draws of its column
    sampler, which a parameter reset repeats (:meth:`_fit_kept`).

    Parameters
    ----------
    params : str
        LightGBM parameters of the first iteration (``objective=custom``).
    num_model_per_iteration : int
    train : C Dataset handle the subsets are taken from (its first row makes the one-row set).
    subset_params : str
        Parameters for ``LGBM_DatasetGetSubset``.
    """

    def __init__(self, params: str, num_model_per_iteration: int, train: ctypes.c_void_p,
                 subset_params: str) -> None:
        self.k = num_model_per_iteration
        self._buffer = _StringBuffer()
        self._params = params
        self._draws_columns = _samples_columns_by_tree(params)
        self._train = train
        self._parked = SubsetHandle(train, np.zeros(1, dtype=np.int32), subset_params)
        self.handle = ctypes.c_void_p()
        #: iterations whose trees the C Booster keeps (fits with ``keep=True`` in a row)
        self.kept = 0
        self._create()
        #: the model text header (feature names and infos) and ``parameters:`` section
        self.header, _, self.parameters = split_model_string(self._buffer.model_string(self.handle))
        #: no feature can be split (every one trivial on the training data, e.g. too few rows
        #: for min_data_in_leaf: LightGBM's pre-filter drops them): the trees are constant
        #: whatever the parameters, and LightGBM refuses a parameter reset of such a
        #: Booster (its histogram pool needs a feature), so none is made
        self.featureless = _featureless(self.header)

    def _create(self) -> None:
        # Created on the whole training set: some buffers (use_quantized_grad's) are sized
        # by the first Dataset only, and every sample is at most that large.
        _check(_LIB.LGBM_BoosterCreate(self._train, _c_str(self._params), ctypes.byref(self.handle)))
        self._current = self._train.value
        # the Dataset the Booster would be on had every iteration been reset and rolled back
        # (kept fits replay the column draws of the resets they skip)
        self._unkept = self._train.value
        self.kept = 0

    def _recreate(self) -> None:
        """A fresh C Booster after an iteration that could not split.

        Such an iteration leaves LightGBM's constant trees in the Booster and does not count
        as an iteration, so ``RollbackOneIter`` cannot remove them; every later tree would
        come after them.
        """
        _check(_LIB.LGBM_BoosterFree(self.handle))
        self.handle = ctypes.c_void_p()
        self._create()

    def set_params(self, params: str) -> None:
        """Parameters of the next iteration (the engine re-seeds every iteration).

        Given in full, so that LightGBM derives its sub-seeds exactly as for a Booster
        created with them (``seed`` then explicit ``*_seed`` overrides).
        """
        if params != self._params:
            if not self.featureless:
                _check(_LIB.LGBM_BoosterResetParameter(self.handle, _c_str(params)))
            self._params = params
            self._draws_columns = _samples_columns_by_tree(params)

    def parameters_section(self, params: str) -> str:
        """The ``parameters:`` section LightGBM writes for a Booster created with ``params``
        (a throw-away Booster on the one-row Dataset: no parameter of the run is touched, and
        LightGBM derives the seeds it shows exactly as for a Booster created with them)."""
        handle = ctypes.c_void_p()
        _check(_LIB.LGBM_BoosterCreate(self._parked.handle, _c_str(params), ctypes.byref(handle)))
        try:
            return split_model_string(self._buffer.model_string(handle))[2]
        finally:
            _check(_LIB.LGBM_BoosterFree(handle))

    def _point_at(self, dataset: ctypes.c_void_p) -> None:
        # LightGBM ignores a reset to the Dataset it already trains on (and then keeps
        # its scores); park on the one-row set first so the scores are recomputed.
        if dataset.value == self._current:
            if dataset.value == self._parked.handle.value:
                return
            _check(_LIB.LGBM_BoosterResetTrainingData(self.handle, self._parked.handle))
        _check(_LIB.LGBM_BoosterResetTrainingData(self.handle, dataset))
        self._current = dataset.value

    def fit(
        self,
        train: ctypes.c_void_p,
        grad: np.ndarray,
        hess: np.ndarray,
        sets: dict[int, tuple[ctypes.c_void_p, int, np.ndarray | None]],
        *,
        want_leaves: bool = False,
        bias: np.ndarray | None = None,
        params: str | None = None,
        keep: bool = False,
    ) -> IterationTrees:
        """Fit one iteration (``finished`` set if no tree could split).

        Parameters
        ----------
        train : C Dataset handle holding exactly the sampled rows.
        grad, hess : float32 arrays, class-major (``k * m + i``), length ``K * m``.
        sets : dict of key -> (handle, num_rows, init_score or None)
            Each binned set whose rows' tree outputs are wanted, read in this order;
            ``init_score`` (class-major, length ``K * n``) is what LightGBM starts that
            set's scores from.  ``outputs`` and ``leaves`` come back under the same keys.
        want_leaves : bool
            Also report each row's leaf.
        bias : ndarray of shape (K,), optional
            Folded into the trees (see :func:`fold_bias`) and included in ``outputs``.
        params : str, optional
            This iteration's parameters (:meth:`set_params`), applied in the order a reset
            Booster would see them: after the kept trees are dropped, before the tree.
        keep : bool
            ``train`` is the whole training set (every row drawn): fit on it without reset
            and keep the trees in the C Booster (see the class).  ``sets`` must then be
            empty and ``want_leaves`` False: no outputs are read through LightGBM.

        After a finished iteration (no tree could split) the C Booster is replaced by a fresh
        one, so the next call starts clean.
        """
        if not self.handle:
            raise RuntimeError("this OneIterationBooster is freed")
        if not isinstance(sets, dict):
            raise TypeError(f"sets must be a dict of key -> (handle, num_rows, init_score); got {type(sets).__name__}")
        if keep and (train.value != self._train.value or sets or want_leaves):
            raise ValueError("fit(keep=True) fits on the whole training set and reads no outputs through LightGBM: "
                             "pass the training set's handle, sets={} and want_leaves=False")
        try:
            if keep:
                return self._fit_kept(grad, hess, bias, params)
            self._drop_kept()
            if params is not None:
                self.set_params(params)
            fitted = self._fit(train, grad, hess, sets, want_leaves, bias)
            self._unkept = self._current
            return fitted
        except BaseException:
            self.free()  # it may point at a Dataset the caller is about to free
            raise

    def _drop_kept(self) -> None:
        """Park on the one-row Dataset and roll the kept iterations back there (each O(K))."""
        if self.kept:
            _check(_LIB.LGBM_BoosterResetTrainingData(self.handle, self._parked.handle))
            self._current = self._parked.handle.value
            for _ in range(self.kept):
                _check(_LIB.LGBM_BoosterRollbackOneIter(self.handle))
            self.kept = 0

    def _fit_kept(self, grad: np.ndarray, hess: np.ndarray, bias: np.ndarray | None,
                  params: str | None) -> IterationTrees:
        if params is not None:
            self.set_params(params)
        train = self._train.value
        # The reset-and-roll-back path would point the Booster at the training set here:
        # with one reset from the parked set, or two (park, then back) when already on it.
        # Each reset draws the column sampler's next feature subset; a parameter reset
        # draws one too, so the skipped resets are replayed as parameter resets (only
        # when the sampler draws at all), and the tree gets the same columns.
        skipped = 2 if self._unkept == train else 1
        if self._current != train:
            _check(_LIB.LGBM_BoosterResetTrainingData(self.handle, self._train))
            self._current = train
            skipped -= 1
        if skipped and self._draws_columns and not self.featureless:
            for _ in range(skipped):
                _check(_LIB.LGBM_BoosterResetParameter(self.handle, _c_str(self._params)))
        finished = self._update(grad, hess)
        # this iteration's trees only: LightGBM writes them as Tree=0.. (or, when finished,
        # the constant trees a Booster without kept trees keeps)
        model = self._buffer.model_string(self.handle, self.kept, 1)
        # (finished with kept trees: LightGBM dropped the constant trees itself, and the run
        # has trees already, so none are needed)
        texts = tree_bodies(model) if "\nTree=0\n" in model else []
        if bias is not None and texts:
            internal = exact_internal_values(self.handle, len(texts), self.kept)
            texts = [fold_bias(text, float(b), inner)[0] for text, b, inner in zip(texts, bias, internal, strict=True)]
        if finished:
            # as after any finished iteration: a fresh Booster (LightGBM keeps constant
            # trees it cannot roll back when it held none, and a fresh one also restarts
            # what a recreated Booster restarts, e.g. quantised gradients' rounding draws)
            self._recreate()
            return IterationTrees(texts, {}, None, model, finished=True)
        self.kept += 1
        self._unkept = self._parked.handle.value  # where the reset path leaves the Booster
        return IterationTrees(texts, {}, None, model)

    def _update(self, grad: np.ndarray, hess: np.ndarray) -> bool:
        """One ``UpdateOneIterCustom`` on the current training data; whether it was finished
        (no tree could split)."""
        finished = ctypes.c_int(0)
        _check(
            _LIB.LGBM_BoosterUpdateOneIterCustom(
                self.handle,
                grad.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                hess.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                ctypes.byref(finished),
            )
        )
        return bool(finished.value)

    def _fit(self, train: ctypes.c_void_p, grad: np.ndarray, hess: np.ndarray,
             sets: dict[int, tuple[ctypes.c_void_p, int, np.ndarray | None]],
             want_leaves: bool, bias: np.ndarray | None) -> IterationTrees:
        self._point_at(train)
        finished = self._update(grad, hess)
        model = self._buffer.model_string(self.handle)
        texts = tree_bodies(model)
        leaf_values: list[np.ndarray] | None = None
        if bias is not None:
            internal = exact_internal_values(self.handle, len(texts))
            folded = [fold_bias(text, float(b), inner) for text, b, inner in zip(texts, bias, internal, strict=True)]
            texts, leaf_values = [t for t, _ in folded], [v for _, v in folded]
        if finished:
            self._recreate()
            return IterationTrees(texts, {}, None, model, finished=True)
        # Each row's tree output is read in one of two ways.  Leaf indices: the leaf
        # outputs are overwritten with 0..L-1, so LightGBM's predictor writes each row's
        # leaf, and the output is looked up.  Outputs directly: LightGBM's predictor adds
        # the leaf output to a score that starts at 0.0, which gives the output exactly;
        # that needs no leaf rewrite and no look-up, but only works for sets without
        # LightGBM init scores (x + v then differs from v) and unchanged trees.
        inits = [init for _, _, init in sets.values() if init is not None]
        by_leaf = want_leaves or bias is not None or bool(inits)
        if by_leaf:
            if leaf_values is None:
                leaf_values = [leaf_values_of(t) for t in texts]
            step = _leaf_index_step(inits)
            for k, values in enumerate(leaf_values):
                for leaf in range(values.shape[0]):
                    _check(_LIB.LGBM_BoosterSetLeafValue(self.handle, ctypes.c_int(k), ctypes.c_int(leaf),
                                                         ctypes.c_double(leaf * step)))
        outputs: dict[int, np.ndarray] = {}
        leaves: dict[int, np.ndarray] = {}
        for key, (handle, n, init_score) in sets.items():
            # The set the trees were just fitted on (all rows drawn) already holds its
            # outputs: LightGBM added them from the tree learner's partition, no walk needed.
            if by_leaf or handle.value != self._current:
                self._point_at(handle)
            out = np.empty(self.k * n, dtype=np.float64)
            out_len = ctypes.c_int64(0)
            _check(
                _LIB.LGBM_BoosterGetPredict(
                    self.handle, ctypes.c_int(0), ctypes.byref(out_len),
                    out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                )
            )
            if not by_leaf:
                outputs[key] = out.reshape(self.k, n).T
                continue
            if init_score is not None:
                out -= init_score  # not exact: round back to the leaf index
            if step != 1.0:
                out /= step  # a power of two: exact
            if init_score is not None:
                np.rint(out, out=out)
            set_leaves = out.astype(np.int32).reshape(self.k, n).T
            leaves[key] = set_leaves
            set_outputs = np.empty((n, self.k))
            assert leaf_values is not None  # read above whenever by_leaf
            for k, values in enumerate(leaf_values):
                set_outputs[:, k] = values[set_leaves[:, k]]
            outputs[key] = set_outputs
        self._point_at(self._parked.handle)
        _check(_LIB.LGBM_BoosterRollbackOneIter(self.handle))
        return IterationTrees(texts, outputs, leaves if want_leaves else None, model)

    def free_booster(self) -> None:
        """Release the C Booster, its training buffers and histograms (idempotent); the
        one-row Dataset stays for :meth:`parameters_section`, and ``header`` and
        ``parameters`` (text) stay readable.  :meth:`fit` then raises."""
        if self.handle:
            _check(_LIB.LGBM_BoosterFree(self.handle))
            self.handle = ctypes.c_void_p()

    def free(self) -> None:
        """Release the Booster and its one-row Dataset (idempotent)."""
        self.free_booster()
        self._parked.free()

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def merge_models(booster: lgb.Booster, model: lgb.Booster) -> None:
    """Put ``model``'s trees in front of ``booster``'s (``LGBM_BoosterMerge``), as
    ``lightgbm.Booster`` does with an init model's predictor: continued training's model."""
    _check(_LIB.LGBM_BoosterMerge(booster._handle, model._handle))


_CHECK_DATA: list[lgb.Dataset] = []
#: LightGBM parameters checked against the data's columns (and ``num_threads``, set to 1)
_PER_FEATURE_PARAMS = frozenset({"num_threads", "monotone_constraints", "feature_contri", "max_bin_by_feature",
                                 "interaction_constraints", "forcedsplits_filename", "forcedbins_filename",
                                 "cegb_penalty_feature_lazy", "cegb_penalty_feature_coupled", "categorical_feature",
                                 "ignore_column", "label_column", "weight_column", "group_column"})


def check_booster_params(params: str) -> None:
    """Let LightGBM check a Booster's parameter string (each parameter's range, and their
    conflicts: LightGBM's ``Config``) by creating one on a two-row, one-column Dataset,
    then freeing it.

    Refusals of LightGBM's configuration (``src/io/config*.cpp``: ``num_leaves=1``,
    ``scale_pos_weight=0``...) are raised; what the tiny Dataset cannot take although the
    run's data can (``monotone_constraints`` for more columns) is not: the run's own Booster
    checks that.

    Raises
    ------
    lightgbm.basic.LightGBMError
        LightGBM's message, naming the parameter.
    """
    if not _CHECK_DATA:  # one small Dataset for the process (no parameter of it matters here)
        _CHECK_DATA.append(lgb.Dataset(np.zeros((2, 1)), label=np.zeros(2), params={"verbosity": -1}).construct())
    # one thread: a Booster with OpenMP's default starts a thread pool (~10 ms), and the
    # number of threads is not what is checked
    # (parameters with one entry per feature are the run's data's to check: left out)
    kept = (t for t in params.split(" ") if t.partition("=")[0] not in _PER_FEATURE_PARAMS)
    one_thread = " ".join([*kept, "num_threads=1"])
    handle = ctypes.c_void_p()
    try:
        _check(_LIB.LGBM_BoosterCreate(_CHECK_DATA[0]._handle, _c_str(one_thread), ctypes.byref(handle)))
    except lgb.basic.LightGBMError as exc:
        if "/src/io/config" in str(exc):  # (LightGBM's CHECK messages name their source file)
            raise
        return
    _check(_LIB.LGBM_BoosterFree(handle))
