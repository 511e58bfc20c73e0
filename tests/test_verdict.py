"""The verdict scripts/run prints first (smart_lgbm.compare.verdict), on hand-made records."""

from __future__ import annotations

import numpy as np
import pytest

from smart_lgbm.compare import verdict as vd
from smart_lgbm.compare.methods import RunRecord
from smart_lgbm.compare.report import build_table, mean_curves


def rec(method, kind, values, seconds, seed=0):
    return RunRecord("e", method, kind, seed, "binary_logloss", False, list(values), [0.2] * len(values),
                     list(seconds))


def _records():
    # stock full reaches 0.50 at iteration 4 (4.0 s); its repeat is slower (5.0 s): load changed
    full = rec("stock_full", "stock_full", [0.8, 0.7, 0.6, 0.5, 0.49], [1.0] * 5)
    again = rec("stock_full_again", "stock_full", [0.8, 0.7, 0.6, 0.5, 0.49], [1.25] * 5)
    # first_order: seed 0 reaches 0.50 at 2.0 s, seed 1 at 2.5 s (mean curve: 0.505 at iteration 5 ... )
    fo0 = rec("first_order", "first_order", [0.75, 0.65, 0.55, 0.50, 0.48, 0.47], [0.5] * 6, seed=0)
    fo1 = rec("first_order", "first_order", [0.76, 0.66, 0.56, 0.52, 0.50, 0.47], [0.5] * 6, seed=1)
    goss = rec("stock_goss", "stock_goss", [0.8, 0.75, 0.7, 0.65, 0.6], [0.4] * 5)
    return [full, again, fo0, fo1, goss]


def _table(records, tolerance=0.01):
    return build_table("e", "binary_logloss", False, mean_curves(records), tolerance=tolerance)


def test_verdict_names_the_fastest_with_spread_over_seeds_and_reference_runs():
    records = _records()
    table = _table(records)
    v = vd.verdict(table, records)
    assert v.target == pytest.approx(0.49) and v.threshold == pytest.approx(0.50, abs=1e-8)
    assert v.reference_seconds == (4.0, 5.0)
    fo = next(t for t in v.timings if t.method == "first_order")
    # seeds reach <= 0.50 at iterations 4 and 5 (2.0 s, 2.5 s); the mean curve (0.51, 0.49) at iteration 5
    assert fo.seed_seconds == (2.0, 2.5) and fo.seconds == pytest.approx(2.5)
    text = "\n".join(v.lines)
    ref = np.median([4.0, 5.0])
    assert f"fastest: first_order, 2.5 s: {ref / 2.5:.2f}x stock full (4.5 s)" in text
    assert f"spread {4.0 / 2.5:.2f}-{5.0 / 2.0:.2f}x" in text  # slowest seed against fastest reference, and back
    assert "not reached: stock_goss (best 0.6000)" in text
    assert "stock full (the reference, 2 timed run(s)): 4.0 s, 5.0 s" in text
    assert "then: stock_full" not in text  # the reference is not a competitor
    # 4.0 s against 5.0 s is more than MAX_REFERENCE_DRIFT apart: the load changed
    assert any("moved from 4.00 s to 5.00 s" in w for w in v.warnings)


def test_short_trainings_are_flagged_and_stock_full_winning_is_said():
    records = [rec("stock_full", "stock_full", [0.8, 0.5], [0.1, 0.1]),
               rec("mvs", "mvs", [0.8, 0.7, 0.5], [0.2, 0.2, 0.2])]
    v = vd.verdict(_table(records, tolerance=0.0), records)
    short = [w for w in v.warnings if "too short to time" in w]
    assert len(short) == 1 and short[0].endswith("stock_full 0.20 s, mvs 0.60 s")
    assert "stock full was fastest" in "\n".join(v.lines)


def test_load_warning_when_the_machine_is_busier_than_its_cores(monkeypatch):
    monkeypatch.setattr(vd, "machine_load", lambda: (3.5, 2))
    assert "load average 3.5 on 2 cores" in vd.load_warning("before the runs")
    monkeypatch.setattr(vd, "machine_load", lambda: (1.5, 2))
    assert vd.load_warning("before the runs") is None


def test_verdict_picture_is_written(tmp_path):
    records = _records()
    path = vd.plot_verdict(_table(records), records, tmp_path / "verdict.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
