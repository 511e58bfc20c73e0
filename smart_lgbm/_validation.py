"""Declarative parameter constraints, in the style of scikit-learn's ``Interval``/``StrOptions``.

A :class:`Param` names one constructor or config parameter, the values it accepts (a tuple of
constraints: any one may accept a value), its default and a one-line doc.  The samplers check
their arguments with it, and the comparison configs derive their schema from the same
objects, so a parameter's range, its error messages and its documentation have one source.

Errors name the parameter and every accepted kind of value:

* ``TypeError`` when no constraint takes a value of that type (``rate="fast"``, ``alpha=True``);
* ``ValueError`` when one does but the value is out of its range (``rate=1.5``, ``rho=nan``).

Checks run once, at construction: nothing here is on a per-iteration path.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Boolean", "Constraint", "InstanceOf", "Interval", "NoneValue", "Options", "Param", "describe_value", "join_or"]


class Constraint:
    """One kind of accepted value.  Subclasses say whether a value has the right type
    (:meth:`type_ok`), whether it is accepted (:meth:`accepts`), how it is stored
    (:meth:`convert`) and how messages describe it (``str()``)."""

    #: Whether a TOML config can write such a value (a number or a string, not an object).
    in_toml: bool = True

    def type_ok(self, value: Any) -> bool:
        raise NotImplementedError

    def accepts(self, value: Any) -> bool:
        return self.type_ok(value)

    def convert(self, value: Any) -> Any:
        return value


def _is_real(value: Any) -> bool:
    # numbers.Real covers int, float and numpy's scalars; a bool is a number to Python,
    # never to a parameter here (True would silently mean 1)
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclass(frozen=True)
class Interval(Constraint):
    """Numbers (``numbers.Real``, stored as float) or integers (``numbers.Integral``, stored
    as int) between ``left`` and ``right`` (None: unbounded), ``closed`` at ``"left"``,
    ``"right"``, ``"both"`` or ``"neither"`` end.  Real values must be finite."""

    kind: type
    left: float | None
    right: float | None
    closed: str = "both"

    def __post_init__(self) -> None:
        if self.kind not in (numbers.Real, numbers.Integral):
            raise ValueError(f"Interval kind must be numbers.Real or numbers.Integral, got {self.kind!r}")
        if self.closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"Interval closed must be 'left', 'right', 'both' or 'neither', got {self.closed!r}")

    def type_ok(self, value: Any) -> bool:
        if self.kind is numbers.Integral:
            return isinstance(value, numbers.Integral) and not isinstance(value, bool)
        return _is_real(value)

    def accepts(self, value: Any) -> bool:
        if not self.type_ok(value):
            return False
        v = float(value)
        if not math.isfinite(v):
            return False
        if self.left is not None and (v < self.left or (v == self.left and self.closed in ("right", "neither"))):
            return False
        if self.right is not None and (v > self.right or (v == self.right and self.closed in ("left", "neither"))):
            return False
        return True

    def convert(self, value: Any) -> Any:
        return int(value) if self.kind is numbers.Integral else float(value)

    def __str__(self) -> str:
        what = "an integer" if self.kind is numbers.Integral else "a number"
        lo_in, hi_in = self.closed in ("left", "both"), self.closed in ("right", "both")
        if self.left is not None and self.right is not None:
            return f"{what} in {'[' if lo_in else '('}{_num(self.left)}, {_num(self.right)}{']' if hi_in else ')'}"
        if self.kind is numbers.Real:
            what = "a finite number"  # an open end: inf would pass the comparison
        if self.left is not None:
            return f"{what} {'>=' if lo_in else '>'} {_num(self.left)}"
        if self.right is not None:
            return f"{what} {'<=' if hi_in else '<'} {_num(self.right)}"
        return what


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True)
class Options(Constraint):
    """One of a few fixed values (strings such as ``"auto"``).  Any other string is the wrong
    type of value (TypeError), as a number would be."""

    values: tuple[Any, ...]

    def type_ok(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values

    def __str__(self) -> str:
        return join_or([f'"{v}"' for v in self.values])


@dataclass(frozen=True)
class InstanceOf(Constraint):
    """An instance of ``cls`` (e.g. :class:`smart_lgbm.AdaptiveRate`), taken as is."""

    cls: type
    in_toml = False

    def type_ok(self, value: Any) -> bool:
        return isinstance(value, self.cls)

    def __str__(self) -> str:
        name = self.cls.__name__
        return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


@dataclass(frozen=True)
class Boolean(Constraint):
    """``True`` or ``False`` (numpy's bool too; not 0 or 1, which mean a number elsewhere)."""

    def type_ok(self, value: Any) -> bool:
        return isinstance(value, (bool, np.bool_))

    def convert(self, value: Any) -> Any:
        return bool(value)

    def __str__(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class NoneValue(Constraint):
    """``None`` (a parameter that is optional or can be switched off)."""

    def type_ok(self, value: Any) -> bool:
        return value is None

    def __str__(self) -> str:
        return "None"


def join_or(items: list[str]) -> str:
    """``"a"``, ``"a or b"``, ``"a, b or c"``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def describe_value(value: Any) -> str:
    """A value with its kind for messages about its type: ``string 'fast'``, ``boolean True``."""
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "table"}.get(
        type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} {text if len(text) <= 80 else text[:77] + '...'}"


@dataclass(frozen=True)
class Param:
    """A parameter: its name, the values it accepts, its default and a one-line doc.

    Parameters
    ----------
    name : str
        The keyword argument (and config key).
    constraints : tuple of Constraint
        A value is accepted when any one of them accepts it; the first that does converts it.
    default : object
        The constructor's default (constructors take it from here).
    doc : str
        One line for messages and generated documentation.
    convert : callable, optional
        Applied to an accepted value after its constraint's own conversion (e.g. ``"auto"``
        to an :class:`smart_lgbm.AdaptiveRate`).
    none_in_toml : str, optional
        How a TOML config writes ``None`` for this parameter (TOML has no null), e.g.
        ``"off"``; without it a config cannot give ``None`` (it omits the key instead).
    """

    name: str
    constraints: tuple[Constraint, ...]
    default: Any
    doc: str
    convert: Callable[[Any], Any] | None = field(default=None, compare=False)
    none_in_toml: str | None = None

    @property
    def accepted(self) -> str:
        """What the parameter accepts, in words: ``a number in (0, 1], "auto" or an AdaptiveRate``."""
        return join_or([str(c) for c in self.constraints])

    def check(self, value: Any, owner: str | None = None, label: str | None = None) -> Any:
        """``value`` converted for storage, or TypeError/ValueError naming the parameter.

        ``owner`` prefixes the message (``"FirstOrder: rate must be ..."``); ``label``
        replaces the parameter's name in it (``"key 'rate'"`` in a config).
        """
        prefix = f"{owner}: " if owner else ""
        subject = label or self.name
        for constraint in self.constraints:
            if constraint.accepts(value):
                try:  # a structured value (a table of parameters) is checked by its conversion
                    out = constraint.convert(value)
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"{prefix}{subject}: {exc}") from None
                return self.convert(out) if self.convert is not None else out
        if any(c.type_ok(value) for c in self.constraints):
            raise ValueError(f"{prefix}{subject} must be {self.accepted}, got {value!r}")
        raise TypeError(f"{prefix}{subject} must be {self.accepted}, got {describe_value(value)}")

    def toml(self) -> Param:
        """This parameter as a TOML config writes it: no object values, and ``None`` only as
        :attr:`none_in_toml` (still converted to ``None`` by :meth:`from_toml`)."""
        constraints: list[Constraint] = []
        for c in self.constraints:
            if isinstance(c, NoneValue):
                if self.none_in_toml is not None:
                    constraints.append(Options((self.none_in_toml,)))
            elif c.in_toml:
                constraints.append(c)
        return Param(self.name, tuple(constraints), self.default, self.doc)

    def from_toml(self, value: Any) -> Any:
        """A config value as the constructor takes it (``none_in_toml`` becomes None)."""
        return None if self.none_in_toml is not None and value == self.none_in_toml else value
