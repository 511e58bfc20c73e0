"""The warnings smart-lgbm issues itself, as classes, so that callers filter them by type.

``warnings.filterwarnings("ignore", category=smart_lgbm.IterationNotSplitWarning)`` silences
the iterations that could not split; ``category=smart_lgbm.SmartLGBMWarning`` every warning
of the package.  All are ``UserWarning`` subclasses, so filters on ``UserWarning`` still
catch them.
"""

from __future__ import annotations

__all__ = ["IterationNotSplitWarning", "NoCacheWarning", "NoMoreSplitsWarning", "SlowPathWarning", "SmartLGBMWarning"]


class SmartLGBMWarning(UserWarning):
    """Base class of the warnings smart-lgbm issues itself."""


class IterationNotSplitWarning(SmartLGBMWarning):
    """An iteration's trees could not split (no leaf met ``min_data_in_leaf``,
    ``min_gain_to_split``, ...): it added no tree.  Issued once per such iteration; with a
    random sampler training goes on with the next sample, as LightGBM's bagging does."""


class NoMoreSplitsWarning(IterationNotSplitWarning):
    """An iteration could not split and training stopped there: the sampler and the trees
    draw nothing at random, so every later iteration would repeat it (LightGBM's "no more
    leaves that meet the split requirements")."""


class SlowPathWarning(SmartLGBMWarning):
    """A set's scores are updated through LightGBM's binned predictor, which is slower than
    the engine's walk: its raw features are not in memory (a Dataset built from a file, or
    constructed with ``free_raw_data=True``).  Issued once per run; the models are the same
    either way."""


class NoCacheWarning(SmartLGBMWarning):
    """numba can write its on-disk cache nowhere for the package's compiled kernels (a
    read-only install whose user cache folder cannot be written either, e.g. HOME=/ in a
    container): they are compiled in every process, which costs seconds at the first use of
    each.  Issued once per process; set ``NUMBA_CACHE_DIR`` to a writable folder to keep them."""
