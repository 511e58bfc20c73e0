"""The tracked sets' scores and their updaters: one small function per source of an update plan.

After the tree learner has fitted an iteration's trees, every tracked set (the training set
and each validation set) gets each row's tree outputs added to its scores, from the source
the iteration's :class:`~smart_lgbm._engine.update_plan.UpdatePlan` names for it
(:class:`~smart_lgbm._engine.update_plan.Source`).  :func:`updater_for` picks the function;
each reads what it needs from the iteration's :class:`Update`.  The training set's updater
may also leave the next iteration's gradients (:class:`~smart_lgbm._engine.draw.Gradients`),
which it returns: the walk of its codes on the fused path (the gradient sweep,
:mod:`.sweep`), and the add of a leaf refit's outputs by leaf.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from . import refit
from .data import EngineSet
from .draw import Gradients
from .sweep import GradientSweep
from .update_plan import TRAIN, Features, Source, UpdatePlan
from .walk import BinCodes, CodeBook, CodedForest, Forest, RawFeatures, add_coded_outputs, add_outputs

__all__ = ["NewTrees", "ScoredSet", "Update", "Updater", "updater_for"]


class ScoredSet:
    """A data set whose raw scores the run tracks, and what the walk of its rows reads.

    ``walk`` is the set's bin codes when its raw features could be coded
    (:mod:`smart_lgbm._engine.walk.codes`), else its raw features, else None (its outputs
    then come from LightGBM's binned predictor).
    """

    def __init__(self, data: EngineSet, k: int, book: CodeBook | None) -> None:
        self.data = data
        self.scores = np.zeros((data.num_rows, k)) if data.init_score is None else data.init_score.copy()
        raw = data.raw
        codes = None if raw is None or book is None else book.encode(raw)
        self.walk: BinCodes | RawFeatures | None = raw if codes is None else codes
        if codes is not None:
            data.release_raw()  # the codes replace it (a converted DataFrame's copy is freed)

    @property
    def features(self) -> Features:
        """What of the set's features the walk reads (:mod:`.update_plan`)."""
        if self.walk is None:
            return Features.NONE
        return Features.CODES if isinstance(self.walk, BinCodes) else Features.RAW

    @property
    def lightgbm_read(self) -> tuple[Any, int, np.ndarray | None]:
        """What :meth:`OneIterationBooster.fit` needs to read the outputs through LightGBM."""
        return self.data.handle, self.data.num_rows, self.data.native_init_score


class NewTrees:
    """An iteration's trees as the updaters read them.

    Parameters
    ----------
    texts : list of str
        The trees' texts, as the model keeps them.
    book : CodeBook or None
        The training data's bin codes' book (coded sets walk the trees coded with it).
    values : list of ndarray, optional
        After a leaf refit: each tree's new leaf values.
    forest, coded : optional
        The trees already parsed (and coded) by the refit; otherwise each is made on first
        use, once per iteration, whichever sets need it.
    """

    def __init__(self, texts: list[str], book: CodeBook | None, values: list[np.ndarray] | None = None,
                 forest: Forest | None = None, coded: CodedForest | None = None) -> None:
        self.texts = texts
        self.book = book
        self.values = values
        if forest is not None:
            self.__dict__["forest"] = forest
        if coded is not None:
            self.__dict__["coded"] = coded

    @cached_property
    def forest(self) -> Forest:
        """The trees flattened for the raw walk."""
        return Forest.from_tree_texts(self.texts)

    @cached_property
    def coded(self) -> CodedForest:
        """The trees' nodes on bin codes (sets are coded only with the training data's book)."""
        assert self.book is not None  # a set is coded only when the training data has a book
        return self.book.coded_forest(self.forest)


@dataclass(frozen=True)
class Update:
    """What the updaters of one iteration read.

    Attributes
    ----------
    trees : NewTrees
    outputs : dict
        The outputs LightGBM gave, by the plan's keys (after a refit, through the new values).
    known : tuple or None
        ``(rows, outputs)`` of the sampled rows when their outputs were read back
        (:attr:`Source.SAMPLE_READ_BACK`): the walk of the training codes adds them and
        skips those rows.
    leaves : ndarray or None
        The int32 ``(n, K)`` buffer the walk of the training rows writes their leaves into
        (the plan's ``walk_leaves``).
    sweep : GradientSweep or None
        The run's gradient sweep when this iteration takes it (the plan's ``fused``).
    grad, hess : ndarray
        The run's float32 gradient buffers, which the sweep writes the next gradients into.
    """

    trees: NewTrees
    outputs: dict[int, np.ndarray]
    known: tuple[np.ndarray, np.ndarray] | None
    leaves: np.ndarray | None
    sweep: GradientSweep | None
    grad: np.ndarray
    hess: np.ndarray


#: ``updater(update, key, scored)``: adds the iteration's outputs to set ``key``'s scores;
#: returns the next iteration's gradients when it computed them (the training set only).
Updater = Callable[[Update, int, ScoredSet], "Gradients | None"]


def add_lightgbm_outputs(update: Update, key: int, scored: ScoredSet) -> None:
    """:attr:`Source.PARTITION` and :attr:`Source.PREDICTOR`: the outputs LightGBM gave, added
    as they are."""
    scored.scores += update.outputs[key]


def walk_codes(update: Update, key: int, scored: ScoredSet) -> Gradients | None:
    """:attr:`Source.CODED_WALK` and :attr:`Source.SAMPLE_READ_BACK`: the walk over the set's
    bin codes; for the training rows the gradient sweep when the iteration takes it."""
    assert isinstance(scored.walk, BinCodes)  # the plan walks codes only for coded sets
    if key != TRAIN:
        add_coded_outputs(scored.walk, update.trees.coded, scored.scores, None, None, rows_checked=True)
        return None
    if update.sweep is not None:  # the walk, the next iteration's g, h and its sampler's statistics
        return update.sweep.walk(scored.walk, update.trees.coded, scored.scores, update.known, update.grad,
                                 update.hess, update.leaves)
    add_coded_outputs(scored.walk, update.trees.coded, scored.scores, update.leaves, update.known, rows_checked=True)
    return None


def walk_raw(update: Update, key: int, scored: ScoredSet) -> None:
    """:attr:`Source.RAW_WALK`: the walk over the set's raw features."""
    assert isinstance(scored.walk, RawFeatures)  # the plan walks only sets with features
    add_outputs(scored.walk, update.trees.forest, scored.scores, update.leaves if key == TRAIN else None)


def add_by_leaf(update: Update, key: int, scored: ScoredSet) -> Gradients | None:
    """The training rows after a leaf refit walked them to their leaves: each row's new
    output read from its leaf; on the fused path inside the gradient sweep, each block's
    scores just before its gradients read them."""
    assert update.leaves is not None and update.trees.values is not None  # the refit walked the rows
    if update.sweep is not None:
        return update.sweep.gradients(scored.scores, update.grad, update.hess,
                                      (update.leaves, refit.value_table(update.trees.values)))
    refit.add_by_leaf(scored.scores, update.leaves, update.trees.values)
    return None


_BY_SOURCE: dict[Source, Updater] = {
    Source.PARTITION: add_lightgbm_outputs,
    Source.PREDICTOR: add_lightgbm_outputs,
    Source.CODED_WALK: walk_codes,
    Source.SAMPLE_READ_BACK: walk_codes,
    Source.RAW_WALK: walk_raw,
}


def updater_for(plan: UpdatePlan, key: int) -> Updater:
    """The updater of set ``key`` (:data:`TRAIN` or a validation set's key) in ``plan``."""
    if key == TRAIN:
        if plan.refit and TRAIN in plan.walked:  # (its leaves are known: the refit walked them)
            return add_by_leaf
        return _BY_SOURCE[plan.train]
    return _BY_SOURCE[plan.valids[key - 1]]
