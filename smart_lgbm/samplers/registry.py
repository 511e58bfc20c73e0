"""Samplers by name, for configs, the CLI and scikit-learn parameters.

:data:`SPECS` is the one table of built-in samplers (:class:`SamplerSpec`: name, class,
parameters, declared in :mod:`smart_lgbm.samplers.spec`); :func:`make_sampler`, the estimators' ``sampler``
validation and a comparison config's method kinds and keys all read it when they run.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from .base import Sampler
from .importance import MVS, FirstOrder, LossBased, SecondOrder
from .simple import Full, Uniform, WeightTrimming
from .._validation import Param
from .spec import ALPHA, ANCHOR_LAG, ETA, PROBABILITY_RATE, RATE, REFIT_LEAVES, REG, RHO


@dataclass(frozen=True)
class SamplerSpec:
    """A built-in sampler: its registry name, its class and its parameters.

    Parameters
    ----------
    name : str
        The name ``make_sampler``, the estimators' ``sampler=`` and a config's ``kind`` take.
    cls : type
        The :class:`~smart_lgbm.samplers.Sampler` subclass.
    params : tuple of Param
        Its constructor's parameters, in signature order (a test pins the match).
    """

    name: str
    cls: type[Sampler]
    params: tuple[Param, ...] = ()

    @property
    def doc(self) -> str:
        """One line: the first line of the class's docstring."""
        return inspect.cleandoc(self.cls.__doc__ or self.cls.__name__).splitlines()[0]

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def check_names(self, given: Any) -> None:
        """ValueError for a keyword this sampler does not take, listing the ones it does."""
        unknown = [key for key in given if key not in self.param_names]
        if unknown:
            accepted = ", ".join(self.param_names) or "none"
            raise ValueError(f"unknown parameter {unknown[0]!r} for sampler {self.name!r}; accepted: {accepted}")

SPECS: dict[str, SamplerSpec] = {spec.name: spec for spec in (
    SamplerSpec("full", Full),
    SamplerSpec("uniform", Uniform, (RATE, REFIT_LEAVES)),
    SamplerSpec("weight_trimming", WeightTrimming, (ALPHA, REFIT_LEAVES)),
    SamplerSpec("first_order", FirstOrder, (PROBABILITY_RATE, RHO, REFIT_LEAVES)),
    SamplerSpec("second_order", SecondOrder, (PROBABILITY_RATE, RHO, ETA, ANCHOR_LAG, REFIT_LEAVES)),
    SamplerSpec("mvs", MVS, (PROBABILITY_RATE, RHO, REG, REFIT_LEAVES)),
    SamplerSpec("loss_based", LossBased, (PROBABILITY_RATE, RHO, REFIT_LEAVES)),
)}


def sampler_names() -> tuple[str, ...]:
    """The registry's sampler names, in table order."""
    return tuple(SPECS)


def find_spec(name: str) -> SamplerSpec | None:
    """The spec named ``name``: a registry name or its class's name, in any case, ``-`` for
    ``_`` (``"first_order"``, ``"FirstOrder"``, ``"first-order"``, ``"MVS"``); None if none."""
    key = name.replace("-", "_").lower()
    for spec in SPECS.values():
        if key in (spec.name, spec.cls.__name__.lower()):
            return spec
    return None


def make_sampler(spec: Sampler | str | None, **params: Any) -> Sampler:
    """A sampler from an instance, a name (``"first_order"``, ``"FirstOrder"``...) or None (Full).

    Raises
    ------
    ValueError
        For an unknown name (the message lists the accepted names), an unknown parameter
        (the message lists the sampler's) or a bad parameter value.
    TypeError
        For anything that is not a sampler, a string or None.
    """
    if spec is None:
        spec = "full"
    if isinstance(spec, Sampler):
        if params:
            raise ValueError("sampler parameters can only be given with a sampler name, not an instance")
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"sampler must be a Sampler instance, a sampler name or None, got {type(spec).__name__}")
    found = find_spec(spec)
    if found is None:
        raise ValueError(f"unknown sampler {spec!r}; accepted: {', '.join(sorted(SPECS))}")
    found.check_names(params)
    try:
        return found.cls(**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for sampler {spec!r}: {exc}") from exc
