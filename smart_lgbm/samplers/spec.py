"""The built-in samplers' parameters, declared once.

Each :class:`~smart_lgbm._validation.Param` here is what a sampler's constructor checks its
argument with (and takes its default from), what ``make_sampler`` and the estimators accept,
and what a comparison config's ``[methods.LABEL]`` table accepts (its TOML form,
:meth:`Param.toml`).  :class:`smart_lgbm.samplers.registry.SamplerSpec` ties a registry name
to a class and its parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

from .._validation import Boolean, Constraint, InstanceOf, Interval, NoneValue, Options, Param
from .adaptive import AdaptiveRate, adaptive_rate_from_table

__all__ = ["ALPHA", "ANCHOR_LAG", "ETA", "PROBABILITY_RATE", "REFIT_LEAVES", "REG", "RHO", "RATE", "refit_leaves_of"]


def _rate_object(value: Any) -> Any:
    # "auto" is the adaptive rate with its defaults (numbers and AdaptiveRate objects pass)
    return AdaptiveRate() if isinstance(value, str) else value


@dataclass(frozen=True)
class AdaptiveRateTable(Constraint):
    """A table (dict) of :class:`AdaptiveRate`'s parameters, e.g. a config's ``rate = {start =
    0.1, threshold = 0.05}``: the adaptive rate with those parameters, the others at their
    defaults.  An unknown key is a ValueError naming the accepted ones."""

    def type_ok(self, value: Any) -> bool:
        return isinstance(value, dict)

    def convert(self, value: Any) -> Any:
        return adaptive_rate_from_table(value)

    def __str__(self) -> str:
        return "a table of AdaptiveRate's parameters"


_RATE_VALUES = (Interval(Real, 0, 1, closed="right"), Options(("auto",)), AdaptiveRateTable(),
                InstanceOf(AdaptiveRate))

#: A fixed-rate sampler's rate (Uniform).
RATE = Param("rate", _RATE_VALUES, 0.1,
             "expected share of rows drawn per iteration; \"auto\": grow it while the trees are noise-dominated",
             convert=_rate_object)
#: A probability sampler's rate: None with ``rho`` given (else 0.1).
PROBABILITY_RATE = Param("rate", (*_RATE_VALUES, NoneValue()), None,
                         "target expected share of rows drawn (rho solved per iteration); 0.1 unless rho is given",
                         convert=_rate_object)
RHO = Param("rho", (Interval(Real, 0, None, closed="neither"), NoneValue()), None,
            "the paper's fixed rho (p_i = min(1, rho * s_i)) instead of a rate")
ALPHA = Param("alpha", (Interval(Real, 0, 1, closed="left"),), 0.1,
              "share of the total hessian weight that may be trimmed")
ETA = Param("eta", (Interval(Real, 0, None, closed="left"),), 1.0,
            "weight of the regulariser's leaf-mean anchor term (used only with anchor_lag)")
ANCHOR_LAG = Param("anchor_lag", (Interval(Integral, 1, None, closed="left"), NoneValue()), None,
                   "iterations back to the regulariser's anchor; None (\"off\" in configs): no regulariser",
                   none_in_toml="off")
REFIT_LEAVES = Param("refit_leaves", (Boolean(), NoneValue()), None,
                     "set each tree's leaf values from all training rows (the sample only chooses the splits); "
                     "None: the sampler class's refit_leaves attribute (False for the built-in samplers)")
REG = Param("reg", (Interval(Real, 0, None, closed="left"), Options(("auto",))), "auto",
            "lambda of sqrt(g^2 + lambda h^2); \"auto\": (sum|g| / sum h)^2 each iteration")


def refit_leaves_of(sampler: Any, value: Any) -> bool:
    """A sampler's ``refit_leaves`` from its constructor argument: the checked value, or for
    None the class attribute (a user's subclass may declare ``refit_leaves = True``)."""
    checked = REFIT_LEAVES.check(value, type(sampler).__name__)
    return bool(type(sampler).refit_leaves) if checked is None else bool(checked)
