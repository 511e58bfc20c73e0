"""Reading one value of a comparison config: the config errors and the typed readers.

Every reader takes the table, the key and ``where`` (the table's name, e.g.
``"[experiments.a9a]"``), and raises a :class:`ConfigError` (:class:`ConfigTypeError` for a
value of the wrong type, :class:`ConfigFileError` for a missing file) whose message names the
table and the key.  :mod:`.config` builds the whole config from them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["ConfigError", "ConfigFileError", "ConfigTypeError", "check_name", "error_text"]

NUMBER = (int, float)


class ConfigError(ValueError):
    """A config value is invalid; the message names the table and the key."""


class ConfigTypeError(ConfigError, TypeError):
    """A config value has the wrong type; the message names the table and the key."""


class ConfigFileError(ConfigError, FileNotFoundError):
    """A file named in a config does not exist; the message names the key."""


def error_text(exc: BaseException) -> str:
    """An exception's message as one line for ``smart-lgbm: error: ...``.

    Newlines are folded (file readers and LightGBM end messages with them) and LightGBM's
    C++ source location (`` at .../config_auto.cpp, line 344 .``) is dropped.
    """
    text = re.sub(r"\s+at \S+\.(?:cpp|hpp|h), line \d+\s*\.?", "", str(exc))
    return " ".join(text.split()) or type(exc).__name__


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "list", dict: "table"}.get(
        type(value), type(value).__name__
    )


def _check_keys(table: Mapping[str, Any], accepted: tuple[str, ...] | list[str], where: str) -> None:
    for key in table:
        if key not in accepted:
            raise ConfigError(f"{where} unknown key {key!r}; accepted: {', '.join(sorted(accepted))}")


def _typed(table: Mapping[str, Any], key: str, types: tuple[type, ...], where: str, what: str) -> Any:
    value = table[key]
    # TOML booleans are Python ints; never accept one where a number is meant.
    if isinstance(value, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        raise ConfigTypeError(f"{where} key {key!r} must be {what}, got {_type_name(value)} {value!r}")
    return value


#: The largest integer LightGBM takes (its parameters are C ints): rounds, seeds, parameters.
INT_MAX = 2**31 - 1


def _int(table: Mapping[str, Any], key: str, where: str, minimum: int, default: Any = None,
         maximum: int | None = None) -> Any:
    if key not in table:
        return default
    value = _typed(table, key, (int,), where, f"an integer >= {minimum}")
    if value < minimum:
        raise ConfigError(f"{where} key {key!r} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{where} key {key!r} must be an integer <= {maximum} (what LightGBM can count), "
                          f"got {value!r}")
    return value


def _fraction(table: Mapping[str, Any], key: str, where: str, default: float) -> float:
    if key not in table:
        return default
    value = float(_typed(table, key, NUMBER, where, "a number in (0, 1)"))
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{where} key {key!r} must be in (0, 1), got {value!r}")
    return value


def _str(table: Mapping[str, Any], key: str, where: str, choices: tuple[str, ...] | None = None,
         default: Any = None) -> Any:
    if key not in table:
        if default is None and choices is not None:
            raise ConfigError(f"{where} missing key {key!r}; accepted values: {', '.join(choices)}")
        return default
    value = _typed(table, key, (str,), where, "a string")
    if choices is not None and value not in choices:
        raise ConfigError(f"{where} key {key!r} is {value!r}; accepted values: {', '.join(choices)}")
    return value


def _seeds(table: Mapping[str, Any], where: str) -> tuple[int, ...] | None:
    if "seeds" not in table:
        return None
    value = table["seeds"]
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value or any(
        isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in value
    ):
        raise ConfigTypeError(f"{where} key 'seeds' must be a non-empty list of integers >= 0, got {value!r}")
    if any(s > INT_MAX for s in value):
        raise ConfigError(f"{where} key 'seeds' must hold integers <= {INT_MAX} (LightGBM's seeds are C ints), "
                          f"got {value!r}")
    if len(set(value)) != len(value):
        raise ConfigError(f"{where} key 'seeds' repeats a seed: {value!r}")
    return tuple(value)


def _path(table: Mapping[str, Any], key: str, where: str, base: Path, must_exist: bool = True) -> Path | None:
    if key not in table:
        return None
    value = _typed(table, key, (str,), where, "a path string")
    path = Path(os.path.expanduser(value))
    path = Path(os.path.normpath(path if path.is_absolute() else base / path))
    if must_exist and not path.exists():
        raise ConfigFileError(f"{where} key {key!r}: file not found: {path}")
    return path


#: Names that become file or folder names: no path separators, no leading dot ("." and
#: ".." would leave the output folder, ".x" would hide the files), at most 100 characters.
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")


def check_name(name: str, what: str, names: str, taken: list[str]) -> None:
    """Refuse a name used as a path that could leave the output folder or collide with ``taken``.

    Parameters
    ----------
    name : str
        The experiment name or method label.
    what : str
        How the message refers to it, e.g. ``"[experiments.x] key 'name'"``.
    names : str
        What the name becomes on disk, for the message.
    taken : list of str
        Names already in use; a name equal to one of them ignoring case is refused too,
        because it would share files on case-insensitive file systems.
    """
    if not _NAME.fullmatch(name):
        raise ConfigError(f"{what} is {name!r}: it names {names}, so it must be 1-100 letters, digits, "
                          "'_', '.' or '-', not starting with '.'")
    clash = [t for t in taken if t.casefold() == name.casefold()]
    if clash:
        raise ConfigError(f"{what} is {name!r}, which repeats {clash[0]!r} (names are compared ignoring case: "
                          f"they name {names})")
