"""smart-lgbm: SMART importance-sampled gradient boosting on stock LightGBM.

``smart_lgbm.train`` is a drop-in for ``lightgbm.train`` whose tree learner sees only a
sampled subset of rows per iteration, with importance-reweighted gradients.
"""

from . import _lightgbm

# One clear error naming the supported range, before anything relies on LightGBM internals.
_lightgbm.check_version()

from . import _numba_runtime  # noqa: E402

# numba's runtime from a cached object file rather than compiled by LLVM at the first kernel
# load: about 27 MB less peak memory on small data (docs/engine.md, "Memory")
_numba_runtime.install()

from ._version import __version__  # noqa: E402
from .callback import record_sampling  # noqa: E402
from .engine import train  # noqa: E402
from .exceptions import (  # noqa: E402
    IterationNotSplitWarning,
    NoCacheWarning,
    NoMoreSplitsWarning,
    SlowPathWarning,
    SmartLGBMWarning,
)
from .samplers import (  # noqa: E402
    AdaptiveRate,
    MVS,
    FirstOrder,
    Full,
    LossBased,
    ProbabilitySampler,
    Sample,
    Sampler,
    SamplingState,
    SecondOrder,
    Uniform,
    WeightTrimming,
    make_sampler,
)

__all__ = [
    "AdaptiveRate",
    "MVS",
    "FirstOrder",
    "Full",
    "IterationNotSplitWarning",
    "LossBased",
    "NoCacheWarning",
    "NoMoreSplitsWarning",
    "SlowPathWarning",
    "ProbabilitySampler",
    "Sample",
    "Sampler",
    "SamplingState",
    "SecondOrder",
    "SmartLGBMWarning",
    "Uniform",
    "WeightTrimming",
    "__version__",
    "make_sampler",
    "record_sampling",
    "train",
]

from .objective import SmartObjective  # noqa: E402  (needs the engine imported above)

__all__ += ["SmartObjective"]

from .sklearn import SmartClassifier, SmartRanker, SmartRegressor  # noqa: E402

__all__ += ["SmartClassifier", "SmartRanker", "SmartRegressor"]
