"""Numba kernels behind :mod:`smart_lgbm._engine.walk`: the trees of one iteration walked over raw rows.

Private module: every function here trusts its inputs (validated by ``forest.py`` and
``raw.py``) and runs without bounds checks, so a bad index would corrupt memory
instead of raising.

A forest is a set of flat node arrays (see :class:`smart_lgbm._engine.walk.Forest`): internal
nodes and leaves share one index space, and a leaf is a node whose two children are
itself.  A row therefore takes exactly ``depth`` steps down a tree whatever leaf it
reaches, so a block of rows advances level by level in lockstep, with no per-row test
for "reached a leaf" and the block's feature values in cache.

Each step is ``Tree::NumericalDecision`` / ``Tree::CategoricalDecision`` of LightGBM
4.6 (``include/LightGBM/tree.h``) on the value LightGBM's predictor reads for that row
and feature (see :func:`_next_node` and the three kernels' docstrings for the layouts).

Every row's result depends on that row only: the kernels are deterministic whatever the
number of threads (no reductions across rows).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..._numba.row_kernel import row_kernel

#: LightGBM's ``kZeroThreshold`` (``const double kZeroThreshold = 1e-35f``): the float32
#: nearest 1e-35, widened to double.  Row functions drop values with ``|x|`` at most this.
K_ZERO_THRESHOLD = float(np.float32(1e-35))

#: ``decision_type`` bits (LightGBM's ``kCategoricalMask``, ``kDefaultLeftMask``) and
#: missing types (bits 2-3: ``MissingType::None``, ``Zero``, ``NaN``).
CATEGORICAL = 1
DEFAULT_LEFT = 2
MISSING_ZERO = 1
MISSING_NAN = 2

#: Just above INT_MAX: categorical values from here on are out of ``int`` range.
_INT_RANGE = 2147483648.0


@njit(cache=True, inline="always")
def _next_node(x, nd, threshold, flags, left, right, cat_start, cat_len, cat_bits):
    """The child of node ``nd`` that value ``x`` goes to (``Tree::Decision``)."""
    f = flags[nd]
    if f & CATEGORICAL:
        # static_cast<int>(x): NaN, or a negative int after truncation toward zero (x <=
        # -1; -1 < x < 0 truncates to category 0), goes right.  Beyond int range x86
        # gives INT_MIN (negative) and ARM saturates to INT_MAX, whose bitset word lies
        # past every bitset: right either way.
        if x > -1.0 and x < _INT_RANGE:
            c = np.int64(x)
            word = c >> 5
            if word < cat_len[nd] and (np.int64(cat_bits[cat_start[nd] + word]) >> (c & 31)) & 1:
                return left[nd]
        return right[nd]
    missing = (f >> 2) & 3
    if np.isnan(x):
        if missing == MISSING_NAN:
            return left[nd] if f & DEFAULT_LEFT else right[nd]
        x = 0.0
    if missing == MISSING_ZERO and x >= -K_ZERO_THRESHOLD and x <= K_ZERO_THRESHOLD:
        return left[nd] if f & DEFAULT_LEFT else right[nd]
    return left[nd] if x <= threshold[nd] else right[nd]


@njit(cache=True, inline="always")
def _walk_block(values, r0, m, zero_tiny, o0, column, forest, node, out, leaves, want_leaves):
    """Walk rows ``r0 .. r0 + m - 1`` of ``values`` down every tree; add to ``out[o0 + j]``.

    ``values[r, column[nd]]`` is the value node ``nd`` tests for row ``r``;
    ``zero_tiny`` reads ``|x| <= kZeroThreshold`` as 0 (LightGBM's dense and CSC row
    functions drop those values; its CSR row function keeps them).  ``forest`` is the
    tuple of node arrays :attr:`smart_lgbm._engine.walk.Forest.kernel_arrays` gives.
    """
    threshold, flags, left, right, cat_start, cat_len, cat_bits, node_value, node_leaf, roots, depths = forest
    for k in range(roots.shape[0]):
        root = roots[k]
        for j in range(m):
            node[j] = root
        for _ in range(depths[k]):
            for j in range(m):
                nd = node[j]
                x = np.float64(values[r0 + j, column[nd]])
                if zero_tiny and abs(x) <= K_ZERO_THRESHOLD:
                    x = 0.0
                node[j] = _next_node(x, nd, threshold, flags, left, right, cat_start, cat_len, cat_bits)
        for j in range(m):
            nd = node[j]
            out[o0 + j, k] += node_value[nd]
            if want_leaves:
                leaves[o0 + j, k] = node_leaf[nd]


#: :func:`flatten_tree`'s answers for trees the kernels must not see.
MALFORMED, NEGATIVE_FEATURE, BAD_BITSET = -1, -2, -3


@njit(cache=True)
def flatten_tree(split_feature, threshold, decision_type, left_child, right_child, leaf_value, num_cat,
                 cat_boundaries, base, cat_base, feature, thr, flags, left, right, cat_start, cat_len, node_value,
                 node_leaf, has_parent, leaf_seen, level, queue):
    """One tree's nodes in the forest's layout (see :class:`smart_lgbm._engine.walk.Forest`), node
    indices offset by ``base`` and bitset words by ``cat_base``, written into ``feature``,
    ``thr``, ``flags``, ``left``, ``right``, ``cat_start``, ``cat_len``, ``node_value``,
    ``node_leaf`` (``2 * m + 1`` entries, zeroed; ``m`` internal nodes); ``has_parent``,
    ``leaf_seen``, ``level`` and ``queue`` are zeroed scratch of ``m``, ``m + 1``, ``m`` and
    ``m`` entries.  The caller allocates them: allocated and returned here, the arrays
    tripled this kernel's compile time (it compiles in every fresh environment's first call).

    Returns the tree's ``depth``, negative when the tree must be refused:
    :data:`MALFORMED` (the children do not form one binary tree from node 0: every node but
    the root must have exactly one parent and be reachable), :data:`NEGATIVE_FEATURE`, or
    :data:`BAD_BITSET` (a categorical split whose bitset index is outside ``0..num_cat-1``).
    """
    m = left_child.shape[0]
    n_leaves = m + 1
    for j in range(n_leaves):
        nd = m + j
        left[nd] = base + nd
        right[nd] = base + nd
        node_value[nd] = leaf_value[j]
        node_leaf[nd] = j
    depth = 0
    if m > 0:
        for i in range(m):
            if split_feature[i] < 0:
                return NEGATIVE_FEATURE
            for side in range(2):
                c = left_child[i] if side == 0 else right_child[i]
                if c >= 0:
                    if c == 0 or c >= m or has_parent[c]:
                        return MALFORMED
                    has_parent[c] = True
                    target = base + c
                else:
                    leaf = -1 - c
                    if leaf >= n_leaves or leaf_seen[leaf]:
                        return MALFORMED
                    leaf_seen[leaf] = True
                    target = base + m + leaf
                if side == 0:
                    left[i] = target
                else:
                    right[i] = target
            f = np.uint8(decision_type[i] & 0b1111)
            if num_cat == 0:  # LightGBM takes every split of such a tree as numerical
                f &= ~np.uint8(CATEGORICAL)
            if f & CATEGORICAL:
                index = threshold[i]
                if not (index >= 0 and index < num_cat):
                    return BAD_BITSET
                b = np.int64(index)  # static_cast<int>
                cat_start[i] = cat_base + cat_boundaries[b]
                cat_len[i] = cat_boundaries[b + 1] - cat_boundaries[b]
            flags[i] = f
            feature[i] = split_feature[i]
            thr[i] = threshold[i]
        # depth: internal nodes on the longest path from the root, breadth first; with one
        # parent per node, all of them must be reachable (no cycle detached from the root)
        queue[0] = 0
        level[0] = 1
        head, tail = 0, 1
        while head < tail:
            nd = queue[head]
            head += 1
            depth = max(depth, level[nd])
            for side in range(2):
                c = left_child[nd] if side == 0 else right_child[nd]
                if c >= 0:
                    level[c] = level[nd] + 1
                    queue[tail] = c
                    tail += 1
        if tail != m:
            return MALFORMED
    return depth


@njit(cache=True, inline="always")
def _chunk_bounds(c, nchunks, nblocks):
    """Blocks ``[b0, b1)`` of chunk ``c``: each thread allocates its scratch once per
    chunk, not once per block."""
    return c * nblocks // nchunks, (c + 1) * nblocks // nchunks


@row_kernel(rows=0, axis=0)
def walk_dense(X, block, chunks, column, forest, out, leaves, want_leaves):
    """Dense rows, any memory layout: ``x = (double) X[i, f]``, ``|x| <= kZeroThreshold``
    read as 0 (``RowPairFunctionFromDenseMatric``)."""
    n = X.shape[0]
    nblocks = (n + block - 1) // block
    nchunks = min(nblocks, chunks)
    for c in prange(nchunks):
        b0, b1 = _chunk_bounds(c, nchunks, nblocks)
        node = np.empty(block, dtype=np.int32)
        for b in range(b0, b1):
            start = b * block
            _walk_block(X, start, min(block, n - start), True, start, column, forest, node, out, leaves,
                        want_leaves)


@njit(cache=True, inline="always")
def _scatter_csr(indptr, indices, data, slot_of_feature, start, m, buf, clear):
    """CSR rows (``RowFunctionFromCSR`` + ``CopyToPredictBuffer``): each row's stored
    entries are written in storage order into a zeroed buffer, so with duplicate column
    indices the last one wins, unsorted indices do not matter, explicit zeros read 0 and
    tiny values are kept as they are.  ``clear`` zeroes the same cells again."""
    for j in range(m):
        for p in range(indptr[start + j], indptr[start + j + 1]):
            s = slot_of_feature[indices[p]]
            if s >= 0:
                buf[j, s] = 0.0 if clear else data[p]


@njit(cache=True, inline="always")
def _lower_bound(a, lo, hi, value):
    """First position in ``a[lo:hi]`` (nondecreasing) holding ``>= value``, or ``hi``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _gather_csc(indptr, search, indices, data, slot_features, start, m, buf):
    """CSC rows as LightGBM's ``CSC_RowIterator::Get`` reads them.

    That iterator walks a column forward while its row index is below the wanted row, so
    row ``i`` gets the entry at the first position whose running maximum of row indices
    (within the column) reaches ``i``, if that entry's row is ``i``, else 0: with sorted
    columns the first of duplicate entries, with unsorted ones only entries that exceed
    every earlier row index of their column.  ``search`` is that running maximum (the
    indices themselves when every column is sorted), so a binary search finds the
    position for the block's first row; the following rows continue forward from it.
    """
    for s in range(slot_features.shape[0]):
        f = slot_features[s]
        hi = indptr[f + 1]
        p = _lower_bound(search, indptr[f], hi, start)
        for j in range(m):
            while p < hi and search[p] < start + j:
                p += 1
            buf[j, s] = data[p] if p < hi and indices[p] == start + j else 0.0


