"""``sampler="auto"``: the method the committed comparisons show fastest for the data at hand.

:class:`Auto` (``sampler="auto"``, also what ``sampler=None`` means) is the default of
:func:`smart_lgbm.train`, of the scikit-learn and Dask estimators and of a comparison's
``auto`` method.  It draws nothing itself: before the first tree the engine gathers what it
knows then into :class:`DataFacts` (the task, the training rows and features, sparse
storage, categorical columns, rounds, learning rate, threads, and whatever only stock
LightGBM trains) and :func:`choose` takes the first row of :data:`RULES` that applies.  A
row names one of these methods:

* ``stock``: ``lightgbm.train`` itself, on the caller's Datasets and callbacks: stock
  LightGBM's model at stock LightGBM's speed, where sampling does not pay or cannot run;
* ``full``: :class:`~smart_lgbm.samplers.Full` through the engine (stock LightGBM's
  algorithm, every row), where stock LightGBM cannot take the run (a
  :class:`smart_lgbm.losses.Loss` objective, a machine of a distributed run);
* ``first_order_auto_refit``: ``FirstOrder(rate="auto", refit_leaves=True)``, for binary,
  multiclass and regression data where sampling pays: it reaches stock full's best quality
  within a tight tolerance, and its adaptive rate grows where a fixed rate's sample is too
  small for the splits;
* ``first_order_refit``: ``FirstOrder(rate=0.1, refit_leaves=True)``, for LambdaMART on
  sparse features and for binary tables with categorical columns, the fastest to stock
  full's best quality within the tight tolerance in the committed comparisons of that kind;
* ``mvs_auto``: ``MVS(rate="auto")``, for LambdaMART on dense features, the fastest there.

Each row cites the committed files it rests on (paths from the repository's root;
``docs/choosing.md`` has the table in words).  The choice is a pure function of the facts, so the same data and parameters give
the same choice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .base import Sample, Sampler, SamplingState
from .importance import MVS, FirstOrder
from .simple import Full

__all__ = ["Auto", "Choice", "DataFacts", "RULES", "Rule", "SMALL_ROWS", "choose"]

#: Below this many training rows sampling does not pay: an iteration's fixed costs (the
#: subset, the Booster's reset, the walk's set-up) eat the rows it saves.  a9a (32,561
#: rows) is stock LightGBM's to win (docs/results/a9a/a9a/table.md; per iteration the engine
#: costs 2.1x stock full there even at rate 0.3, docs/results/bench_engine.md), and
#: sampling wins from 400,000 rows on (docs/results/bench_engine.md's 400k-60:
#: FirstOrder(0.1) with the refit 0.22x stock full's time per iteration).  No committed
#: comparison lies in between: at this bound the adaptive rate's starting rate 0.1 still
#: draws 10,000 rows an iteration.
SMALL_ROWS = 100_000

#: The methods a rule can name, and how they are written for people.
METHOD_LABELS = {
    "stock": "stock LightGBM (lightgbm.train)",
    "full": "Full()",
    "first_order_auto_refit": 'FirstOrder(rate="auto", refit_leaves=True)',
    "first_order_refit": "FirstOrder(rate=0.1, refit_leaves=True)",
    "mvs_auto": 'MVS(rate="auto")',
}


@dataclass(frozen=True)
class DataFacts:
    """What the engine knows before the first tree, the inputs of :func:`choose`.

    Attributes
    ----------
    task : str
        ``"binary"``, ``"multiclass"``, ``"regression"``, ``"lambdarank"``, ``"loss"`` (a
        :class:`smart_lgbm.losses.Loss` instance as objective) or ``"other"`` (an objective
        the engine does not implement: see ``stock_only``).
    rows : int or None
        Training rows (every machine's on a distributed run); None where they are not known
        before binning (a Dataset read from a file).
    features : int or None
    sparse : bool
        The training features are a scipy sparse matrix.
    density : float or None
        Its stored share of cells (sparse input only).
    categorical : int
        Categorical columns.
    in_memory : bool
        The raw features are in memory (not a file, not freed by constructing the Dataset):
        the engine's score update walks them.
    rounds : int
    learning_rate : float
    num_threads : int
        LightGBM's ``num_threads`` (0: all).
    stock_only : str or None
        Why only stock LightGBM trains these parameters (``boosting="dart"``, bagging,
        ``linear_tree``, an objective the engine does not implement...), or None.
    refit_refused : str or None
        Why the parameters refuse a leaf refit (``path_smooth``, ``monotone_constraints``), or None.
    distributed : bool
        A machine of a distributed run: stock LightGBM cannot take it over from the engine.
    """

    task: str
    rows: int | None
    features: int | None
    sparse: bool = False
    density: float | None = None
    categorical: int = 0
    in_memory: bool = True
    rounds: int = 100
    learning_rate: float = 0.1
    num_threads: int = 0
    stock_only: str | None = None
    refit_refused: str | None = None
    distributed: bool = False

    @property
    def engine_only(self) -> bool:
        """Whether stock LightGBM cannot take the run over: the objective is a
        :class:`smart_lgbm.losses.Loss`, or this is one machine of a distributed run."""
        return self.task == "loss" or self.distributed

    def describe(self) -> str:
        """The facts in a few words: task, size, storage, categorical columns."""
        rows = "unknown rows" if self.rows is None else f"{self.rows:,} rows"
        size = rows if self.features is None else f"{rows} x {self.features:,} features"
        storage = f"sparse ({self.density:.1%} stored)" if self.sparse and self.density is not None else (
            "sparse" if self.sparse else "dense")
        extra = f", {self.categorical} categorical" if self.categorical else ""
        task = {"loss": "a smart_lgbm Loss", "other": "an objective only stock LightGBM has"}.get(
            self.task, self.task)
        return f"{task}, {size}, {storage}{extra}"


@dataclass(frozen=True)
class Rule:
    """One row of :data:`RULES`: when it applies, the method it names, why, and the evidence.

    Attributes
    ----------
    name : str
        A few words that name the case (``"small data"``).
    applies : callable
        ``applies(facts) -> bool``.
    method : str
        A key of :data:`METHOD_LABELS`.
    why : str
        The reason, in words; :meth:`Choice.reason` adds the facts.
    evidence : tuple of str
        The committed results (or, for a refusal, the documentation) the row rests on: paths
        from the repository's root.
    """

    name: str
    applies: Callable[[DataFacts], bool]
    method: str
    why: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Choice:
    """What :func:`choose` made of the facts: the rule that applied and its method."""

    rule: Rule
    facts: DataFacts

    @property
    def method(self) -> str:
        """A key of :data:`METHOD_LABELS`: the rule's, except that a
        run stock LightGBM cannot take (:attr:`DataFacts.engine_only`) gets ``"full"`` for
        ``"stock"``: stock LightGBM's algorithm, every row, through the engine."""
        if self.rule.method == "stock" and self.facts.engine_only:
            return "full"
        return self.rule.method

    @property
    def stock(self) -> bool:
        """Whether ``lightgbm.train`` trains the model."""
        return self.method == "stock"

    @property
    def label(self) -> str:
        """The method as people write it (``FirstOrder(rate="auto", refit_leaves=True)``)."""
        return METHOD_LABELS[self.method]

    @property
    def reason(self) -> str:
        """The rule, its reason and the facts, in one sentence, with the evidence."""
        instead = ("; stock LightGBM cannot take this run, so Full(): its algorithm, every row, through the engine"
                   if self.method != self.rule.method else "")
        return f"{self.rule.name} ({self.facts.describe()}): {self.rule.why}{instead} [{', '.join(self.rule.evidence)}]"

    def sampler(self) -> Sampler | None:
        """A fresh sampler of the chosen method; None for stock LightGBM."""
        if self.method == "stock":
            return None
        if self.method == "full":
            return Full()
        if self.method == "first_order_refit":
            return FirstOrder(rate=0.1, refit_leaves=True)
        if self.method == "mvs_auto":
            return MVS(rate="auto")
        return FirstOrder(rate="auto", refit_leaves=True)

    def describe(self) -> str:
        """``sampler="auto" chose ...: reason``: the line logged and written into the model."""
        return f'sampler="auto" chose {self.label}: {self.reason}'


def _small(facts: DataFacts) -> bool:
    return facts.rows is not None and facts.rows < SMALL_ROWS


_SAMPLED = "first_order_auto_refit"
_REFIT = "the leaf refit makes every leaf value exact; the adaptive rate grows where the splits need more rows"
_A9A = "docs/results/a9a/a9a/table.md"
_HIGGS = "docs/results/higgs-like/higgs-like/table.md"
_MSLR = "docs/results/mslr-like/mslr-like/table.md"
_YAHOO = "docs/results/yahoo-like/yahoo-like/table.md"
_MULTICLASS = "docs/results/multiclass-like/multiclass-like/table.md"
_REGRESSION = "docs/results/regression-like/regression-like/table.md"
_MIXED = "docs/results/mixed-categorical/mixed-categorical/table.md"

#: The rule table: the first row that applies chooses (``Choice.method`` puts ``Full()`` for
#: ``stock`` where stock LightGBM cannot take the run).  ``evidence``: paths from the
#: repository's root (``tests/test_auto.py`` checks that they exist).
RULES: tuple[Rule, ...] = (
    Rule("parameters only stock LightGBM trains", lambda f: f.stock_only is not None, "stock",
         "the engine refuses them; stock LightGBM trains them as asked", ("docs/engine.md",)),
    Rule("features not in memory", lambda f: not f.in_memory, "stock",
         "the engine would update every row's score through LightGBM's binned predictor, a reset and a walk "
         "of the binned rows per iteration, which costs more than sampling saves", ("docs/engine.md",)),
    Rule("small data", _small, "stock",
         f"below {SMALL_ROWS:,} rows an iteration's fixed costs eat the rows sampling saves; stock LightGBM is "
         "fastest there", (_A9A, "docs/results/bench_engine.md")),
    Rule("unknown size", lambda f: f.rows is None, "stock",
         "the training rows are not known before binning, so nothing shows that sampling pays", ("docs/choosing.md",)),
    Rule("leaf refit refused", lambda f: f.refit_refused is not None, "stock",
         "the parameters refuse the leaf refit, which the sampled choice rests on: without it FirstOrder's "
         "adaptive rate does not reach stock full's best log-loss within 0.0005", (_HIGGS,)),
    Rule("categorical columns, binary", lambda f: f.categorical > 0 and f.task == "binary", "first_order_refit",
         "fastest to stock full's best log-loss within 0.0005 on a binary table with numerical and "
         "high-cardinality categorical columns (mixed-categorical), where the adaptive rate comes later; "
         "the leaf refit makes every leaf value exact", (_MIXED,)),
    Rule("categorical columns", lambda f: f.categorical > 0, "stock",
         "the committed comparison with categorical columns is binary: stock LightGBM for other tasks until one "
         "shows that sampling pays there", (_MIXED,)),
    Rule("large LambdaMART, sparse features", lambda f: f.task == "lambdarank" and f.sparse, "first_order_refit",
         "fastest to stock full's best NDCG@10 within 0.001 on sparse ranking data (yahoo-like); the leaf refit "
         "makes every leaf value exact", (_YAHOO,)),
    Rule("large LambdaMART", lambda f: f.task == "lambdarank", "mvs_auto",
         "the only method that reaches stock full's best NDCG@10 within 0.001 on dense ranking data "
         "(mslr-like), where the leaf refit at rate 0.1 ends just short of it", (_MSLR,)),
    Rule("large binary", lambda f: f.task == "binary", _SAMPLED,
         f"reaches stock full's best log-loss within 0.0005 on large dense binary data (higgs-like); {_REFIT}",
         (_HIGGS,)),
    Rule("large multiclass", lambda f: f.task == "multiclass", _SAMPLED,
         "reaches stock full's best multi-log-loss within 0.0005 on large dense multiclass data (multiclass-like) "
         f"sooner than stock full, and ends below it; {_REFIT}", (_MULTICLASS,)),
    Rule("large regression", lambda f: f.task == "regression", "stock",
         "on large dense L2 regression no sampler reaches stock full's best L2 within the tolerance "
         "(regression-like): stock LightGBM until a sampler does", (_REGRESSION,)),
    Rule("large data, another loss", lambda f: True, _SAMPLED,
         "as on large binary data: a Newton leaf refit holds for any twice-differentiable loss", (_HIGGS,)),
)


def choose(facts: DataFacts) -> Choice:
    """The first row of :data:`RULES` that applies to ``facts`` (the last row always does)."""
    if not isinstance(facts, DataFacts):
        raise TypeError(f"facts must be a DataFacts, got {type(facts).__name__}")
    for rule in RULES:
        if rule.applies(facts):
            return Choice(rule, facts)
    raise AssertionError("the last rule applies to every facts")  # pragma: no cover


class Auto(Sampler):
    """The method the committed comparisons show fastest for the data, chosen before the first tree.

    ``sampler="auto"`` (and ``sampler=None``): on small data, or parameters only stock
    LightGBM trains, ``lightgbm.train`` itself (stock LightGBM's model at its speed);
    elsewhere ``FirstOrder(rate="auto", refit_leaves=True)`` (``FirstOrder(rate=0.1,
    refit_leaves=True)`` for LambdaMART).  The rule is the table
    :data:`smart_lgbm.samplers.auto.RULES` (docs/choosing.md); the choice and its reason are
    logged, recorded by :func:`smart_lgbm.record_sampling` and written into the model.

    :func:`smart_lgbm.train` resolves it; it draws no sample itself.
    """

    def sample(self, state: SamplingState, rng: np.random.Generator) -> Sample:
        raise TypeError('sampler="auto" is resolved by smart_lgbm.train before the first tree (it draws nothing '
                        'itself); give this caller a sampler such as FirstOrder(rate="auto", refit_leaves=True)')
