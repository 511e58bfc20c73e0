"""Model-string surgery: split a model text, read tree bodies and leaf values, fold the initial
score into the first trees, assemble the stock model of the engine's trees."""

from __future__ import annotations

import ctypes
import json
import re

import numpy as np
from lightgbm import basic as _basic

from ._capi import _LIB, _check

_TREE_SPLIT = re.compile(r"^Tree=\d+\n", re.MULTILINE)


def split_model_string(model: str) -> tuple[str, list[str], str]:
    """Split a model string into (header, tree bodies, parameters section)."""
    head, found, rest = model.partition("\nTree=0\n")
    if found:
        trees_part, _, tail = ("Tree=0\n" + rest).partition("end of trees\n")
        bodies = [b for b in _TREE_SPLIT.split(trees_part) if b]
    else:  # a model without trees
        head, _, tail = model.partition("\nend of trees\n")
        bodies = []
    header = "\n".join(line for line in head.split("\n") if not line.startswith("tree_sizes="))
    params_start = tail.find("parameters:\n")
    parameters = tail[params_start:] if params_start >= 0 else ""
    return header.rstrip("\n") + "\n", bodies, parameters


def tree_bodies(model: str) -> list[str]:
    """The tree bodies of a model string, as :func:`split_model_string` gives them, without
    taking the header and parameters apart (the engine needs only the trees per iteration)."""
    bodies = []
    pos = model.index("\nTree=0\n") + 1  # at a "Tree=i" line
    end = model.index("\nend of trees\n", pos) + 1
    while pos < end:
        start = model.index("\n", pos) + 1
        pos = model.find("\nTree=", start, end) + 1 or end
        bodies.append(model[start:pos])
    return bodies


def leaf_values_of(tree_text: str) -> np.ndarray:
    """Leaf outputs of a tree body; LightGBM writes them with round-trip precision."""
    start = tree_text.index("leaf_value=") + len("leaf_value=")
    return np.array(tree_text[start:tree_text.index("\n", start)].split(" "), dtype=np.float64)


def tree_shrinkage(tree_text: str) -> float:
    """The ``shrinkage=`` a tree body was written with (the learning rate its leaf values carry)."""
    start = tree_text.index("\nshrinkage=") + len("\nshrinkage=")
    end = tree_text.find("\n", start)
    return float(tree_text[start:] if end < 0 else tree_text[start:end])


def with_leaf_values(tree_text: str, values: np.ndarray) -> str:
    """A tree body with its ``leaf_value`` line replaced by ``values`` (round-trip exact);
    every other line, the internal nodes' values and counts included, is kept."""
    start = tree_text.index("leaf_value=") + len("leaf_value=")
    end = tree_text.index("\n", start)
    if len(tree_text[start:end].split(" ")) != values.shape[0]:
        raise ValueError(f"a tree with {len(tree_text[start:end].split(' '))} leaves got {values.shape[0]} values")
    return f"{tree_text[:start]}{_format_values(values)}{tree_text[end:]}"


def _format_values(values: np.ndarray) -> str:
    # repr() of a Python float is the shortest string that parses back to the same double.
    return " ".join(repr(float(v)) for v in values)


