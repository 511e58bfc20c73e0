"""scripts/probe_rate_schedule.py: the oracle study's schedules are what they say."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("probe_rate_schedule", ROOT / "scripts" / "probe_rate_schedule.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scheduled_rate_switches_at_k():
    rate = _script().ScheduledRate(0.1, 3, 1.0)
    assert [rate.rate_for(None, i) for i in range(5)] == [0.1, 0.1, 0.1, 1.0, 1.0]
    assert rate.observe(None, 2, None) == 1.0  # the rate of the next iteration


def test_switch_at_zero_is_stock_full_boosting_and_sampling_changes_the_curve(tmp_path):
    # FirstOrder at rate 1.0 draws every row with p = 1 (binary: no zero gradient), so the
    # schedule switching at 0 must give stock LightGBM's curve (up to the order in which the
    # engine and LightGBM add up the validation scores); a switch at 3 must not
    out = tmp_path / "probe.md"
    assert _script().main(["configs/quick.toml", "--switch", "0", "3", "--auto", "--rounds", "6", "--out", str(out)]) == 0
    curves = json.loads(out.with_suffix(".json").read_text())
    stock = np.array(curves["stock full seed 0"]["values"])
    assert stock.shape == (6,)
    np.testing.assert_allclose(np.array(curves["0.1 for 0, then 1.0 seed 0"]["values"]), stock, rtol=1e-12)
    sampled = np.array(curves["0.1 for 3, then 1.0 seed 0"]["values"])
    assert np.max(np.abs(sampled - stock)) > 1e-5
    # the adaptive rate starts at 0.1: a sampled run, not stock full boosting
    auto = np.array(curves['rate "auto" seed 0']["values"])
    assert np.max(np.abs(auto - stock)) > 1e-5
    text = out.read_text()
    assert "| stock full | 1 |" in text and "| 0.1 for 3, then 1.0 | 1 |" in text


def test_negative_switch_is_refused(capsys):
    with pytest.raises(SystemExit):
        _script().main(["configs/quick.toml", "--switch", "-1", "--out", "unused.md"])
    assert "--switch" in capsys.readouterr().err
