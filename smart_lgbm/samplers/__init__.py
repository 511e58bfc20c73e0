"""Row samplers: the public sampler classes and the protocol for writing your own."""

from .adaptive import AdaptiveRate
from .base import GradientHistory, ProbabilitySampler, RunContext, Sample, Sampler, SamplingState, solve_rho
from .importance import MVS, FirstOrder, LossBased, SecondOrder, regularised_gradient
from .registry import make_sampler
from .simple import Full, Uniform, WeightTrimming

__all__ = [
    "AdaptiveRate",
    "MVS",
    "FirstOrder",
    "Full",
    "GradientHistory",
    "LossBased",
    "ProbabilitySampler",
    "RunContext",
    "Sample",
    "Sampler",
    "SamplingState",
    "SecondOrder",
    "Uniform",
    "WeightTrimming",
    "make_sampler",
    "regularised_gradient",
    "solve_rho",
]
