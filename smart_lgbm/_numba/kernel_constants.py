"""Constants that the compiled kernels of several layers share.

A leaf module (it imports numpy only): the samplers' kernels, the losses' gradient kernels
and the run's kernels (the gradient sweep, the leaf refit, the adaptive rate's sums) read
their block size, the importance kinds and what the gradient sweep gathers from here, and
this module imports none of them.
"""

from __future__ import annotations

import numpy as np

#: Rows per block of the row-wise reductions and of the draw.  Every floating-point sum over
#: rows adds each block in row order and the blocks in block order, so its result does not
#: depend on the number of threads.
BLOCK = 16384
#: Rows per block of the histogram kernels (their per-block tables are larger).
HIST_BLOCK = 65536

#: Importance kinds the sampler kernels recompute per row: ``|g_i|``, ``sum_k h_ik``, MVS's
#: ``sqrt(|g_i|^2 + lambda |h_i|^2)``, a float64 buffer, the constant 1 (uniform).
FIRST, SECOND, MVS, BUFFER, CONST = 0, 1, 2, 3, 4
#: Each kind as the sampler kernels receive it: a zero-length array whose dtype names the
#: kind, so that numba compiles a kernel once per kind it is used with, and only that kind's
#: code (``samplers/_importance_kernels._score_of_kind``).
KIND_MARKERS: dict[int, np.ndarray] = {FIRST: np.empty(0, np.int8), SECOND: np.empty(0, np.int16),
                                       MVS: np.empty(0, np.int32), BUFFER: np.empty(0, np.uint8),
                                       CONST: np.empty(0, np.uint16)}
#: LossBased's kind: the importance is the loss's per-row loss (clipped at 0), in a buffer.
LOSS = -1
#: The kinds a built-in sampler can register as its compiled importance.
IMPORTANCE_KINDS = frozenset({FIRST, SECOND, MVS, LOSS})

#: Fitting gradient of a drawn row: plain, minus the anchor, or SecondOrder's regularised one.
FIT_PLAIN, FIT_ANCHOR, FIT_REGULARISED = 0, 1, 2

#: What the run's gradient sweep (:mod:`smart_lgbm._engine.sweep`) gathers for a sampler's
#: next rate solve: nothing, the per-block scan values of one importance kind, or the
#: per-block sums of MVS's automatic lambda.
STATS_NONE, STATS_SCAN, STATS_NORMS = 0, 1, 2
