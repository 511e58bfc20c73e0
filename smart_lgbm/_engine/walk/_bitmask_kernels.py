"""Numba kernels of the bitmask walk over bin codes (QuickScorer, Lucchese et al. 2015).

Private module: the kernels trust their inputs (built by :func:`bitmask_tables` from a
:class:`smart_lgbm._engine.walk.CodedForest`, whose nodes ``code_nodes`` checked) and index without
bounds checks.

Why: the lockstep walk (:func:`smart_lgbm._engine.walk._kernels.walk_codes`) takes one dependent
gather per row and level (node -> its test -> the row's code -> the child).  For a tree of
at most 64 leaves the bitmask walk has no dependent step: number the tree's leaves left to
right (bit ``i`` of a 64-bit word is the ``i``-th leaf); node ``n``'s ``kill`` mask has
every bit set but those of the leaves of its left subtree.  A row starts with all bits set
and, at *every* node whose test sends it right, ANDs that node's ``kill``; its exit leaf is
then the lowest bit left set (count trailing zeros).  Proof (the paper's): a node on the
row's path that sends it right kills only leaves left of the exit leaf; a node off the path
lies wholly left of the path (all its leaves left of the exit leaf) or wholly right of it
(all its leaves, hence those it kills, right of it), so the exit leaf survives, and every
leaf left of it lies in the left subtree of a node on the path that sends the row right,
where it is killed.  The rightmost leaf is never killed: the mask is never 0.

A node's test depends on the row only through the code of its feature, so the AND of the
kill masks of all the nodes on one code column is a function of that code alone: per tree
and column, :func:`bitmask_tables` tabulates it for the 256 codes, and a row's mask is the
AND over the tree's columns of ``table[column][code]`` (one load per column and row instead
of one test per node and row; QuickScorer's per-feature threshold scan, done once per tree
for every code).  The tables apply ``walk_codes``' test exactly (``code == miss``: the
default way; otherwise right iff ``code > tcode``), so both walks reach the same leaf and
add the same double.

The tables beat both the lockstep walk and a vectorised mask test per node and row
(``scripts/bench_bitmask_walk.py``; docs/results/bench_bitmask_walk.md, real LightGBM trees,
10% of the rows skipped: 2.6-2.8x the lockstep walk's speed).

The walk is bound by its loads (per row and table a code byte and a table word, plus the
block's mask), not by memory: with the caches emptied before each call, as between two
iterations of the engine (LightGBM's subset copy and tree learner run in between), it
costs about what it costs warm (docs/results/bench_bitmask_walk_noskip.md, ``--cold``), and
prefetching the next block's code columns in software gains nothing.  Fewer loads do:
:func:`tree_masks` applies four tables a pass over the masks, and a block with no skipped
row (every block of the gradient sweep's walk at small sampling rates) adds its leaves
without a skip test per row (:func:`_add_leaves`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from ..._numba.row_kernel import row_kernel
from ._kernels import DEFAULT_SHIFT, MISS_SHIFT, TCODE_SHIFT, _chunk_bounds, _lower_bound

#: Most leaves a tree may have for the bitmask walk (one bit per leaf in a uint64).
MAX_LEAVES = 64
#: Codes a column can hold (uint8): each table's length.
NUM_CODES = 256
#: :func:`bitmask_tables`'s answer for a forest with a tree of more than 64 leaves.
TOO_MANY_LEAVES = -1

_ALL = 0xFFFFFFFFFFFFFFFF
#: Tables :func:`tree_masks` applies in one pass over a block's masks.
COLUMNS_PER_PASS = 4


@njit(cache=True)
def bitmask_tables(info, child, node_value, node_leaf, roots, total, tstart, tcol, table, leaf_value, leaf_index,
                   order, count, first, entry_of_column):
    """A coded forest's tables for :func:`walk_bitmask`, written into the caller's arrays.

    ``info``, ``child``, ``node_value``, ``node_leaf``, ``roots``: the coded forest's
    (:class:`smart_lgbm._engine.walk.codes.CodedForest`), ``total`` its number of nodes.  Written:
    ``tstart`` (K + 1): tree ``k``'s tables are entries ``tstart[k]:tstart[k + 1]``; entry
    ``e`` reads code column ``tcol[e]`` and its table is ``table[256 * e:256 * e + 256]``
    (uint64: the AND of the kill masks of the tree's nodes on that column that send the
    code right); ``leaf_value`` / ``leaf_index`` (``64 * K``): tree ``k``'s ``i``-th leaf
    from the left at ``64 * k + i``.  ``tcol`` and ``table`` need room for as many entries
    as the trees have (internal nodes, distinct columns) at most, summed.  Scratch:
    ``order``, ``count``, ``first`` (``total`` entries each) and ``entry_of_column`` (one
    per code column, all -1; left so).

    Returns the number of entries, or :data:`TOO_MANY_LEAVES` (nothing usable written).
    """
    num_trees = roots.shape[0]
    e_next = 0
    tstart[0] = 0
    for k in range(num_trees):
        root = roots[k]
        end = roots[k + 1] if k + 1 < num_trees else total
        if (end - root + 1) // 2 > MAX_LEAVES:
            return TOO_MANY_LEAVES
        # breadth-first order from the root, then leaves counted bottom-up
        order[0] = root
        head, tail = 0, 1
        while head < tail:
            nd = order[head]
            head += 1
            if child[2 * nd] != nd:
                order[tail] = child[2 * nd]
                order[tail + 1] = child[2 * nd + 1]
                tail += 2
        for q in range(tail - 1, -1, -1):
            nd = order[q]
            left = child[2 * nd]
            count[nd] = 1 if left == nd else count[left] + count[child[2 * nd + 1]]
        # top-down: each node's first leaf from the left, and its kill mask into its column's table
        first[root] = 0
        for q in range(tail):
            nd = order[q]
            left = child[2 * nd]
            if left == nd:
                leaf_value[MAX_LEAVES * k + first[nd]] = node_value[nd]
                leaf_index[MAX_LEAVES * k + first[nd]] = node_leaf[nd]
                continue
            first[left] = first[nd]
            first[child[2 * nd + 1]] = first[nd] + count[left]
            # count[left] < 64: the right subtree holds a leaf too
            kill = ~(((np.uint64(1) << np.uint64(count[left])) - np.uint64(1)) << np.uint64(first[nd]))
            word = info[nd]
            col = word & 0xFFFFFFFF
            e = entry_of_column[col]
            if e < 0:
                e = e_next
                e_next += 1
                entry_of_column[col] = e
                tcol[e] = col
                for x in range(NUM_CODES):
                    table[NUM_CODES * e + x] = np.uint64(_ALL)
            tcode = (word >> TCODE_SHIFT) & 0xFF
            miss = (word >> MISS_SHIFT) & 0x1FF
            go_default = (word >> DEFAULT_SHIFT) & 1
            for x in range(NUM_CODES):  # walk_codes' test of code x
                right = go_default == 1 if x == miss else x > tcode
                if right:
                    table[NUM_CODES * e + x] &= kill
        for e in range(tstart[k], e_next):
            entry_of_column[tcol[e]] = -1
        tstart[k + 1] = e_next
    return e_next


@njit(cache=True, inline="always")
def _code_table(codes, r0, m, tcol, table, e):
    """Entry ``e``'s codes of rows ``r0 .. r0 + m - 1`` and its table."""
    return codes[tcol[e], r0:r0 + m], table[NUM_CODES * e:NUM_CODES * (e + 1)]


