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


def test_auto_variants_parse_to_the_adaptive_rates_parameters(capsys):
    script = _script()
    assert script.parse_variant("default") == {}
    assert script.parse_variant("threshold=0.05,window=5,snap=1.0") == {"threshold": 0.05, "window": 5, "snap": 1.0}
    with pytest.raises(ValueError, match="unknown key 'tresh'.*accepted: start"):
        script.parse_variant("tresh=0.05")
    with pytest.raises(SystemExit):
        script.main(["configs/quick.toml", "--auto", "growth=0.5", "--out", "unused.md"])
    err = capsys.readouterr().err
    assert "--auto" in err and "growth must be" in err


def test_variants_run_beside_stock_full_taken_from_records(tmp_path):
    # stock full's curve comes from a comparison's records.json (not rerun); each variant is
    # the sampler with AdaptiveRate(**its parameters), its rates and decisions kept
    stock = [0.7, 0.6, 0.55, 0.5, 0.52, 0.53]
    records = {"runs": [{"method": "stock_full", "experiment": "a9a", "values": stock, "seconds": [0.1] * 6}]}
    path = tmp_path / "records.json"
    path.write_text(json.dumps(records))
    out = tmp_path / "probe.md"
    args = ["configs/quick.toml", "--auto", "default", "start=0.3,window=2", "--rounds", "6", "--stock-records",
            str(path), "--out", str(out)]
    assert _script().main(args) == 0
    curves = json.loads(out.with_suffix(".json").read_text())
    assert curves["stock full seed 0"]["values"] == stock
    default, variant = curves['rate "auto" seed 0'], curves["auto start=0.3,window=2 seed 0"]
    assert default["sampling_rate"][0] == pytest.approx(0.1, abs=0.02)
    assert variant["sampling_rate"][0] == pytest.approx(0.3, abs=0.03)
    assert [i for i, _ in variant["ratios"]] == [1, 3, 5]  # a decision per window of 2
    assert len(variant["train_seconds"]) == 6 and default["values"] != variant["values"]
    text = out.read_text()
    assert "stock full's best over 6 rounds (0.50000)" in text and "| auto start=0.3,window=2 | 1 |" in text


def test_stock_records_without_the_experiment_are_refused_before_any_run(tmp_path, capsys):
    path = tmp_path / "records.json"
    path.write_text(json.dumps({"runs": [{"method": "stock_full", "experiment": "other", "values": [0.5],
                                          "seconds": [0.1]}]}))
    with pytest.raises(SystemExit):
        _script().main(["configs/quick.toml", "--auto", "--stock-records", str(path), "--out", "unused.md"])
    assert "--stock-records: no stock_full run of experiment 'a9a'" in capsys.readouterr().err


def test_refit_and_structure_trace(tmp_path):
    # --refit: the sampler with refit_leaves=True; --structure: per tree (from the second
    # iteration's draw on) its in-sample sums, its full-data gain and data noise, and the
    # controller's fresh-sample sums
    out = tmp_path / "probe.md"
    assert _script().main(["configs/quick.toml", "--refit", "--structure", "--auto", "threshold=1000000,patience=0",
                           "--rounds", "6", "--out", str(out)]) == 0
    run = json.loads(out.with_suffix(".json").read_text())["auto threshold=1000000,patience=0 seed 0"]
    entries = np.array(run["structure"])
    assert entries.shape == (5, 9) and list(entries[:, 0]) == [0, 1, 2, 3, 4]
    n_in, q_in, d_in, full, d_full = entries[:, 1:6].T
    assert np.all(full > 0) and np.all(q_in > n_in) and np.all(d_full > 0)
    # a tree grown on its sample gains more there than on every row (the sample's optimism)
    assert np.all(q_in - n_in > full)
    assert "(refit_leaves=True)" in out.read_text()
