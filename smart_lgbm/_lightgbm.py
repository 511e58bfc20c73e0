"""Every use of LightGBM internals lives here: private attributes, ``_LIB`` C-API calls
and model-string surgery.

Keeping them in one module makes the supported LightGBM range (see
:data:`SUPPORTED_LIGHTGBM`) a single thing to check and ``tests/test_lightgbm_internals.py``
pins each behaviour relied upon, so that a LightGBM upgrade that changes one fails loudly
there rather than silently in a model.

Versions 4.6 and 4.7 are both supported.  What differs between them is detected by feature,
not by version number, and kept to a few named places: the form of evaluation results
(:func:`evaluation_result`: tuples in 4.6, ``lightgbm.EvalResult`` in 4.7), the labels
LightGBM converts itself (:func:`_label_passed_through`) and the estimators' record of
whether the training data had feature names (:func:`sklearn_record_feature_names`, 4.7).
The scikit-learn ``fit`` signature (4.7 added ``eval_X``/``eval_y``) needs no branch: the
estimators forward to the installed ``LGBMModel.fit`` code (:func:`sklearn_fit_with_train`).

Why C-API calls and not the Python wrapper: every boosting iteration the engine builds a
subset Dataset, points its Booster at three Datasets in turn, reads scores (rewriting
leaf values when it needs leaves) and rolls a tree back.  The Python wrapper can do each
step (``Dataset.subset``, ``Booster.update(train_set=...)``, ``set_leaf_output``,
``rollback_one_iter``), but through Python Dataset objects and their bookkeeping
(parameter dicts, references, predictor set-up) per call, which would weigh on small data.
"""

from __future__ import annotations

import ctypes
import json
import math
import re
import sys
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import lightgbm as lgb
import numpy as np
from lightgbm import basic as _basic

#: LightGBM minor versions whose internals this module is tested against, oldest first
#: (CI runs the whole suite under each: scripts/venv.sh lists the same versions).
SUPPORTED_MINOR_VERSIONS = ("4.6", "4.7")


def _version_range(minors: tuple[str, ...]) -> str:
    """The pip specifier covering exactly the given minor versions (``">=4.6,<4.8"``)."""
    major, last = (int(part) for part in minors[-1].split("."))
    return f">={minors[0]},<{major}.{last + 1}"


#: The supported range as pyproject.toml pins it.
SUPPORTED_LIGHTGBM = _version_range(SUPPORTED_MINOR_VERSIONS)

_LIB = _basic._LIB
_DTYPE_FLOAT32 = 0
_DTYPE_FLOAT64 = 1
_DTYPE_INT32 = 2


def check_version(version: str | None = None) -> None:
    """Raise ImportError for a LightGBM outside :data:`SUPPORTED_LIGHTGBM`.

    Parameters
    ----------
    version : str, optional
        A LightGBM version string; the installed ``lightgbm.__version__`` by default.
        Development and pre-releases count as their minor version (``4.7.0.99`` is 4.7).
    """
    version = lgb.__version__ if version is None else version
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None or f"{match[1]}.{match[2]}" not in SUPPORTED_MINOR_VERSIONS:
        raise ImportError(
            f"smart_lgbm supports lightgbm{SUPPORTED_LIGHTGBM} (versions "
            f"{', '.join(v + '.x' for v in SUPPORTED_MINOR_VERSIONS)}); found lightgbm {version}. "
            f"Install a supported one: pip install 'lightgbm{SUPPORTED_LIGHTGBM}'"
        )


def _check(ret: int) -> None:
    if ret != 0:
        raise lgb.basic.LightGBMError(_LIB.LGBM_GetLastError().decode("utf-8"))


def _c_str(value: str) -> ctypes.c_char_p:
    return ctypes.c_char_p(value.encode("utf-8"))


# --------------------------------------------------------------------------- parameters


@lru_cache(maxsize=1)
def param_aliases() -> dict[str, tuple[str, ...]]:
    """LightGBM's parameter aliases: canonical name -> (name, alias, alias, ...)."""
    size = 1 << 20
    out_len = ctypes.c_int64(0)
    buf = ctypes.create_string_buffer(size)
    _check(_LIB.LGBM_DumpParamAliases(ctypes.c_int64(size), ctypes.byref(out_len), buf))
    raw = json.loads(buf.value.decode("utf-8"))
    return {name: tuple(dict.fromkeys([name, *aliases])) for name, aliases in raw.items()}


def _param_value_str(value: Any) -> str:
    # as lightgbm.basic._param_dict_to_str: bools lower-case, a list inside a list in
    # brackets (interaction_constraints=[0,1],[2,3]), never a space, which would end the
    # value: LightGBM's parser splits the whole string at whitespace.
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (list, tuple, set, np.ndarray)):
        return "[" + ",".join(_param_value_str(v) for v in value) + "]"
    return str(value)


def params_to_str(params: dict[str, Any]) -> str:
    """LightGBM's ``key=value`` parameter string, written as ``lightgbm.train`` writes it.

    Lists are comma-joined, lists of lists as ``[a,b],[c,d]``, None dropped; a value whose
    text would hold whitespace is refused (LightGBM would split it into other parameters).
    """
    pairs = []
    for key, val in params.items():
        if val is None:
            continue
        if isinstance(val, (list, tuple, set, np.ndarray)):
            text = ",".join(_param_value_str(v) for v in val)
        else:
            text = _param_value_str(val)
        if any(c.isspace() for c in text):
            raise ValueError(f"parameter {key}={val!r} cannot be passed to LightGBM: its text {text!r} "
                             "holds whitespace, which LightGBM's parameter parser splits at")
        pairs.append(f"{key}={text}")
    return " ".join(pairs)


# --------------------------------------------------------------------------- datasets


def handle_of(dataset: lgb.Dataset) -> ctypes.c_void_p | None:
    """The C handle of a constructed ``lightgbm.Dataset`` (None if not constructed)."""
    return dataset._handle