@row_kernel(rows=1)
def walk_sparse(is_csc, n, indptr, indices, data, search, slot_of_feature, slot_features, block, chunks,
                column, forest, out, leaves, want_leaves):
    """CSR or CSC rows, gathered per block into a buffer of the split features' values.

    ``slot_features`` are the features the forest splits on, ``slot_of_feature[f]`` the
    buffer column of feature ``f`` (-1: not used; CSR only), ``column`` each node's buffer
    column.  CSC values with ``|x| <= kZeroThreshold`` read 0 (``LGBM_BoosterPredictForCSC``
    drops them), CSR values are kept (see :func:`_scatter_csr`, :func:`_gather_csc`).
    """
    nblocks = (n + block - 1) // block
    nchunks = min(nblocks, chunks)
    for c in prange(nchunks):
        b0, b1 = _chunk_bounds(c, nchunks, nblocks)
        node = np.empty(block, dtype=np.int32)
        buf = np.zeros((block, max(slot_features.shape[0], 1)), dtype=np.float64)
        for b in range(b0, b1):
            start = b * block
            m = min(block, n - start)
            if is_csc:
                _gather_csc(indptr, search, indices, data, slot_features, start, m, buf)
            else:
                _scatter_csr(indptr, indices, data, slot_of_feature, start, m, buf, False)
            _walk_block(buf, 0, m, is_csc, start, column, forest, node, out, leaves, want_leaves)
            if not is_csc:  # back to zeros, touching only what was written
                _scatter_csr(indptr, indices, data, slot_of_feature, start, m, buf, True)


