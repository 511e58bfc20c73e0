"""Samplers by name, for configs, the CLI and scikit-learn parameters.

:data:`SPECS` is the one table of built-in samplers (name, class, parameters: see
:mod:`smart_lgbm.samplers.spec`); :func:`make_sampler`, the estimators' ``sampler``
validation and a comparison config's method kinds and keys all read it when they run.
"""

from __future__ import annotations

from typing import Any

from .base import Sampler
from .importance import MVS, FirstOrder, LossBased, SecondOrder
from .simple import Full, Uniform, WeightTrimming
from .spec import ALPHA, ANCHOR_LAG, ETA, PROBABILITY_RATE, RATE, REFIT_LEAVES, REG, RHO, SamplerSpec

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
