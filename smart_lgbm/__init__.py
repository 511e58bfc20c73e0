"""smart-lgbm: SMART importance-sampled gradient boosting on stock LightGBM.

``smart_lgbm.train`` is a drop-in for ``lightgbm.train`` whose tree learner sees only a
sampled subset of rows per iteration, with importance-reweighted gradients.

Importing the package defines names only; its one check raises ``ImportError`` for a
LightGBM outside the supported range, before anything relies on LightGBM internals.
numba's kernels load when a training first needs them.
"""

from . import _lightgbm

_lightgbm.check_version()

from ._numba import kernel_cache as _kernel_cache  # noqa: E402

# (before any kernel module: the package's kernels save their numba cache entries under a
# lock between processes, and compile without the cache where none can be written)
_kernel_cache.install()

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
from .objective import SmartObjective  # noqa: E402
from .samplers import (  # noqa: E402
    MVS,
    AdaptiveRate,
    Auto,
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
from .sklearn import SmartClassifier, SmartRanker, SmartRegressor  # noqa: E402
from ._warmup import warmup  # noqa: E402

__all__ = [
    "MVS",
    "AdaptiveRate",
    "Auto",
    "FirstOrder",
    "Full",
    "IterationNotSplitWarning",
    "LossBased",
    "NoCacheWarning",
    "NoMoreSplitsWarning",
    "ProbabilitySampler",
    "Sample",
    "Sampler",
    "SamplingState",
    "SecondOrder",
    "SlowPathWarning",
    "SmartClassifier",
    "SmartLGBMWarning",
    "SmartObjective",
    "SmartRanker",
    "SmartRegressor",
    "Uniform",
    "WeightTrimming",
    "__version__",
    "make_sampler",
    "record_sampling",
    "train",
    "warmup",
]