@njit(cache=True, inline="always")
def tree_masks(codes, r0, m, e, e1, tcol, table, mask):
    """``mask[j]``: the leaf mask of row ``r0 + j`` (``j < m``) in the tree whose tables are
    entries ``e:e1`` (module notes; its exit leaf is the mask's lowest set bit), each table
    applied to the whole block, up to :data:`COLUMNS_PER_PASS` tables a pass over the
    masks.  Also the leaf refit's walk (:func:`smart_lgbm._engine._refit_kernels.walk_leaf_sums`).

    The first pass sets the masks from the 1 to 4 tables left over by the passes of 4 that
    follow, so a tree of ``c`` tables takes ``ceil(c / 4)`` passes.
    """
    if e == e1:  # a tree of one leaf
        for j in range(m):
            mask[j] = 1
        return
    first = (e1 - e - 1) % COLUMNS_PER_PASS + 1
    ca, ta = _code_table(codes, r0, m, tcol, table, e)
    if first == 1:
        for j in range(m):
            mask[j] = ta[np.uint64(ca[np.uint64(j)])]
    elif first == 2:
        cb, tb = _code_table(codes, r0, m, tcol, table, e + 1)
        for j in range(m):
            u = np.uint64(j)
            mask[j] = ta[np.uint64(ca[u])] & tb[np.uint64(cb[u])]
    elif first == 3:
        cb, tb = _code_table(codes, r0, m, tcol, table, e + 1)
        cc, tc = _code_table(codes, r0, m, tcol, table, e + 2)
        for j in range(m):
            u = np.uint64(j)
            mask[j] = ta[np.uint64(ca[u])] & tb[np.uint64(cb[u])] & tc[np.uint64(cc[u])]
    else:
        cb, tb = _code_table(codes, r0, m, tcol, table, e + 1)
        cc, tc = _code_table(codes, r0, m, tcol, table, e + 2)
        cd, td = _code_table(codes, r0, m, tcol, table, e + 3)
        for j in range(m):
            u = np.uint64(j)
            mask[j] = (ta[np.uint64(ca[u])] & tb[np.uint64(cb[u])]) & (tc[np.uint64(cc[u])] & td[np.uint64(cd[u])])
    e += first
    while e < e1:  # four tables a pass: a quarter of the masks' loads and stores of one a pass
        ca, ta = _code_table(codes, r0, m, tcol, table, e)
        cb, tb = _code_table(codes, r0, m, tcol, table, e + 1)
        cc, tc = _code_table(codes, r0, m, tcol, table, e + 2)
        cd, td = _code_table(codes, r0, m, tcol, table, e + 3)
        for j in range(m):
            u = np.uint64(j)
            mask[j] &= (ta[np.uint64(ca[u])] & tb[np.uint64(cb[u])]) & (tc[np.uint64(cc[u])] & td[np.uint64(cd[u])])
        e += COLUMNS_PER_PASS


