"""Where each data set's new scores come from in an iteration: one pure decision.

After the tree learner has fitted an iteration's trees on the sample, every tracked set (the
training set and each validation set) must get each row's tree outputs added to its
scores.  There are five ways (:class:`Source`), and which one a set takes depends on a few
facts of the run (what of its features are in memory, whether the sampler reads leaves,
init scores held by LightGBM, the fused pass) and two of the iteration (whether every row
was drawn, whether the sample is large).  :func:`plan_updates` decides it for every set at
once and returns an :class:`UpdatePlan`; :class:`smart_lgbm._engine.run.BoostingRun` follows
the plan, and :meth:`smart_lgbm._lightgbm.OneIterationBooster.fit` returns the outputs it
reads keyed by the set keys of the plan (:data:`TRAIN`, :data:`SAMPLE`,
:func:`valid_key`), never by position.

When every row is drawn and no set's outputs need LightGBM, the plan also says that the
tree-fitting Booster stays on the whole training set and keeps the trees
(:attr:`UpdatePlan.stay_on_train`): no reset, no park and no rollback per iteration, as in
stock training; the training rows are walked as in a sampled iteration.

The run's facts are fixed when the run starts, and the iteration's facts take four values,
so a run computes at most four plans (:class:`PlanCache`), not one per iteration.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "SAMPLE", "TRAIN", "Features", "PlanCache", "RunFacts", "Source", "UpdatePlan", "plan_updates", "valid_key",
]

#: Key of the training set.
TRAIN = 0
#: Key of the sample's subset Dataset (its rows' outputs, read back from LightGBM).
SAMPLE = -1


def valid_key(position: int) -> int:
    """Key of the validation set at ``position`` (0-based) in the run's validation sets."""
    return position + 1


class Features(enum.Enum):
    """What of a set's features the run holds in memory."""

    #: bin codes (:mod:`smart_lgbm._engine.walk.codes`): one byte per value
    CODES = "codes"
    #: the caller's raw features (data that cannot be coded exactly)
    RAW = "raw"
    #: none: a Dataset built from a file, or constructed with ``free_raw_data=True``
    NONE = "none"


class Source(enum.Enum):
    """Where a set's new tree outputs come from in one iteration."""

    #: Every training row was drawn, and some set's outputs come from LightGBM anyway (no
    #: features in memory, or a distributed run): LightGBM's tree learner already added each
    #: row's output to the scores of the Dataset it fitted on, from its partition of the
    #: rows.  Read back with no walk (the Booster is reset to the training set and back).
    PARTITION = "the tree learner's partition"
    #: LightGBM's binned predictor: the Booster is pointed at the set's binned rows, which
    #: costs a reset and a binned walk per iteration (sets without features in memory).
    PREDICTOR = "LightGBM's binned predictor"
    #: The compiled walk over the set's bin codes.
    CODED_WALK = "coded walk"
    #: The compiled walk over the set's raw features.
    RAW_WALK = "raw walk"
    #: Training set only: the sampled rows' outputs are read back from the tree learner's
    #: partition of the sample (as :attr:`PARTITION`, on the subset), and the coded walk
    #: adds them and skips those rows.
    SAMPLE_READ_BACK = "sampled rows read back, the other rows by the coded walk"


#: The sources for which LightGBM computes the outputs of the set itself.
_THROUGH_LIGHTGBM = frozenset({Source.PARTITION, Source.PREDICTOR})
_WALKED = frozenset({Source.CODED_WALK, Source.RAW_WALK, Source.SAMPLE_READ_BACK})
_WALK_OF = {Features.CODES: Source.CODED_WALK, Features.RAW: Source.RAW_WALK, Features.NONE: Source.PREDICTOR}


@dataclass(frozen=True)
class RunFacts:
    """What :func:`plan_updates` needs to know of a run; fixed for the run.

    Attributes
    ----------
    train : Features
        What of the training set's features is in memory.
    valids : tuple of Features
        The same for every validation set, in the run's order.
    needs_leaves : bool
        The sampler reads each training row's leaf in the newest trees.
    train_init_score : bool
        LightGBM holds init scores for the training set (its predictor starts from them,
        so the sample's outputs cannot be read back exactly).
    fused : bool
        The run has a fused pass (:mod:`smart_lgbm._engine.sweep`): the walk of the coded training
        rows also computes the next iteration's gradients (and writes the rows' leaves when
        the sampler needs them).  Only with coded training rows.
    network : bool, default=False
        A machine of a distributed run (LightGBM's network): its iterations that draw every
        row read the training outputs from LightGBM's partition (:attr:`Source.PARTITION`),
        with the Booster reset and rolled back as in sampled ones.
    refit : bool, default=False
        The sampler refits the leaf values on every training row (:mod:`smart_lgbm._engine.refit`):
        a sampled iteration needs every training row's leaf before any set's scores change,
        and no set's outputs can be taken from LightGBM's values.
    """

    train: Features
    valids: tuple[Features, ...]
    needs_leaves: bool
    train_init_score: bool
    fused: bool
    network: bool = False
    refit: bool = False

    def __post_init__(self) -> None:
        for name, value in (("train", self.train), *(("valids", v) for v in self.valids)):
            if not isinstance(value, Features):
                raise TypeError(f"RunFacts.{name} takes Features members; got {value!r}")
        if self.fused and self.train is not Features.CODES:
            raise ValueError(f"RunFacts: a fused pass needs coded training rows; got train={self.train.value}")