class SubsetHandle:
    """An owned C Dataset holding some rows of a binned Dataset (bin mappers shared)."""

    __slots__ = ("handle",)

    def __init__(self, source: ctypes.c_void_p, indices: np.ndarray, params: str) -> None:
        indices = np.ascontiguousarray(indices, dtype=np.int32)
        self.handle = ctypes.c_void_p()
        _check(
            _LIB.LGBM_DatasetGetSubset(
                source,
                indices.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                ctypes.c_int32(indices.shape[0]),
                _c_str(params),
                ctypes.byref(self.handle),
            )
        )

    def free(self) -> None:
        if self.handle:
            _check(_LIB.LGBM_DatasetFree(self.handle))
            self.handle = ctypes.c_void_p()

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def constructed_like(dataset: lgb.Dataset, params: dict[str, Any],
                     reference: lgb.Dataset | None = None) -> lgb.Dataset:
    """The Dataset ``lightgbm.train`` would hand to ``feval`` for ``dataset``: constructed,
    its labels and weights read back from LightGBM (float32), its groups as boundaries.

    A constructed Dataset is that already; an unconstructed one is not touched (the engine
    never changes the caller's objects): a copy with the same data, fields and parameters
    is constructed instead (against ``reference``, the engine's training Dataset, for a
    validation set, as stock bins validation data with the training set's bin mappers).
    """
    if dataset._handle is not None:
        return dataset
    if getattr(dataset, "used_indices", None) is not None:
        parent = constructed_like(dataset.reference, params, reference)
        return parent.subset(list(dataset.used_indices), params=dataset.params).construct()
    copy = lgb.Dataset(
        dataset.data, label=dataset.label, weight=dataset.weight, group=dataset.group,
        init_score=dataset.init_score, reference=reference, feature_name=dataset.feature_name,
        categorical_feature=dataset.categorical_feature, params={**params, **(dataset.params or {})},
        free_raw_data=False,
    )
    if getattr(dataset, "position", None) is not None:
        copy.position = dataset.position
    return copy.construct()


def has_positions(dataset: lgb.Dataset) -> bool:
    """Whether a Dataset (or the Dataset it is an unconstructed subset of) carries
    ``position`` (LightGBM >= 4.1: the display positions that lambdarank learns biases of)."""
    while dataset is not None:
        if getattr(dataset, "position", None) is not None:
            return True
        if dataset._handle is not None:  # constructed: the C side holds what was set
            try:
                return dataset.get_field("position") is not None
            except Exception:  # a LightGBM without the field
                return False
        dataset = dataset.reference if getattr(dataset, "used_indices", None) is not None else None
    return False


def clear_field(handle: ctypes.c_void_p, field: str) -> None:
    """Clear ``group``, ``weight`` or ``init_score`` of a C Dataset (empty input clears)."""
    dtype = {"group": _DTYPE_INT32, "weight": _DTYPE_FLOAT32, "init_score": _DTYPE_FLOAT64}[field]
    _check(_LIB.LGBM_DatasetSetField(handle, _c_str(field), None, ctypes.c_int(0), ctypes.c_int(dtype)))


