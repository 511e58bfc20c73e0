"""Losses: one protocol (:class:`Loss`), LightGBM's objectives, and user-defined losses."""

from .base import Loss, Target
from .binary import BinaryLogloss
from .cross_entropy import CrossEntropy
from .custom import CustomLoss
from .multiclass import MulticlassSoftmax
from .regression import Huber, SquaredError


def __getattr__(name: str):  # LambdaRank imports numba: load it on first use only
    if name == "LambdaRank":
        from .lambdarank import LambdaRank

        return LambdaRank
    raise AttributeError(name)


__all__ = ["BinaryLogloss", "CrossEntropy", "CustomLoss", "Huber", "LambdaRank", "Loss", "MulticlassSoftmax", "SquaredError",
           "Target"]