# --------------------------------------------------------------------------- bin codes
#
# The same walk over compact codes (see :mod:`smart_lgbm._engine.walk.codes`): each value is stored
# as its position among its feature's finite bin upper bounds (uint8, column-major), and a
# node tests ``code <= tcode`` (``tcode``: the position of its threshold, itself a bin
# upper bound), or sends the row the default way when ``code == miss`` (the NaN code for
# missing type NaN, the code of 0.0 for missing type Zero, 256 - never - for None).

#: Code of NaN for features whose missing type is NaN.
NAN_CODE = 255
#: ``miss`` of a node that has no missing code (missing type None, and leaves).
NO_MISS = 256


@njit(cache=True, inline="always")
def _position(bounds, lo, length, x):
    """First ``j`` with ``bounds[lo + j] >= x`` (``length`` if none): ``x <= bounds[lo + k]``
    exactly when ``j <= k``.  Branch-free halving: the comparison picks the next base by
    arithmetic, so the data-dependent outcome costs no mispredicted branch."""
    base = 0
    size = length
    while size > 1:
        half = size >> 1
        base += half * np.int64(bounds[lo + base + half - 1] < x)
        size -= half
    return base + np.int64(size == 1 and bounds[lo + base] < x)


@njit(cache=True, inline="always")
def _code(x, bounds, lo, length, nan_code):
    """The code of the value ``x`` LightGBM's predictor reads (tiny values already 0)."""
    if x != x:
        if nan_code >= 0:
            return nan_code
        x = 0.0  # missing types None and Zero read NaN as 0
    return _position(bounds, lo, length, x)