def dataset_params_conflict(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """LightGBM's message when ``new`` changes a binning parameter that a Dataset constructed
    with ``old`` fixed (``max_bin``, ``min_data_in_bin``...), else None.

    The check ``lightgbm.train`` makes (``LGBM_DatasetUpdateParamChecking``); both dicts must
    hold Dataset parameters only (the check validates them as a whole configuration).
    """
    ret = _LIB.LGBM_DatasetUpdateParamChecking(_c_str(params_to_str(old)), _c_str(params_to_str(new)))
    return None if ret == 0 else _LIB.LGBM_GetLastError().decode("utf-8")


def num_features(handle: ctypes.c_void_p) -> int:
    """The number of features of a C Dataset (LightGBM's total, unused ones included)."""
    out = ctypes.c_int(0)
    _check(_LIB.LGBM_DatasetGetNumFeature(handle, ctypes.byref(out)))
    return int(out.value)


def num_rows(handle: ctypes.c_void_p) -> int:
    out = ctypes.c_int32(0)
    _check(_LIB.LGBM_DatasetGetNumData(handle, ctypes.byref(out)))
    return int(out.value)


def _has_field(handle: ctypes.c_void_p, field: str) -> bool:
    out_len = ctypes.c_int(0)
    out_ptr = ctypes.c_void_p()
    out_type = ctypes.c_int(0)
    _check(
        _LIB.LGBM_DatasetGetField(
            handle, _c_str(field), ctypes.byref(out_len), ctypes.byref(out_ptr), ctypes.byref(out_type)
        )
    )
    return out_len.value > 0


def has_group(handle: ctypes.c_void_p) -> bool:
    """Whether a C Dataset holds query boundaries."""
    return _has_field(handle, "group")


def has_init_score(handle: ctypes.c_void_p) -> bool:
    """Whether a C Dataset holds initial scores (LightGBM's predictor then starts from them)."""
    return _has_field(handle, "init_score")


# --------------------------------------------------------------------------- network


def network_init(machines: str, local_listen_port: int, time_out: int, num_machines: int) -> None:
    """Join LightGBM's socket network (``LGBM_NetworkInit``), as ``Booster.set_network`` does.

    LightGBM keeps the network in thread-local state: the Datasets constructed and the
    Boosters trained *by this thread* until :func:`network_free` belong to it.  A Dataset
    constructed without a reference on the network finds its bin boundaries jointly
    (features divided among the machines, each finding its share from its own rows, then
    all-gathered), and a Booster with ``tree_learner=data`` grows every tree from all
    machines' histograms.  Every machine must make the same collective calls in the same
    order.

    Parameters
    ----------
    machines : str
        ``"ip1:port1,ip2:port2"``; a machine's rank is its position in this list.
    local_listen_port : int
        This machine's port (the one its entry in ``machines`` names).
    time_out : int
        LightGBM's socket time-out in minutes: a receive from a peer that is alive but
        silent that long fails (``Socket recv error``).  A peer that *dies* is another
        matter: its sockets close, ``recv`` returns 0 bytes, and LightGBM 4.6/4.7's receive
        loop retries forever, spinning; whoever runs the machines must notice a death
        itself (smart_lgbm.dask's client does).
    num_machines : int
    """
    _check(_LIB.LGBM_NetworkInit(_c_str(machines), ctypes.c_int(local_listen_port), ctypes.c_int(time_out),
                                 ctypes.c_int(num_machines)))


def network_free() -> None:
    """Leave LightGBM's network (``LGBM_NetworkFree``; nothing happens when none is up)."""
    _check(_LIB.LGBM_NetworkFree())


# --------------------------------------------------------------------------- bin mappers


@dataclass(frozen=True)
class BinMapper:
    """How LightGBM bins one feature (its ``BinMapper``), as far as the engine needs it.

    Attributes
    ----------
    categorical : bool
    missing_type : int
        0 None, 1 Zero, 2 NaN (LightGBM's ``MissingType``).
    upper_bounds : ndarray of float64
        Numerical features: each bin's upper bound, in order (LightGBM's
        ``bin_upper_bound_``; every numerical threshold of a tree is one of them).
        Categorical features: empty.
    """

    categorical: bool
    missing_type: int
    upper_bounds: np.ndarray


class _Reader:
    """Sequential reads of LightGBM's binary Dataset file (``VirtualFileWriter``'s layout:
    ``AlignedWrite`` pads every field to 8 bytes, ``Write`` does not)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def skip(self, size: int, aligned: bool = True) -> None:
        self.pos += (size + 7) // 8 * 8 if aligned else size

    def array(self, dtype: str, count: int, aligned: bool = True) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.skip(out.nbytes, aligned)
        return out

    def scalar(self, dtype: str, aligned: bool = True) -> Any:
        return self.array(dtype, 1, aligned)[0]


_BINARY_TOKEN = b"______LightGBM_Binary_File_Token______\n"


def bin_mappers(handle: ctypes.c_void_p) -> list[BinMapper | None]:
    """LightGBM's bin mapper of every feature of a C Dataset (None for the features it
    does not use), read from the binary file LightGBM writes for it.

    LightGBM's C API has no call that returns bin boundaries; ``LGBM_DatasetSaveBinary``
    writes them (``Dataset::SaveBinaryFile``: a header, the metadata, then every feature
    group with its ``BinMapper``s and bins).  It is written for a one-row subset (same bin
    mappers), so the file holds little more than the mappers, in a temporary folder for the
    time of the call.

    Raises
    ------
    OSError
        The temporary file cannot be written or read.
    RuntimeError
        The file is not laid out as this LightGBM version was tested to write it.
    """
    import os
    import tempfile

    one_row = SubsetHandle(handle, np.zeros(1, dtype=np.int32), "verbosity=-1")
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "mappers.bin")
            _check(_LIB.LGBM_DatasetSaveBinary(one_row.handle, _c_str(path)))
            with open(path, "rb") as fh:
                data = fh.read()
    finally:
        one_row.free()
    if not data.startswith(_BINARY_TOKEN):
        raise RuntimeError("LightGBM's binary Dataset file does not start with the expected token")
    r = _Reader(data)
    r.skip(len(_BINARY_TOKEN))
    r.skip(8, aligned=False)  # size of the header
    _num_data, num_features, num_total = (int(r.scalar("<i4")) for _ in range(3))
    for _ in range(4):  # label_idx, max_bin, bin_construct_sample_cnt, min_data_in_bin
        r.skip(4)
    for _ in range(3):  # use_missing, zero_as_missing, has_raw
        r.skip(1)
    used_feature_map = r.array("<i4", num_total)
    num_groups = int(r.scalar("<i4"))
    r.skip(4 * num_features)  # real_feature_idx
    feature2group = r.array("<i4", num_features)
    feature2subfeature = r.array("<i4", num_features)
    r.skip(8 * (num_groups + 1), aligned=False)  # group_bin_boundaries
    r.skip(4 * num_groups)  # group_feature_start
    r.skip(4 * num_groups)  # group_feature_cnt
    r.skip(4 * num_total)  # max_bin_by_feature
    for _ in range(num_total):  # feature names
        r.skip(int(r.scalar("<i4")))
    for _ in range(num_total):  # forced bin bounds
        r.skip(8 * int(r.scalar("<i4")), aligned=False)
    r.skip(int(r.scalar("<u8", aligned=False)), aligned=False)  # metadata
    groups: list[list[BinMapper]] = []
    for _ in range(num_groups):
        size = int(r.scalar("<u8", aligned=False))
        end = r.pos + size
        for _ in range(3):  # is_multi_val, is_dense_multi_val, is_sparse
            r.skip(1)
        mappers = []
        for _ in range(int(r.scalar("<i4"))):
            num_bin = int(r.scalar("<i4"))
            missing_type = int(r.scalar("<i4"))
            r.skip(1)  # is_trivial
            r.skip(8, aligned=False)  # sparse_rate
            categorical = int(r.scalar("<i4")) == 1
            r.skip(16, aligned=False)  # min_val, max_val
            r.skip(4)  # default_bin
            r.skip(4)  # most_freq_bin
            if categorical:
                r.skip(4 * num_bin, aligned=False)
                bounds = np.empty(0)
            else:
                bounds = r.array("<f8", num_bin, aligned=False).copy()
            mappers.append(BinMapper(categorical, missing_type, bounds))
        groups.append(mappers)
        r.pos = end
    out: list[BinMapper | None] = []
    for feature in range(num_total):
        inner = int(used_feature_map[feature])
        out.append(None if inner < 0 else groups[feature2group[inner]][feature2subfeature[inner]])
    return out


# --------------------------------------------------------------------------- one iteration


@dataclass
class IterationTrees:
    """The K trees of one engine iteration.

    When no tree could split (LightGBM's "finished"), ``finished`` is True, ``texts`` holds
    LightGBM's constant trees (output 0, plus the bias if one was folded in) and
    ``outputs`` is empty.

    Attributes
    ----------
    texts : list of str
        Each tree's body in LightGBM's model text (without the ``Tree=i`` line).
    outputs : list of ndarray of shape (n_set, K), float64
        For every requested binned set, each row's output in each of the K trees: exactly
        the double a stock model adds for that tree when predicting the row.
    leaves : list of ndarray of shape (n_set, K), int32, or None
        Each row's leaf in each of the K trees, when asked for.
    model : str
        The model text LightGBM wrote for these trees (``header`` and ``parameters`` come
        from it).
    finished : bool
    """

    texts: list[str]
    outputs: list[np.ndarray]
    leaves: list[np.ndarray] | None
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

    def model_string(self, booster: ctypes.c_void_p) -> str:
        out_len = ctypes.c_int64(0)
        for _ in range(2):
            _check(
                _LIB.LGBM_BoosterSaveModelToString(
                    booster, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(0),
                    ctypes.c_int64(self.size), ctypes.byref(out_len), self.buf,
                )
            )
            if out_len.value <= self.size:
                return self.buf.raw[: out_len.value - 1].decode("utf-8")
            self.size = int(out_len.value * 2)
            self.buf = ctypes.create_string_buffer(self.size)
        raise RuntimeError("model string did not fit the buffer")  # pragma: no cover


_TREE_SPLIT = re.compile(r"^Tree=\d+\n", re.MULTILINE)


def split_model_string(model: str) -> tuple[str, list[str], str]:
    """Split a model string into (header, tree bodies, parameters section)."""
    head, found, rest = model.partition("\nTree=0\n")
    if found:
        trees_part, _, tail = ("Tree=0\n" + rest).partition("end of trees\n")
        bodies = [b for b in _TREE_SPLIT.split(trees_part) if b]
    else:  # a model without trees
        head, _, tail = model.partition("\nend of trees\n")
        bodies = []
    header = "\n".join(line for line in head.split("\n") if not line.startswith("tree_sizes="))
    params_start = tail.find("parameters:\n")
    parameters = tail[params_start:] if params_start >= 0 else ""
    return header.rstrip("\n") + "\n", bodies, parameters


def tree_bodies(model: str) -> list[str]:
    """The tree bodies of a model string, as :func:`split_model_string` gives them, without
    taking the header and parameters apart (the engine needs only the trees per iteration)."""
    bodies = []
    pos = model.index("\nTree=0\n") + 1  # at a "Tree=i" line
    end = model.index("\nend of trees\n", pos) + 1
    while pos < end:
        start = model.index("\n", pos) + 1
        pos = model.find("\nTree=", start, end) + 1 or end
        bodies.append(model[start:pos])
    return bodies


def leaf_values_of(tree_text: str) -> np.ndarray:
    """Leaf outputs of a tree body; LightGBM writes them with round-trip precision."""
    start = tree_text.index("leaf_value=") + len("leaf_value=")
    return np.array(tree_text[start:tree_text.index("\n", start)].split(" "), dtype=np.float64)


def _leaf_index_step(inits: list[np.ndarray]) -> float:
    """The power of two that leaf indices are written as multiples of.

    LightGBM's predictor starts from a set's init score, so a leaf is read back as
    ``round((init + j * step) - init) / step``.  The roundings of those sums are below
    2**-11 * step while ``|init| < 2**40 * step``; ``step`` is 1 unless init scores are
    that large (near 2**53 a step of 1 would lose the index itself).
    """
    largest = max((float(np.abs(init).max(initial=0.0)) for init in inits), default=0.0)
    return 1.0 if largest < 2.0**40 else math.ldexp(1.0, math.frexp(largest)[1] - 40)


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
        self._train = train
        self._parked = SubsetHandle(train, np.zeros(1, dtype=np.int32), subset_params)
        self.handle = ctypes.c_void_p()
        self._create()
        #: the model text header (feature names and infos) and ``parameters:`` section
        self.header, _, self.parameters = split_model_string(self._buffer.model_string(self.handle))

    def _create(self) -> None:
        # Created on the whole training set: some buffers (use_quantized_grad's) are sized
        # by the first Dataset only, and every sample is at most that large.
        _check(_LIB.LGBM_BoosterCreate(self._train, _c_str(self._params), ctypes.byref(self.handle)))
        self._current = self._train.value

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
            _check(_LIB.LGBM_BoosterResetParameter(self.handle, _c_str(params)))
            self._params = params

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
        sets: list[tuple[ctypes.c_void_p, int, np.ndarray | None]],
        *,
        want_leaves: bool = False,
        bias: np.ndarray | None = None,
    ) -> IterationTrees:
        """Fit one iteration (``finished`` set if no tree could split).

        Parameters
        ----------
        train : C Dataset handle holding exactly the sampled rows.
        grad, hess : float32 arrays, class-major (``k * m + i``), length ``K * m``.
        sets : (handle, num_rows, init_score or None) of each binned set whose rows'
            tree outputs are wanted; ``init_score`` (class-major, length ``K * n``) is what
            LightGBM starts that set's scores from.
        want_leaves : bool
            Also report each row's leaf.
        bias : ndarray of shape (K,), optional
            Folded into the trees (see :func:`fold_bias`) and included in ``outputs``.

        After a finished iteration (no tree could split) the C Booster is replaced by a fresh
        one, so the next call starts clean.
        """
        if not self.handle:
            raise RuntimeError("this OneIterationBooster is freed")
        try:
            return self._fit(train, grad, hess, sets, want_leaves, bias)
        except BaseException:
            self.free()  # it may point at a Dataset the caller is about to free
            raise

    def _fit(self, train: ctypes.c_void_p, grad: np.ndarray, hess: np.ndarray,
             sets: list[tuple[ctypes.c_void_p, int, np.ndarray | None]],
             want_leaves: bool, bias: np.ndarray | None) -> IterationTrees:
        self._point_at(train)
        finished = ctypes.c_int(0)
        _check(
            _LIB.LGBM_BoosterUpdateOneIterCustom(
                self.handle,
                grad.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                hess.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                ctypes.byref(finished),
            )
        )
        model = self._buffer.model_string(self.handle)
        texts = tree_bodies(model)
        leaf_values = None
        if bias is not None:
            internal = exact_internal_values(self.handle, len(texts))
            folded = [fold_bias(text, float(b), inner) for text, b, inner in zip(texts, bias, internal)]
            texts, leaf_values = [t for t, _ in folded], [v for _, v in folded]
        if finished.value:
            self._recreate()
            return IterationTrees(texts, [], None, model, finished=True)
        # Each row's tree output is read in one of two ways.  Leaf indices: the leaf
        # outputs are overwritten with 0..L-1, so LightGBM's predictor writes each row's
        # leaf, and the output is looked up.  Outputs directly: LightGBM's predictor adds
        # the leaf output to a score that starts at 0.0, which gives the output exactly;
        # that needs no leaf rewrite and no look-up, but only works for sets without
        # LightGBM init scores (x + v then differs from v) and unchanged trees.
        inits = [init for _, _, init in sets if init is not None]
        by_leaf = want_leaves or bias is not None or bool(inits)
        if by_leaf:
            if leaf_values is None:
                leaf_values = [leaf_values_of(t) for t in texts]
            step = _leaf_index_step(inits)
            for k, values in enumerate(leaf_values):
                for leaf in range(values.shape[0]):
                    _check(_LIB.LGBM_BoosterSetLeafValue(self.handle, ctypes.c_int(k), ctypes.c_int(leaf),
                                                         ctypes.c_double(leaf * step)))
        outputs, leaves = [], []
        for handle, n, init_score in sets:
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
                outputs.append(out.reshape(self.k, n).T)
                continue
            if init_score is not None:
                out -= init_score  # not exact: round back to the leaf index
            if step != 1.0:
                out /= step  # a power of two: exact
            if init_score is not None:
                np.rint(out, out=out)
            set_leaves = out.astype(np.int32).reshape(self.k, n).T
            leaves.append(set_leaves)
            set_outputs = np.empty((n, self.k))
            for k, values in enumerate(leaf_values):
                set_outputs[:, k] = values[set_leaves[:, k]]
            outputs.append(set_outputs)
        self._point_at(self._parked.handle)
        _check(_LIB.LGBM_BoosterRollbackOneIter(self.handle))
        return IterationTrees(texts, outputs, leaves if want_leaves else None, model)

    def free(self) -> None:
        """Release the Booster and its one-row Dataset (idempotent)."""
        if self.handle:
            _check(_LIB.LGBM_BoosterFree(self.handle))
            self.handle = ctypes.c_void_p()
        self._parked.free()

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


# --------------------------------------------------------------------------- model text


def _format_values(values: np.ndarray) -> str:
    # repr() of a Python float is the shortest string that parses back to the same double.
    return " ".join(repr(float(v)) for v in values)


def exact_internal_values(handle: ctypes.c_void_p, num_trees: int) -> list[np.ndarray | None]:
    """Each tree's internal node values at full double precision.

    The model text writes ``internal_value`` with six significant digits; the JSON dump
    writes them with 17 (``Tree::ToJSON``).  Folding a bias into the rounded values would
    round differently from stock LightGBM, which adds the bias to the doubles.
    """
    size = ctypes.c_int64(0)
    buf = ctypes.create_string_buffer(1 << 16)
    for _ in range(2):
        _check(_LIB.LGBM_BoosterDumpModel(handle, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(0),
                                          ctypes.c_int64(len(buf)), ctypes.byref(size), buf))
        if size.value <= len(buf):
            break
        buf = ctypes.create_string_buffer(size.value)
    out: list[np.ndarray | None] = []
    try:
        trees = json.loads(buf.value.decode("utf-8"))["tree_info"][:num_trees]
    except ValueError:  # a non-finite value, which JSON cannot hold: keep the text's values
        return [None] * num_trees
    for tree in trees:
        values: dict[int, float] = {}
        stack = [tree["tree_structure"]]
        while stack:
            node = stack.pop()
            if "split_index" in node:
                values[node["split_index"]] = float(node["internal_value"])
                stack += [node["left_child"], node["right_child"]]
        out.append(np.array([values[i] for i in range(len(values))], dtype=np.float64))
    return out


def fold_bias(tree_text: str, bias: float, internal_values: np.ndarray | None = None) -> tuple[str, np.ndarray]:
    """Add a constant to a tree's outputs as LightGBM's ``Tree::AddBias`` does.

    Returns the new tree body and its new leaf values.  Leaf and internal values get
    ``bias`` added (values within 1e-35 of zero become zero, LightGBM's
    ``MaybeRoundToZero``) and shrinkage becomes 1, so a model with the initial score
    folded into its first tree is the model stock LightGBM writes.  ``internal_values``
    (:func:`exact_internal_values`) replace the text's six-digit ones when given.
    """

    def shift(values: np.ndarray) -> np.ndarray:
        out = values + bias
        out[np.abs(out) <= 1e-35] = 0.0
        return out

    lines = tree_text.split("\n")
    new_leaf_values = None
    for i, line in enumerate(lines):
        key, sep, rest = line.partition("=")
        if not sep:
            continue
        if key == "leaf_value":
            new_leaf_values = shift(np.array(rest.split(" "), dtype=np.float64))
            lines[i] = f"leaf_value={_format_values(new_leaf_values)}"
        elif key == "internal_value" and rest:
            values = np.array(rest.split(" "), dtype=np.float64)
            if internal_values is not None and internal_values.shape == values.shape:
                values = internal_values.copy()
            lines[i] = f"internal_value={_format_values(shift(values))}"
        elif key == "shrinkage":
            lines[i] = "shrinkage=1"
    return "\n".join(lines), new_leaf_values


def set_parameter_line(parameters: str, key: str, value: str) -> str:
    """A ``parameters:`` section with the line ``[key: ...]`` set to ``value``."""
    return re.sub(rf"^\[{re.escape(key)}: [^\]]*\]$", f"[{key}: {value}]", parameters, count=1, flags=re.MULTILINE)


def assemble_model_string(
    header: str,
    trees: list[str],
    objective_line: str | None,
    parameters: str,
    num_class: int,
    pandas_categorical: list | None,
    metric: list[str] | None = None,
) -> str:
    """One LightGBM model string from a header and the engine's tree bodies.

    The header of a custom-objective Booster carries no ``objective=`` line; the stock
    objective's line is inserted so that ``predict`` applies the same transformation as
    for a model stock LightGBM trained.  ``tree_sizes`` is recomputed for the renumbered
    trees, and the ``parameters`` section gets the stock objective too (and ``metric``, the
    run's metric names, if given).
    """
    lines = [line for line in header.rstrip("\n").split("\n") if not line.startswith("objective=")]
    out_header = []
    for line in lines:
        if line.startswith("num_class="):
            line = f"num_class={num_class}"
        elif line.startswith("num_tree_per_iteration="):
            line = f"num_tree_per_iteration={num_class}"
        out_header.append(line)
        if line.startswith("max_feature_idx=") and objective_line:
            out_header.append(f"objective={objective_line}")
    chunks = [f"Tree={i}\n{body}" for i, body in enumerate(trees)]
    sizes = " ".join(str(len(c.encode("utf-8"))) for c in chunks)
    if objective_line:
        parameters = set_parameter_line(parameters, "objective", objective_line.split(" ")[0])
    if metric is not None:
        parameters = set_parameter_line(parameters, "metric", ",".join(metric))
    text = "\n".join(out_header) + f"\ntree_sizes={sizes}\n\n" + "".join(chunks) + "end of trees\n"
    if parameters:
        text += "\n" + parameters
    if pandas_categorical is not None:
        text += _basic._dump_pandas_categorical(pandas_categorical)
    return text


# --------------------------------------------------------------------------- tree structure


@dataclass(frozen=True)
class TreeArrays:
    """One tree of a LightGBM model text, as LightGBM's ``Tree(const char*)`` reads it.

    Node ``i`` (``0 <= i < num_leaves - 1``) is internal; a child ``c >= 0`` is internal
    node ``c`` and ``c < 0`` is leaf ``~c`` (LightGBM's encoding).  A 1-leaf tree has
    empty node arrays.

    Attributes
    ----------
    num_leaves, num_cat : int
    split_feature : ndarray of int32, shape (num_leaves - 1,)
        The raw feature index each internal node splits on.
    threshold : ndarray of float64, shape (num_leaves - 1,)
        Numerical nodes: go left when ``x <= threshold``.  Categorical nodes: the index
        of the node's bitset in ``cat_boundaries`` (``static_cast<int>`` of it).
    decision_type : ndarray of int8, shape (num_leaves - 1,)
        Bit 0 categorical, bit 1 default left, bits 2-3 missing type (0 None, 1 Zero,
        2 NaN); zeros when the text has no ``decision_type`` line, as LightGBM reads it.
    left_child, right_child : ndarray of int32, shape (num_leaves - 1,)
    leaf_value : ndarray of float64, shape (num_leaves,)
    cat_boundaries : ndarray of int32, shape (num_cat + 1,) (empty when num_cat is 0)
    cat_threshold : ndarray of uint32, shape (cat_boundaries[-1],)
        The concatenated category bitsets (bit ``c`` of a bitset: category ``c`` goes left).
    """

    num_leaves: int
    num_cat: int
    split_feature: np.ndarray
    threshold: np.ndarray
    decision_type: np.ndarray
    left_child: np.ndarray
    right_child: np.ndarray
    leaf_value: np.ndarray
    cat_boundaries: np.ndarray
    cat_threshold: np.ndarray


def _tree_fields(text: str) -> dict[str, str]:
    # LightGBM reads ``key=value`` lines up to the first empty line.
    fields = {}
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line:
            break
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"tree text: line {line[:40]!r} is not key=value")
        fields[key] = value
    return fields


def _tree_array(fields: dict[str, str], key: str, dtype: Any, size: int,
                default: np.ndarray | None = None) -> np.ndarray:
    if key not in fields:
        if default is not None:
            return default
        raise ValueError(f"tree text has no {key}= line")
    raw = fields[key].split(" ") if fields[key] else []
    if len(raw) != size:
        raise ValueError(f"tree text: {key} has {len(raw)} values, expected {size}")
    if np.dtype(dtype).kind == "f":
        # Python's float() rounds correctly, as LightGBM's parser does: the doubles
        # LightGBM wrote (shortest round-trip repr) come back bit for bit.
        return np.array([float(v) for v in raw], dtype=dtype)
    values = [int(v) for v in raw]
    info = np.iinfo(dtype)
    if values and (min(values) < info.min or max(values) > info.max):  # (Python's min/max: small lists)
        raise ValueError(f"tree text: {key} has values outside the range of {np.dtype(dtype).name}")
    return np.array(values, dtype=dtype)


def parse_tree(text: str) -> TreeArrays:
    """Read one tree body (as :func:`tree_bodies` returns it) into numpy arrays.

    Mirrors ``Tree::Tree(const char*)`` of LightGBM 4.6: ``num_leaves``, ``num_cat`` and
    ``leaf_value`` are required; a 1-leaf tree needs nothing else; ``decision_type``
    defaults to all zeros; ``cat_boundaries`` and ``cat_threshold`` are read when
    ``num_cat > 0``.

    Raises
    ------
    ValueError
        For a linear tree (``is_linear=1``: its leaves are linear models of the
        features, which the walk does not evaluate) or malformed text.
    """
    fields = _tree_fields(text)
    for key in ("num_leaves", "num_cat"):
        if key not in fields:
            raise ValueError(f"tree text has no {key}= line")
    num_leaves, num_cat = int(fields["num_leaves"]), int(fields["num_cat"])
    if num_leaves < 1 or num_cat < 0:
        raise ValueError(f"tree text: num_leaves={num_leaves}, num_cat={num_cat}")
    if int(fields.get("is_linear", "0")) != 0:
        raise ValueError("linear trees (is_linear=1, from linear_tree=true) are not supported: "
                         "their leaves are linear models, not constants")
    leaf_value = _tree_array(fields, "leaf_value", np.float64, num_leaves)
    m = num_leaves - 1
    if m == 0:
        empty_i = np.zeros(0, dtype=np.int32)
        return TreeArrays(1, num_cat, empty_i, np.zeros(0), np.zeros(0, dtype=np.int8), empty_i,
                          empty_i, leaf_value, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint32))
    cat_boundaries = np.zeros(0, dtype=np.int32)
    cat_threshold = np.zeros(0, dtype=np.uint32)
    if num_cat > 0:
        cat_boundaries = _tree_array(fields, "cat_boundaries", np.int32, num_cat + 1)
        if cat_boundaries[0] != 0 or np.any(np.diff(cat_boundaries) < 0):
            raise ValueError("tree text: cat_boundaries must start at 0 and never decrease")
        cat_threshold = _tree_array(fields, "cat_threshold", np.uint32, int(cat_boundaries[-1]))
    return TreeArrays(
        num_leaves=num_leaves,
        num_cat=num_cat,
        split_feature=_tree_array(fields, "split_feature", np.int32, m),
        threshold=_tree_array(fields, "threshold", np.float64, m),
        decision_type=_tree_array(fields, "decision_type", np.int8, m, np.zeros(m, dtype=np.int8)),
        left_child=_tree_array(fields, "left_child", np.int32, m),
        right_child=_tree_array(fields, "right_child", np.int32, m),
        leaf_value=leaf_value,
        cat_boundaries=cat_boundaries,
        cat_threshold=cat_threshold,
    )


# --------------------------------------------------------------------------- raw features


def dense_as_predicted(mat: np.ndarray) -> np.ndarray:
    """A 2-D array with the values LightGBM's ``predict`` reads from ``mat``.

    ``_np2d_to_np1d`` (used by ``Booster.predict`` and ``Dataset`` construction) keeps
    float32 and float64 and converts every other dtype to float32 (int64 rounds to the
    nearest float32).  float32/float64 arrays are returned as they are (by reference,
    any memory layout: the values do not depend on it); anything else is converted by
    LightGBM's own function.
    """
    if mat.dtype in (np.float32, np.float64):
        return mat
    flat, layout = _basic._np2d_to_np1d(mat)
    return flat.reshape(mat.shape, order="F" if layout == _basic._C_API_IS_COL_MAJOR else "C")


def pandas_to_numpy(data: Any, pandas_categorical: list | None) -> tuple[np.ndarray, list]:
    """A DataFrame as ``Booster.predict`` maps it: LightGBM's ``_data_from_pandas``.

    Categorical columns become their codes in the training set's categories
    (``pandas_categorical``; unseen categories and NaN become NaN), and the frame becomes
    one array of ``np.result_type(*column dtypes, float32)``.  With
    ``pandas_categorical=None`` the frame is taken as the training set and its own
    categories are used (and returned), as LightGBM does when constructing a Dataset.

    Returns
    -------
    (array, pandas_categorical)
    """
    array, _, _, categories = _basic._data_from_pandas(
        data=data, feature_name="auto", categorical_feature="auto", pandas_categorical=pandas_categorical
    )
    return array, categories


def is_pyarrow_table(data: Any) -> bool:
    """Whether ``data`` is a pyarrow Table (False without pyarrow).

    LightGBM 4.6's own test where it has one; 4.7 removed ``_is_pyarrow_table`` (it reads
    Arrow data through narwhals), so there the Table class of an imported pyarrow decides.
    """
    own = getattr(_basic, "_is_pyarrow_table", None)
    if own is not None:
        return bool(own(data))
    pyarrow = sys.modules.get("pyarrow")
    return pyarrow is not None and isinstance(data, pyarrow.Table)


# --------------------------------------------------------------------------- callbacks

#: ``lightgbm.EvalResult`` where the installed LightGBM has it (4.7 on): its ``lgb.train`` hands
#: callbacks these named tuples (``result.dataset_name``...), and its stock callbacks read
#: those fields.  None before 4.7, whose ``lgb.train`` hands plain 4-tuples.
_EVAL_RESULT: type | None = getattr(lgb, "EvalResult", None)


def evaluation_result(dataset_name: str, metric_name: str, value: float, maximize: bool) -> tuple:
    """One entry of ``CallbackEnv.evaluation_result_list`` in the installed LightGBM's form.

    The form ``lightgbm.train`` of the same version gives its callbacks: a
    ``lightgbm.EvalResult`` in 4.7, a ``(dataset_name, metric_name, value, maximize)`` tuple in
    4.6.  Both unpack to those four items and index the same way, so code written for either
    form reads the other too.
    """
    if _EVAL_RESULT is None:
        return (dataset_name, metric_name, value, maximize)
    return _EVAL_RESULT(dataset_name, metric_name, value, maximize)


def best_score_of(results: list[tuple] | None) -> dict[str, dict[str, float]]:
    """``Booster.best_score`` from an evaluation result list, as ``lightgbm.train`` builds it.

    ``results`` are entries of either form (an ``EarlyStopException.best_score`` raised by a
    callback written for 4.6 holds tuples; 4.7 converts them to ``EvalResult`` itself).
    """
    best: dict[str, dict[str, float]] = defaultdict(OrderedDict)
    for dataset_name, metric_name, value, *_ in results or []:
        best[dataset_name][metric_name] = value
    return best


def is_early_stopping_callback(callback: Any) -> bool:
    """Whether ``callback`` is one made by ``lightgbm.early_stopping`` (a private class)."""
    return isinstance(callback, lgb.callback._EarlyStoppingCallback)


class CallbackModel(lgb.Booster):
    """What ``CallbackEnv.model`` is during an engine run: a Booster of the trees so far.

    LightGBM's callbacks test ``isinstance(env.model, Booster)`` (early stopping uses it to
    ignore the training set; ``reset_parameter`` calls ``env.model.reset_parameter``), so
    this is a Booster subclass.  The engine keeps its trees as text and assembles the real
    model only at the end, so this object builds a stock Booster from the trees so far the
    first time a method needs LightGBM's handle in an iteration (``num_trees``, ``predict``,
    ``save_model``, ``model_to_string``, ``feature_importance``, ``dump_model``...): they
    agree with the final model's first iterations.  ``eval_train``/``eval_valid``/``eval``
    answer from the engine's own evaluation of its tracked scores; ``reset_parameter``
    forwards to the running engine.  Methods that would change the model behind the engine's
    back (``update``, ``rollback_one_iter``, ``add_valid``...) raise a clear error.

    Parameters
    ----------
    model_string : callable
        ``model_string() -> (version, text)``: the model of the trees so far and a number
        that changes whenever the trees change.
    reset : callable
        Called with the new parameters by :meth:`reset_parameter`.
    evaluate : callable
        ``evaluate(dataset_or_None_or_"valid", feval) -> list of (data name, metric, value,
        higher is better)``: None is the training set, "valid" every validation set.
    train_data_name : str
    pandas_categorical : list or None
    """

    def __init__(self, model_string: Any, reset: Any, evaluate: Any, train_data_name: str,
                 pandas_categorical: list | None = None) -> None:  # no super().__init__: handle built lazily
        self.__dict__["_snapshot"] = None
        self._snapshot_version = None
        self._model_string = model_string
        self._reset = reset
        self._evaluate = evaluate
        self._network = False
        self._train_data_name = train_data_name
        self.best_iteration = 0
        self.best_score: dict = {}
        self.params: dict = {}
        self.pandas_categorical = pandas_categorical
        #: the engine's record of the last iteration (rows sampled, rate, seconds)
        self.last_record: dict[str, Any] = {}

    def _materialize(self) -> lgb.Booster:
        version, text = self._model_string()
        if self._snapshot is None or version != self._snapshot_version:
            snapshot = lgb.Booster(model_str=text)
            # Attributes LightGBM's own methods read besides the handle (name-mangled ones too).
            for key, value in snapshot.__dict__.items():
                if key not in ("_handle", "best_iteration", "best_score", "params", "_train_data_name",
                               "pandas_categorical", "_network"):
                    self.__dict__[key] = value
            self.__dict__["_snapshot"] = snapshot
            self._snapshot_version = version
        return self._snapshot

    @property  # type: ignore[override]
    def _handle(self) -> ctypes.c_void_p:
        return self._materialize()._handle

    @_handle.setter
    def _handle(self, value: Any) -> None:
        raise AttributeError("env.model is the engine's view of the trees so far; its handle cannot be replaced")

    def reset_parameter(self, params: dict[str, Any]) -> "CallbackModel":
        self._reset(params)
        return self

    def eval_train(self, feval: Any = None) -> list:
        return self._evaluate(None, feval)

    def eval_valid(self, feval: Any = None) -> list:
        return self._evaluate("valid", feval)

    def eval(self, data: lgb.Dataset, name: str, feval: Any = None) -> list:
        results = self._evaluate(data, feval)
        return [(name, metric, value, higher) for _, metric, value, higher in results]

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise lgb.basic.LightGBMError(
            "env.model is a read-only view of the model during a smart_lgbm.train run: it cannot be "
            "updated, rolled back, refitted or given new data; use its read methods (predict, "
            "num_trees, save_model, eval_valid, ...) or reset_parameter"
        )

    update = rollback_one_iter = add_valid = set_network = free_network = _refuse  # type: ignore[assignment]
    model_from_string = set_train_data_name = free_dataset = shuffle_models = _refuse  # type: ignore[assignment]
    set_leaf_output = refit = _refuse  # type: ignore[assignment]

    def __copy__(self) -> lgb.Booster:
        return lgb.Booster(model_str=self._model_string()[1])

    def __deepcopy__(self, *args: Any, **kwargs: Any) -> lgb.Booster:
        return self.__copy__()

    def __reduce__(self) -> tuple:
        # Pickles as the plain Booster of the trees so far.
        return (_booster_from_string, (self._model_string()[1],))

    def __del__(self) -> None:  # the snapshot frees its own handle
        pass


def _booster_from_string(text: str) -> lgb.Booster:
    return lgb.Booster(model_str=text)


# ---- scikit-learn estimator internals
#
# smart_lgbm.sklearn reuses LightGBM's own estimator code and swaps only its training call.
# The three functions below are every private piece of lightgbm.sklearn it touches.


def sklearn_fit_with_train(train_fn: Any) -> Any:
    """A private copy of ``lightgbm.LGBMModel.fit`` whose ``train(...)`` call is ``train_fn``.

    ``LGBMModel.fit`` does all of the scikit-learn work (input validation, class and sample
    weights, eval-set Datasets, eval-metric wrappers, fitted attributes) and then calls
    ``train(params=..., train_set=..., ...)``, a global name of :mod:`lightgbm.sklearn`.
    The copy shares the original's code object but resolves globals in a snapshot of that
    module's namespace with ``train`` replaced, so LightGBM's module and classes are never
    modified: concurrent stock LightGBM fits (other threads) are unaffected, and each call
    gets its own function object.

    Raises
    ------
    ImportError
        If this LightGBM's ``LGBMModel.fit`` no longer calls a global ``train`` (the seam
        is gone; fitting would silently train with stock LightGBM).
    """
    import types

    from lightgbm import sklearn as lgb_sklearn

    fit = lgb_sklearn.LGBMModel.fit
    if "train" not in fit.__code__.co_names or lgb_sklearn.__dict__.get("train") is not lgb.train:
        raise ImportError(
            f"lightgbm {lgb.__version__}: LGBMModel.fit no longer calls lightgbm.train through the module "
            "global 'train'; smart_lgbm's scikit-learn estimators need updating for this version"
        )
    namespace = dict(lgb_sklearn.__dict__)
    namespace["train"] = train_fn
    copy = types.FunctionType(fit.__code__, namespace, fit.__name__, fit.__defaults__, fit.__closure__)
    copy.__kwdefaults__ = fit.__kwdefaults__
    return copy


def sklearn_process_params(estimator: Any, cls: type, stage: str) -> dict[str, Any]:
    """``LGBMModel._process_params`` as resolved after ``cls`` in ``estimator``'s MRO.

    The estimators override that private method to keep their own constructor parameters
    (``sampler``, ``sampler_params``) out of the LightGBM parameters.
    """
    return super(cls, estimator)._process_params(stage)


def sklearn_not_fitted_error() -> type:
    """LightGBM's not-fitted exception (a ValueError and AttributeError subclass)."""
    from lightgbm.compat import LGBMNotFittedError

    return LGBMNotFittedError