def exact_internal_values(handle: ctypes.c_void_p, num_trees: int,
                          start_iteration: int = 0) -> list[np.ndarray | None]:
    """Each tree's internal node values at full double precision (the first ``num_trees``
    trees from iteration ``start_iteration`` on).

    The model text writes ``internal_value`` with six significant digits; the JSON dump
    writes them with 17 (``Tree::ToJSON``).  Folding a bias into the rounded values would
    round differently from stock LightGBM, which adds the bias to the doubles.
    """
    size = ctypes.c_int64(0)
    buf = ctypes.create_string_buffer(1 << 16)
    for _ in range(2):
        _check(_LIB.LGBM_BoosterDumpModel(handle, ctypes.c_int(start_iteration), ctypes.c_int(-1), ctypes.c_int(0),
                                          ctypes.c_int64(len(buf)), ctypes.byref(size), buf))
        if size.value <= len(buf):
            break
        buf = ctypes.create_string_buffer(size.value)
    out: list[np.ndarray | None] = []
    try:
        trees = json.loads(buf.value.decode("utf-8"))["tree_info"][:num_trees]
    except ValueError:  # a non-finite value, which JSON cannot hold: keep the text's values
        return [None] * num_trees
    for tree in trees:
        values: dict[int, float] = {}
        stack = [tree["tree_structure"]]
        while stack:
            node = stack.pop()
            if "split_index" in node:
                values[node["split_index"]] = float(node["internal_value"])
                stack += [node["left_child"], node["right_child"]]
        out.append(np.array([values[i] for i in range(len(values))], dtype=np.float64))
    return out


def fold_bias(tree_text: str, bias: float, internal_values: np.ndarray | None = None) -> tuple[str, np.ndarray]:
    """Add a constant to a tree's outputs as LightGBM's ``Tree::AddBias`` does.

    Returns the new tree body and its new leaf values.  Leaf and internal values get
    ``bias`` added (values within 1e-35 of zero become zero, LightGBM's
    ``MaybeRoundToZero``) and shrinkage becomes 1, so a model with the initial score
    folded into its first tree is the model stock LightGBM writes.  ``internal_values``
    (:func:`exact_internal_values`) replace the text's six-digit ones when given.
    """

    def shift(values: np.ndarray) -> np.ndarray:
        out = values + bias
        out[np.abs(out) <= 1e-35] = 0.0
        return out

    lines = tree_text.split("\n")
    new_leaf_values = None
    for i, line in enumerate(lines):
        key, sep, rest = line.partition("=")
        if not sep:
            continue
        if key == "leaf_value":
            new_leaf_values = shift(np.array(rest.split(" "), dtype=np.float64))
            lines[i] = f"leaf_value={_format_values(new_leaf_values)}"
        elif key == "internal_value" and rest:
            values = np.array(rest.split(" "), dtype=np.float64)
            if internal_values is not None and internal_values.shape == values.shape:
                values = internal_values.copy()
            lines[i] = f"internal_value={_format_values(shift(values))}"
        elif key == "shrinkage":
            lines[i] = "shrinkage=1"
    if new_leaf_values is None:
        raise ValueError("a tree's text has no leaf_value line")
    return "\n".join(lines), new_leaf_values


def set_parameter_line(parameters: str, key: str, value: str) -> str:
    """A ``parameters:`` section with the line ``[key: ...]`` set to ``value``."""
    return re.sub(rf"^\[{re.escape(key)}: [^\]]*\]$", f"[{key}: {value}]", parameters, count=1, flags=re.MULTILINE)


#: The ``parameters:`` line that says what smart_lgbm chose: ``[smart_lgbm NOTE: ]``.  LightGBM
#: keeps the section verbatim when it loads and saves a model, and its reader of the section
#: (``GBDT::GetLoadedParam``, behind ``Booster.params``) passes over a line with an empty value
#: before it looks the name up, so the note loads without the warning an unknown parameter
#: gets: the name carries the text, without ``:``, brackets or line breaks.
_NOTE_START = "[smart_lgbm "
_NOTE_END = ": ]"
_NOTE_SPELLING = str.maketrans({":": ";", "[": "(", "]": ")", "\n": " ", "\r": " "})


def with_model_note(text: str, note: str) -> str:
    """A model string, or its ``parameters:`` section, with the line ``[smart_lgbm NOTE: ]``
    first in the section (replacing an earlier note)."""
    note = note.translate(_NOTE_SPELLING)
    text = without_model_note(text)
    head, found, tail = text.partition("parameters:\n")
    if not found:
        raise ValueError("the model string has no parameters: section")
    return f"{head}{found}{_NOTE_START}{note}{_NOTE_END}\n{tail}"


