"""Numba kernel of :mod:`smart_lgbm._lightgbm.tree_text`'s fast path: one scan of a tree body's bytes.

The engine reads every iteration's tree(s) from LightGBM's model text.  Read field by field in
Python and numpy (a dict of lines, then a parse, a count and two range reductions per integer
field) that cost tens of microseconds per tree, a visible share of an iteration on small data
(a9a: about 1.5 ms an iteration).  :func:`scan_plain_tree` reads the body in one pass instead,
in the exact form LightGBM writes it: ``key=value`` lines up to the first empty line,
integers as ``-?[0-9]+``, decimal numbers as ``-?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)?``, values
separated by single spaces.  It parses the integer fields itself and checks the decimal ones'
form and counts, leaving their conversion to numpy's correctly rounded reader (the same
double Python's ``float`` gives, which :func:`smart_lgbm._lightgbm.parse_tree` documents).

Anything outside that form (a ``\\r``, a repeated key, a missing line, a categorical or
linear or one-leaf tree, ``inf``/``nan``, a value out of range...) makes it answer False,
and the caller then reads the body the general way, which gives the same arrays or the
same error as before: the fast path only ever answers for bodies whose reading is plain.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: The keys the scan looks for, in this order (their index is the key's number).
KEYS = (b"num_leaves", b"num_cat", b"split_feature", b"threshold", b"decision_type", b"left_child",
        b"right_child", b"leaf_value", b"is_linear")
NUM_LEAVES, NUM_CAT, SPLIT_FEATURE, THRESHOLD, DECISION_TYPE, LEFT_CHILD, RIGHT_CHILD, LEAF_VALUE, IS_LINEAR = range(9)
#: Length of the ``info`` array :func:`scan_plain_tree` fills.
INFO_SIZE = 2 * len(KEYS) + 1

_SPACE, _MINUS, _PLUS, _DOT, _EQUALS, _NEWLINE, _CR = 32, 45, 43, 46, 61, 10, 13
_ZERO, _NINE, _LOWER_E, _UPPER_E = 48, 57, 101, 69
#: Digits an integer may have (int64 holds any 18-digit number).
_MAX_DIGITS = 18


def key_table() -> tuple[np.ndarray, np.ndarray]:
    """:data:`KEYS` as the kernel takes them: a zero-padded uint8 table and the lengths."""
    width = max(len(k) for k in KEYS)
    table = np.zeros((len(KEYS), width), dtype=np.uint8)
    for i, key in enumerate(KEYS):
        table[i, :len(key)] = np.frombuffer(key, dtype=np.uint8)
    return table, np.array([len(k) for k in KEYS], dtype=np.int64)


@njit(cache=True, inline="always")
def _digits(buf, i, end):
    """Position after the run of decimal digits from ``i``."""
    while i < end and _ZERO <= buf[i] <= _NINE:
        i += 1
    return i


@njit(cache=True, inline="always")
def _value_start(buf, i, end, j):
    """Where value ``j`` of a field starts, past its separating space (values after the
    first) and its minus sign: ``(position, negative)``, position -1 when no space is there."""
    if j > 0:
        if i >= end or buf[i] != _SPACE:
            return -1, False
        i += 1
    negative = i < end and buf[i] == _MINUS
    return (i + 1 if negative else i), negative


@njit(cache=True)
def _integers(buf, start, end, size, low, high, out, offset):
    """Exactly ``size`` plain integers in ``[low, high]`` from ``buf[start:end]`` into
    ``out[offset:offset + size]``; False when the field is not in that form."""
    i = start
    for j in range(size):
        i, negative = _value_start(buf, i, end, j)
        if i < 0:
            return False
        stop = _digits(buf, i, end)
        if stop == i or stop - i > _MAX_DIGITS:
            return False
        value = np.int64(0)
        for p in range(i, stop):
            value = value * 10 + np.int64(buf[p] - _ZERO)
        if negative:
            value = -value
        if value < low or value > high:
            return False
        out[offset + j] = value
        i = stop
    return i == end


@njit(cache=True)
def _decimals(buf, start, end, size):
    """Whether ``buf[start:end]`` holds exactly ``size`` plain decimal numbers."""
    i = start
    for j in range(size):
        i, _ = _value_start(buf, i, end, j)
        if i < 0:
            return False
        stop = _digits(buf, i, end)
        if stop == i:
            return False
        i = stop
        if i < end and buf[i] == _DOT:
            stop = _digits(buf, i + 1, end)
            if stop == i + 1:
                return False
            i = stop
        if i < end and (buf[i] == _LOWER_E or buf[i] == _UPPER_E):
            i += 1
            if i < end and (buf[i] == _PLUS or buf[i] == _MINUS):
                i += 1
            stop = _digits(buf, i, end)
            if stop == i:
                return False
            i = stop
    return i == end


@njit(cache=True)
def scan_plain_tree(buf, keys, key_lengths, ints, info):
    """Scan a tree body (ASCII bytes) written as LightGBM writes a numerical tree of at least
    two leaves; True when it is one.

    Written when True: ``info[0]`` the number of leaves ``L``; ``info[1 + 2 * key]`` and
    ``info[2 + 2 * key]`` the value span of each key of :data:`KEYS` (-1 when absent);
    ``ints[0:L-1]``, ``ints[L-1:2L-2]``, ``ints[2L-2:3L-3]`` and ``ints[3L-3:4L-4]``
    ``split_feature`` (int32 range), ``decision_type`` (int8 range), ``left_child`` and
    ``right_child`` (int32 range).  ``ints`` needs ``4 * (L - 1)`` entries: half the body's
    length always suffices.  The ``threshold`` (``L - 1``) and ``leaf_value`` (``L``) spans
    are checked to hold that many plain decimal numbers.
    """
    num_keys = keys.shape[0]
    for k in range(2 * num_keys):
        info[1 + k] = -1
    n = buf.shape[0]
    pos = 0
    while pos < n:
        end = pos
        while end < n and buf[end] != _NEWLINE:
            end += 1
        if end == pos:
            break  # LightGBM reads up to the first empty line
        if buf[end - 1] == _CR:
            return False
        eq = pos
        while eq < end and buf[eq] != _EQUALS:
            eq += 1
        if eq == end:
            return False
        for k in range(num_keys):
            length = key_lengths[k]
            if eq - pos != length:
                continue
            same = True
            for p in range(length):
                if buf[pos + p] != keys[k, p]:
                    same = False
                    break
            if same:
                if info[1 + 2 * k] >= 0:
                    return False  # a repeated key: the general reading takes the last
                info[1 + 2 * k] = eq + 1
                info[2 + 2 * k] = end
                break
        pos = end + 1
    for k in (NUM_LEAVES, NUM_CAT, SPLIT_FEATURE, THRESHOLD, DECISION_TYPE, LEFT_CHILD, RIGHT_CHILD, LEAF_VALUE):
        if info[1 + 2 * k] < 0:
            return False
    # num_leaves >= 2, num_cat == 0, is_linear absent or 0 (bounds as int64 variables, not
    # literals: numba would compile _integers once more for each literal combination)
    one, zero, two, int32_high = np.int64(1), np.int64(0), np.int64(2), np.int64(2147483647)
    if not _integers(buf, info[1 + 2 * NUM_LEAVES], info[2 + 2 * NUM_LEAVES], one, two, int32_high, ints, zero):
        return False
    num_leaves = ints[0]
    if not _integers(buf, info[1 + 2 * NUM_CAT], info[2 + 2 * NUM_CAT], one, zero, zero, ints, zero):
        return False
    linear = info[1 + 2 * IS_LINEAR]
    if linear >= 0 and not _integers(buf, linear, info[2 + 2 * IS_LINEAR], one, zero, zero, ints, zero):
        return False
    m = num_leaves - 1
    if 4 * m > ints.shape[0]:
        return False
    int32_low = np.int64(-2147483648)
    for slot, k, low, high in ((0, SPLIT_FEATURE, int32_low, int32_high), (1, DECISION_TYPE, -128, 127),
                               (2, LEFT_CHILD, int32_low, int32_high), (3, RIGHT_CHILD, int32_low, int32_high)):
        if not _integers(buf, info[1 + 2 * k], info[2 + 2 * k], m, low, high, ints, slot * m):
            return False
    if not _decimals(buf, info[1 + 2 * THRESHOLD], info[2 + 2 * THRESHOLD], m):
        return False
    if not _decimals(buf, info[1 + 2 * LEAF_VALUE], info[2 + 2 * LEAF_VALUE], num_leaves):
        return False
    info[0] = num_leaves
    return True