def _label_passed_through(label: Any) -> bool:
    """Whether ``lightgbm.Dataset.set_label`` hands ``label`` to the C API unconverted.

    4.6 does so for Arrow arrays; 4.7 for every data frame or series narwhals knows except
    pandas Series (Arrow, polars...), which it reads through the Arrow C interface.
    """
    nwd = getattr(_basic, "nwd", None)  # narwhals.dependencies, imported by lightgbm 4.7 on
    if nwd is None:
        return _basic._is_pyarrow_array(label)
    return (nwd.is_into_dataframe(label) or nwd.is_into_series(label)) and not isinstance(label, _basic.pd_Series)


def sklearn_check_label(label: Any) -> None:
    """Convert ``label`` as ``lightgbm.Dataset.set_label`` does, raising its exceptions.

    Stock LightGBM refuses a bad training label (strings for a regressor...) while
    constructing the Dataset inside ``lightgbm.train``; the engine checks labels itself
    with its own exception types, so the estimators run LightGBM's conversion first to
    refuse bad labels exactly as LightGBM's estimators do.
    """
    if label is None:
        return
    if isinstance(label, np.ndarray) and (np.issubdtype(label.dtype, np.number) or label.dtype == np.bool_):
        return  # converts; skipping also avoids a second "column-vector" warning
    if isinstance(label, _basic.pd_DataFrame):
        if len(label.columns) > 1:
            raise ValueError("DataFrame for label cannot have multiple columns")
        _basic._pandas_to_numpy(label, target_dtype=np.float32)
    elif not _label_passed_through(label):
        # by keyword: 4.7 made these parameters keyword-only (4.6 has the same names)
        _basic._list_to_1d_numpy(data=label, dtype=np.float32, name="label")