@njit(cache=True, inline="always")
def _add_leaves(mask, m, out, leaves, leaf_value, leaf_index, want_leaves):
    """Rows ``0 .. m - 1`` of a block none of whose rows is skipped: ``out[j] += leaf_value[leaf]``
    (and ``leaves[j] = leaf_index[leaf]``) with ``leaf`` the lowest set bit of ``mask[j]``.
    ``out``, ``leaves``: the block's views of one tree's column; ``leaf_value``,
    ``leaf_index``: the tree's 64 entries.  Views and unsigned indices: the per-row loop
    then holds no bound arithmetic of the 2-D arrays and no skip test."""
    if want_leaves:
        for j in range(m):
            u = np.uint64(j)
            t = np.uint64(trailing_zeros(mask[u]))
            out[u] += leaf_value[t]
            leaves[u] = leaf_index[t]
    else:
        for j in range(m):
            u = np.uint64(j)
            out[u] += leaf_value[np.uint64(trailing_zeros(mask[u]))]


@row_kernel(rows=0, axis=1)
def walk_bitmask(codes, block, chunks, tstart, tcol, table, leaf_value, leaf_index, skip, skip_out, out, leaves,
                 want_leaves):
    """The forest walked over column-major codes by bitmask tables (module notes), in
    contiguous blocks of ``block`` rows: per tree, each table is applied to the whole block
    (four a pass over the block's masks, :func:`tree_masks`), then each row's exit leaf is read.

    Rows listed in ``skip`` (sorted, unique) get ``skip_out[p]`` added instead of their
    walked outputs, and their ``leaves`` are left alone, as in ``walk_codes``; they are
    walked with their block all the same (the loads stay contiguous) and their masks
    dropped.

    Indices into the block's code columns and tables are unsigned: numba then emits no
    negative-index wraparound, which otherwise costs every load a test and select.
    """
    n = codes.shape[1]
    nblocks = (n + block - 1) // block
    nchunks = min(nblocks, chunks)
    ns = skip.shape[0]
    num_trees = tstart.shape[0] - 1
    for c in prange(nchunks):
        b0, b1 = _chunk_bounds(c, nchunks, nblocks)
        mask = np.empty(block, dtype=table.dtype)
        p = _lower_bound(skip, 0, ns, b0 * block)
        for b in range(b0, b1):
            r0 = b * block
            m = min(block, n - r0)
            p_end = _lower_bound(skip, p, ns, r0 + m)
            for k in range(num_trees):
                tree_masks(codes, r0, m, tstart[k], tstart[k + 1], tcol, table, mask)
                base = MAX_LEAVES * k
                if p == p_end:  # no known row in the block (always, on the fused pass): no test per row
                    _add_leaves(mask, m, out[r0:r0 + m, k], leaves[r0:r0 + m, k] if want_leaves else leaves[0:0, 0],
                                leaf_value[base:base + MAX_LEAVES], leaf_index[base:base + MAX_LEAVES], want_leaves)
                    continue
                ps = p
                for j in range(m):
                    r = r0 + j
                    if ps < p_end and skip[ps] == r:
                        out[r, k] += skip_out[ps, k]
                        ps += 1
                        continue
                    leaf = trailing_zeros(mask[j])
                    out[r, k] += leaf_value[base + leaf]
                    if want_leaves:
                        leaves[r, k] = leaf_index[base + leaf]
            p = p_end