@dataclass(frozen=True)
class UpdatePlan:
    """Where every set's outputs come from in one iteration (:func:`plan_updates`).

    Attributes
    ----------
    train : Source
    valids : tuple of Source
        One per validation set, in the run's order.
    read : tuple of int
        The keys whose outputs :meth:`OneIterationBooster.fit` reads from LightGBM, in the
        order it reads them: :data:`SAMPLE` first when present (the Booster is on the
        sample already), then the training set, then validation sets.
    added : tuple of int
        The keys of ``read`` whose outputs are added to that set's scores as they are
        (all but :data:`SAMPLE`).
    walked : tuple of int
        The keys of the sets the compiled walk updates, training set first.
    slow : tuple of int
        The keys of the sets updated through :attr:`Source.PREDICTOR` (said once per run).
    fused : bool
        The training set's coded walk is the fused pass.
    want_leaves : bool
        ``fit`` reports the leaves of the rows of every set it reads (the sampler needs the
        training rows' and LightGBM gives the training set's outputs, or a refit maps every
        read set's leaves to the new values).
    walk_leaves : bool
        The walk of the training rows writes their leaves (the sampler or a refit needs them
        and the training set is walked).
    refit : bool
        A sampled iteration whose leaf values are refitted on every training row: the
        training rows are walked to their leaves first (when walked), the trees' values
        are replaced, then every set gets its outputs from the new values (walked sets
        by the walk of the new trees, the training set by its leaves, read sets by the
        leaves ``fit`` reports).
    stay_on_train : bool
        Every row was drawn and ``read`` is empty: the tree-fitting Booster fits on the whole
        training set without a reset and keeps the trees
        (:meth:`smart_lgbm._lightgbm.OneIterationBooster.fit` with ``keep=True``).
    """

    train: Source
    valids: tuple[Source, ...]
    read: tuple[int, ...]
    added: tuple[int, ...]
    walked: tuple[int, ...]
    slow: tuple[int, ...]
    fused: bool
    want_leaves: bool
    walk_leaves: bool
    stay_on_train: bool = False
    refit: bool = False

    @property
    def read_sample(self) -> bool:
        """The sampled rows' outputs are read back (:attr:`Source.SAMPLE_READ_BACK`)."""
        return self.train is Source.SAMPLE_READ_BACK


def plan_updates(run: RunFacts, *, all_rows: bool, large_sample: bool) -> UpdatePlan:
    """Decide where every set's new scores come from in one iteration.

    Parameters
    ----------
    run : RunFacts
    all_rows : bool
        Every training row was drawn (the sample is the training set).
    large_sample : bool
        The sample holds at least :data:`smart_lgbm._engine.run.READ_SAMPLE_FRACTION` of the
        rows: reading its outputs back lets the coded walk skip them.  Below that share
        skipping scattered rows saves no time.

    Returns
    -------
    UpdatePlan

    Notes
    -----
    The training set, when every row was drawn: the walk of its codes or raw features, with
    the Booster staying on the training set (:attr:`UpdatePlan.stay_on_train`), when the
    training set and every validation set have features in memory and the run is on one
    machine; else :attr:`Source.PARTITION`.  When a sample was drawn:
    :attr:`Source.PREDICTOR` without features in memory; else the walk of
    its codes or raw features, with the sampled rows read back
    (:attr:`Source.SAMPLE_READ_BACK`) when the rows are coded, the sample is large, the
    sampler needs no leaves (it needs every row's leaf from the walk) and LightGBM holds no
    init scores for the set (the sample's scores would not start at 0.0).  A validation set:
    the walk of its codes or raw features, else :attr:`Source.PREDICTOR`.
    """
    stay = (all_rows and not run.network and run.train is not Features.NONE
            and Features.NONE not in run.valids)
    if stay:
        train = _WALK_OF[run.train]  # all rows walked: nothing to skip, nothing read back
    elif all_rows:
        train = Source.PARTITION
    elif run.train is Features.CODES:
        read_back = large_sample and not run.needs_leaves and not run.train_init_score and not run.refit
        train = Source.SAMPLE_READ_BACK if read_back else Source.CODED_WALK
    else:
        train = _WALK_OF[run.train]
    valids = tuple(_WALK_OF[features] for features in run.valids)
    keyed = [(TRAIN, train), *((valid_key(i), source) for i, source in enumerate(valids))]
    added = tuple(key for key, source in keyed if source in _THROUGH_LIGHTGBM)
    walked = tuple(key for key, source in keyed if source in _WALKED)
    train_walked = train in _WALKED
    # An iteration that draws every row fits exact values already; on a network another
    # machine may have sampled, and every machine must take part in the refit's sums.
    refit = run.refit and (not all_rows or run.network)
    return UpdatePlan(
        train=train,
        valids=valids,
        read=((SAMPLE,) if train is Source.SAMPLE_READ_BACK else ()) + added,
        added=added,
        walked=walked,
        slow=tuple(key for key, source in keyed if source is Source.PREDICTOR),
        fused=run.fused and train_walked,
        want_leaves=(run.needs_leaves and not train_walked) or (refit and bool(added)),
        walk_leaves=(run.needs_leaves or refit) and train_walked,
        stay_on_train=stay,
        refit=refit,
    )


class PlanCache:
    """The plans of one run, each computed the first time its iteration facts occur.

    Parameters
    ----------
    run : RunFacts
    """

    __slots__ = ("run", "_plans")

    def __init__(self, run: RunFacts) -> None:
        self.run = run
        self._plans: dict[tuple[bool, bool], UpdatePlan] = {}

    def __call__(self, all_rows: bool, large_sample: bool) -> UpdatePlan:
        """The plan of an iteration (see :func:`plan_updates`)."""
        key = (all_rows, large_sample)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = plan_updates(self.run, all_rows=all_rows, large_sample=large_sample)
        return plan