def sklearn_record_feature_names(train_set: lgb.Dataset) -> None:
    """Mark ``train_set`` as having feature names or not, as constructing it would (4.7 on).

    ``LGBMModel.fit`` of 4.7 reads ``train_set._has_non_default_feature_names`` after its
    ``train(...)`` call to decide whether ``feature_names_in_`` exists; LightGBM sets it
    while constructing the Dataset.  The engine never constructs the caller's Dataset (it
    bins its own copy), so the estimators set the flag the same way: names come from a
    ``feature_name`` list or from the columns of a data frame (pandas, or any narwhals
    knows).  LightGBM 4.6 has no such flag, and this does nothing there.
    """
    if not hasattr(train_set, "_has_non_default_feature_names"):
        return
    data = train_set.data
    train_set._has_non_default_feature_names = (
        train_set.feature_name != "auto"
        or isinstance(data, _basic.pd_DataFrame)
        or bool(_basic.nwd.is_into_dataframe(data))
    )


def model_with_objective(model: str, objective_line: str, num_class: int, bias: np.ndarray | None,
                         pandas_categorical: list | None) -> str:
    """A custom-objective model string rewritten as the stock objective's model.

    The ``objective=`` line (and the parameters' ``[objective: ...]``) makes ``predict``
    apply the stock objective's transformation; ``bias`` (one constant per model of an
    iteration, the initial score the run started from) is folded into the first
    iteration's trees as stock LightGBM folds its ``boost_from_average`` score.
    """
    header, trees, parameters = split_model_string(model)
    # the parameters section ends the model text; a pandas_categorical line after it is re-added by assembly
    parameters = parameters.split("\npandas_categorical:", 1)[0].rstrip("\n") + "\n" if parameters else parameters
    if bias is not None:
        if len(trees) < num_class:
            raise ValueError("the model has no trees to fold the initial score into")
        trees = [fold_bias(t, float(b))[0] if i < num_class else t
                 for i, (t, b) in enumerate(zip(trees, [*bias, *[0.0] * (len(trees) - num_class)]))]
    return assemble_model_string(header, trees, objective_line, parameters, num_class, pandas_categorical)


def has_validation_sets(booster: lgb.Booster) -> bool:
    """Whether ``lightgbm.train``/``cv`` evaluates metrics on data sets for this Booster:
    validation sets added to it, or the training set named in ``valid_sets``/``valid_names``."""
    return bool(getattr(booster, "name_valid_sets", None)) or getattr(booster, "_train_data_name", "training") != "training"
