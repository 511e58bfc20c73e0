"""Every row's output of each new tree: compiled walks over the caller's features.

The engine adds each new tree's output to the tracked score of every training and
validation row, exactly what ``Booster.predict(raw_score=True)`` adds:

* :mod:`.raw`: the caller's raw features as the walk reads them (by reference where the
  layout allows);
* :mod:`.codes`: the same features coded once per run as their positions among LightGBM's
  bin bounds, one byte per value (the fast path for dense data);
* :mod:`.forest`: an iteration's trees flattened for the kernels, and the walk over raw
  features (:func:`.codes.add_coded_outputs` walks the codes);
* :mod:`._kernels`: the numba kernels.
"""

from .codes import BinCodes, CodeBook, CodedForest, add_coded_outputs
from .forest import Forest, add_outputs
from .raw import RawFeatures

__all__ = ["BinCodes", "CodeBook", "CodedForest", "Forest", "RawFeatures", "add_coded_outputs", "add_outputs"]