@row_kernel(rows=1)
def encode_sparse(is_csc, n, indptr, indices, data, column_of_feature, bounds, starts, lengths, nan_codes, codes):
    """Codes of a CSR (each row's entries in storage order, the last duplicate winning) or
    canonical CSC matrix; absent entries read 0.  Returns False (codes unusable) when a
    stored value is tiny but not zero (CSR keeps those values, whose sides of a threshold at
    +-kZeroThreshold the codes cannot tell apart from 0)."""
    ncols = codes.shape[0]
    for j in prange(ncols):
        zero = _code(0.0, bounds, starts[j], lengths[j], nan_codes[j])
        for i in range(n):
            codes[j, i] = zero
    tiny = 0
    if is_csc:
        for f in prange(indptr.shape[0] - 1):
            j = column_of_feature[f]
            if j < 0:
                continue
            for p in range(indptr[f], indptr[f + 1]):
                x = np.float64(data[p])
                if abs(x) <= K_ZERO_THRESHOLD:
                    x = 0.0
                codes[j, indices[p]] = _code(x, bounds, starts[j], lengths[j], nan_codes[j])
    else:
        for i in prange(n):
            for p in range(indptr[i], indptr[i + 1]):
                j = column_of_feature[indices[p]]
                if j < 0:
                    continue
                x = np.float64(data[p])
                if x != 0.0 and abs(x) <= K_ZERO_THRESHOLD:
                    tiny += 1
                codes[j, i] = _code(x, bounds, starts[j], lengths[j], nan_codes[j])
    return tiny == 0


#: A coded node's test in one int64 (:func:`code_nodes`): the code
#: column in bits 0-31, ``tcode`` in bits 32-39, ``miss`` in bits 40-48 and ``go_default``
#: in bit 49.  One load per step instead of four separate arrays' (about half the walk's time).
TCODE_SHIFT = 32
MISS_SHIFT = 40
DEFAULT_SHIFT = 49


@row_kernel(rows=0, axis=1)
def walk_codes(codes, block, chunks, info, child, node_value, node_leaf, roots, depths, skip, skip_out, out, leaves,
               want_leaves):
    """The forest walked over column-major codes, rows in lockstep blocks; the child is
    picked by index (``child[2 * nd + go_right]``), without a data-dependent branch.

    Rows listed in ``skip`` (sorted, unique) are not walked: row ``skip[p]`` gets
    ``skip_out[p]`` added instead (outputs known already).  Each thread gathers the rows of
    its chunk that are not skipped, run by run, into full blocks (a constant block size
    keeps the lockstep loops' trip counts predictable).  A block stops descending a tree
    at the first level where none of its rows moved (they all sit at leaves, which are
    their own children), so shallow branches cost less than the tree's depth.

    The lockstep loop is written once, here, over arrays this function allocates: as a
    separate function taking ``node`` as an argument it runs twice as slow, the compiler no
    longer knowing that ``node`` aliases nothing it reads.  For the same reason ``node`` and
    ``row`` stay allocated here, not taken from the caller as the sampler kernels take
    theirs: as views of a caller's array the walk runs twice as slow.
    """
    n = codes.shape[1]
    nblocks = (n + block - 1) // block
    nchunks = min(nblocks, chunks)
    ns = skip.shape[0]
    for c in prange(nchunks):
        b0, b1 = _chunk_bounds(c, nchunks, nblocks)
        node = np.empty(block, dtype=np.int64)
        row = np.empty(block, dtype=np.int64)
        r, r_end = b0 * block, min(n, b1 * block)
        p = _lower_bound(skip, 0, ns, r)  # (np.searchsorted's compilation costs more than this kernel's own)
        while r < r_end:
            m = 0
            while m < block and r < r_end:  # the next rows that are not skipped, run by run
                nxt = skip[p] if p < ns else r_end  # the next skipped row (maybe past this chunk)
                if r == nxt:
                    for k in range(out.shape[1]):
                        out[r, k] += skip_out[p, k]
                    p += 1
                    r += 1
                    continue
                stop = min(nxt, r_end, r + block - m)
                for q in range(stop - r):
                    row[m + q] = r + q
                m += stop - r
                r = stop
            for k in range(roots.shape[0]):
                root = roots[k]
                for j in range(m):
                    node[j] = root
                for _ in range(depths[k]):
                    moved = 0
                    for j in range(m):
                        nd = node[j]
                        word = info[nd]
                        code = np.int64(codes[word & 0xFFFFFFFF, row[j]])
                        is_miss = code == ((word >> MISS_SHIFT) & 0x1FF)
                        go = (np.int64(is_miss) * ((word >> DEFAULT_SHIFT) & 1)
                              + np.int64(not is_miss) * np.int64(code > ((word >> TCODE_SHIFT) & 0xFF)))
                        nxt_node = child[2 * nd + go]
                        moved |= nxt_node ^ nd
                        node[j] = nxt_node
                    if moved == 0:
                        break
                for j in range(m):
                    nd = node[j]
                    out[row[j], k] += node_value[nd]
                    if want_leaves:
                        leaves[row[j], k] = node_leaf[nd]


