"""Samplers by name, for configs, the CLI and scikit-learn parameters."""

from __future__ import annotations

from typing import Any

from .base import Sampler
from .importance import MVS, FirstOrder, LossBased, SecondOrder
from .simple import Full, Uniform, WeightTrimming

SAMPLERS: dict[str, type[Sampler]] = {
    "full": Full,
    "uniform": Uniform,
    "weight_trimming": WeightTrimming,
    "first_order": FirstOrder,
    "second_order": SecondOrder,
    "mvs": MVS,
    "loss_based": LossBased,
}


def make_sampler(spec: Sampler | str | None, **params: Any) -> Sampler:
    """A sampler from an instance, a name (``"first_order"``, ``"FirstOrder"``...) or None (Full).

    Raises
    ------
    ValueError
        For an unknown name (the message lists the accepted names) or bad parameters.
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
    key = "".join("_" + c.lower() if c.isupper() else c for c in spec).lstrip("_").replace("-", "_").lower()
    key = {"m_v_s": "mvs", "first_order": "first_order"}.get(key, key)
    if key not in SAMPLERS:
        raise ValueError(f"unknown sampler {spec!r}; accepted: {', '.join(sorted(SAMPLERS))}")
    try:
        return SAMPLERS[key](**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for sampler {spec!r}: {exc}") from exc