def without_model_note(text: str) -> str:
    """``text`` without its ``[smart_lgbm ...: ]`` line, if any."""
    return re.sub(rf"^{re.escape(_NOTE_START)}[^\n]*{re.escape(_NOTE_END)}\n", "", text, count=1, flags=re.MULTILINE)


def model_note(text: str) -> str | None:
    """The note :func:`with_model_note` wrote into a model string, or None."""
    found = re.search(rf"^{re.escape(_NOTE_START)}([^\n]*){re.escape(_NOTE_END)}$", text, flags=re.MULTILINE)
    return None if found is None else found.group(1)


def assemble_model_string(
    header: str,
    trees: list[str],
    objective_line: str | None,
    parameters: str,
    num_class: int,
    pandas_categorical: list | None,
    metric: list[str] | None = None,
) -> str:
    """One LightGBM model string from a header and the engine's tree bodies.

    The header of a custom-objective Booster carries no ``objective=`` line; the stock
    objective's line is inserted so that ``predict`` applies the same transformation as
    for a model stock LightGBM trained.  ``tree_sizes`` is recomputed for the renumbered
    trees, and the ``parameters`` section gets the stock objective too (and ``metric``, the
    run's metric names, if given).
    """
    lines = [line for line in header.rstrip("\n").split("\n") if not line.startswith("objective=")]
    out_header = []
    for line in lines:
        if line.startswith("num_class="):
            line = f"num_class={num_class}"
        elif line.startswith("num_tree_per_iteration="):
            line = f"num_tree_per_iteration={num_class}"
        out_header.append(line)
        if line.startswith("max_feature_idx=") and objective_line:
            out_header.append(f"objective={objective_line}")
    # One join over the tree bodies themselves: the model text is built once, beside the
    # trees, with no intermediate copy of all trees (each would be as large as the model;
    # at the end of a run the copies made the process's peak memory).
    heads = [f"Tree={i}\n" for i in range(len(trees))]
    sizes = " ".join(str(len(head) + _utf8_length(body)) for head, body in zip(heads, trees, strict=True))
    if objective_line:
        parameters = set_parameter_line(parameters, "objective", objective_line.split(" ")[0])
    if metric is not None:
        parameters = set_parameter_line(parameters, "metric", ",".join(metric))
    pieces = ["\n".join(out_header), f"\ntree_sizes={sizes}\n\n"]
    for head, body in zip(heads, trees, strict=True):
        pieces += (head, body)
    pieces.append("end of trees\n")
    if parameters:
        pieces += ("\n", parameters)
    if pandas_categorical is not None:
        pieces.append(_basic._dump_pandas_categorical(pandas_categorical))
    return "".join(pieces)


def _utf8_length(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (LightGBM's ``tree_sizes`` count bytes), without encoding
    the usual all-ASCII tree body."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def model_with_objective(model: str, objective_line: str, num_class: int, bias: np.ndarray | None,
                         pandas_categorical: list | None) -> str:
    """A custom-objective model string rewritten as the stock objective's model.

    The ``objective=`` line (and the parameters' ``[objective: ...]``) makes ``predict``
    apply the stock objective's transformation; ``bias`` (one constant per model of an
    iteration, the initial score the run started from) is folded into the first
    iteration's trees as stock LightGBM folds its ``boost_from_average`` score.
    """
    header, trees, parameters = split_model_string(model)
    # the parameters section ends the model text; a pandas_categorical line after it is re-added by assembly
    parameters = parameters.split("\npandas_categorical:", 1)[0].rstrip("\n") + "\n" if parameters else parameters
    if bias is not None:
        if len(trees) < num_class:
            raise ValueError("the model has no trees to fold the initial score into")
        trees = [fold_bias(t, float(b))[0] if i < num_class else t
                 for i, (t, b) in enumerate(zip(trees, [*bias, *[0.0] * (len(trees) - num_class)], strict=True))]
    return assemble_model_string(header, trees, objective_line, parameters, num_class, pandas_categorical)