#: :func:`code_nodes`'s reasons for refusing a node.
NOT_A_BOUND, NAN_WITHOUT_NAN_BIN, ZERO_WITHOUT_ZERO_BIN, PLAIN_ON_NAN_BIN = 1, 2, 3, 4


@njit(cache=True)
def code_nodes(feature, threshold, flags, left, right, column_of_feature, flat_bounds, starts, lengths, nan_codes,
               zero_codes, info, child):
    """A forest's nodes in codes, written into ``info`` (int64, one per node) and ``child``
    (int32, two per node); returns ``(bad_node, reason)``.

    ``info`` holds each node's packed test (see ``TCODE_SHIFT``), ``child`` its children
    at ``2 * node`` and ``2 * node + 1`` (the caller allocates both: allocated and returned
    here they made this kernel, compiled in every fresh environment's first call, slower to
    compile).  ``bad_node`` is -1, or the first internal node
    the codes cannot decide, with ``reason``: :data:`NOT_A_BOUND` (categorical, a feature
    without codes, or a threshold that is not one of the feature's bounds),
    :data:`NAN_WITHOUT_NAN_BIN`, :data:`ZERO_WITHOUT_ZERO_BIN`, :data:`PLAIN_ON_NAN_BIN`.
    """
    n = threshold.shape[0]
    for nd in range(n):
        child[2 * nd] = left[nd]
        child[2 * nd + 1] = right[nd]
        go_default = np.int64((flags[nd] & DEFAULT_LEFT) == 0)
        if left[nd] == nd:  # a leaf: its own child both ways, never "missing"
            info[nd] = (np.int64(NO_MISS) << MISS_SHIFT) | (go_default << DEFAULT_SHIFT)
            continue
        f = feature[nd]
        col = column_of_feature[f] if f < column_of_feature.shape[0] else -1
        if col < 0 or flags[nd] & CATEGORICAL:
            return nd, NOT_A_BOUND
        lo, length, t = starts[col], lengths[col], threshold[nd]
        a, b = 0, length  # first position with bounds >= t
        while a < b:
            mid = (a + b) >> 1
            if flat_bounds[lo + mid] < t:
                a = mid + 1
            else:
                b = mid
        if a == length or flat_bounds[lo + a] != t:
            return nd, NOT_A_BOUND
        missing = (flags[nd] >> 2) & 3
        miss = np.int64(NO_MISS)
        if missing == MISSING_NAN:
            if nan_codes[col] != NAN_CODE:
                return nd, NAN_WITHOUT_NAN_BIN
            miss = NAN_CODE
        elif missing == MISSING_ZERO:
            if zero_codes[col] == NO_MISS:
                return nd, ZERO_WITHOUT_ZERO_BIN
            miss = zero_codes[col]
        elif nan_codes[col] == NAN_CODE:
            return nd, PLAIN_ON_NAN_BIN
        info[nd] = (np.int64(col) | (np.int64(a) << TCODE_SHIFT) | (miss << MISS_SHIFT)
                    | (go_default << DEFAULT_SHIFT))
    return -1, 0
