"""The comparison's checks come before the work, and never merge or train on wrong data
(issue 40): integers LightGBM cannot take, a plot file that is a folder, the label among the
features, records made from other rows at the same path, metrics that fit their objective."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from smart_lgbm.cli import main
from smart_lgbm.compare.config import ConfigError
from test_compare_cli import config, one_error_line, watch_timed_runs

CSV = """
output = "out"
rounds = 3
seeds = [0]
warmup = false
progress_seconds = -1

[params]
num_leaves = 7
num_threads = 1

[methods.stock_full]
[methods.full]
[methods.first_order]
rate = 0.5

[[experiments]]
name = "table"
metric = "binary_logloss"
params = {{ objective = "binary" }}
data = {{ source = "csv", train = "train.csv", label = "y"{extra} }}
"""


def _csv(tmp_path: Path, seed: int = 0, rows: int = 400) -> None:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, 3))
    y = (X[:, 0] + rng.normal(size=rows) > 0).astype(int)
    lines = ["a,b,c,y"] + [f"{a:.6f},{b:.6f},{c:.6f},{t}" for (a, b, c), t in zip(X, y, strict=True)]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("features, column", [('["a", "y"]', "label"), ('["y"]', "label"), ('["a", "q"]', "group")])
def test_the_label_or_group_among_the_features_is_refused(tmp_path, features, column, compare_config):
    _csv(tmp_path)
    extra = f", features = {features}" + (', group = "q"' if column == "group" else "")
    with pytest.raises(ConfigError, match=rf"key 'features' lists the {column} column"):
        compare_config(CSV.format(extra=extra))
    with pytest.raises(ConfigError, match="key 'features' repeats 'a'"):
        compare_config(CSV.format(extra=', features = ["a", "a"]'))


@pytest.mark.parametrize("where, text", [
    ("top", "rounds = 3000000000"),
    ("method", "[methods.first_order]\nrate = 0.5\nrounds = 2147483648"),
    ("params", "[params]\nnum_leaves = 3000000000"),
    ("params", "[params]\nmin_data_in_leaf = -2147483649"),
    ("params", "[params]\nmonotone_constraints = [0, 4294967296]"),
    ("seeds", "seeds = [2147483648]"),
])
def test_integers_lightgbm_cannot_take_are_refused_at_load_time(tmp_path, where, text, compare_config):
    _csv(tmp_path)
    body = CSV.format(extra="")
    if where in ("top", "seeds"):
        body = body.replace("rounds = 3\n", "").replace("seeds = [0]\n", "")
        body = text + "\n" + body
    elif where == "method":
        body = body.replace("[methods.first_order]\nrate = 0.5", text)
    else:
        body = body.replace("[params]\nnum_leaves = 7", text)
    with pytest.raises(ConfigError, match=r"LightGBM|can count"):
        compare_config(body)


@pytest.mark.parametrize("plot", ["metric_vs_iteration.png", "sampling_rate_vs_iteration.png", "verdict.png"])
def test_a_plot_file_that_is_a_folder_is_refused_before_training(tmp_path, capsys, monkeypatch, plot):
    out = tmp_path / "out"
    (out / "a9a" / plot).mkdir(parents=True)
    trained = watch_timed_runs(monkeypatch)
    assert main(["compare", str(config(tmp_path))]) == 2
    assert f"the result file {out / 'a9a' / plot} is a folder" in one_error_line(capsys)
    assert trained == []


def test_records_made_from_other_rows_at_the_same_path_are_not_merged(tmp_path, capsys, monkeypatch):
    _csv(tmp_path, seed=0)
    path = config(tmp_path, CSV.format(extra=""))
    assert main(["compare", str(path)]) == 0
    records = json.loads((tmp_path / "out" / "table" / "records.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{32}", records["data_fingerprint"])
    # the same rows again: merged
    assert main(["compare", str(path), "--method", "first_order"]) == 0
    # other rows in the same file (the config table unchanged): refused before training
    _csv(tmp_path, seed=1)
    trained = watch_timed_runs(monkeypatch)
    assert main(["compare", str(path), "--method", "first_order"]) == 2
    assert "made from other data" in one_error_line(capsys)
    assert trained == []
    assert main(["run", str(path), "--method", "first_order"]) == 0  # run's own records: first made now
    _csv(tmp_path, seed=2)
    assert main(["run", str(path), "--method", "first_order"]) == 2
    assert "made from other data" in one_error_line(capsys)
    # --overwrite replaces them
    assert main(["compare", str(path), "--overwrite"]) == 0
    assert json.loads((tmp_path / "out" / "table" / "records.json").read_text())["data_fingerprint"] \
        != records["data_fingerprint"]


def test_records_without_a_fingerprint_are_not_merged(tmp_path, capsys):
    _csv(tmp_path)
    path = config(tmp_path, CSV.format(extra=""))
    assert main(["compare", str(path)]) == 0
    file = tmp_path / "out" / "table" / "records.json"
    records = json.loads(file.read_text())
    del records["data_fingerprint"]
    file.write_text(json.dumps(records))
    assert main(["compare", str(path), "--method", "full"]) == 2
    assert "do not say which rows they were made from" in one_error_line(capsys)


@pytest.mark.parametrize("metric, objective", [("average_precision", "binary"), ("auc_mu", "multiclass")])
def test_metrics_that_measure_their_objective_are_accepted(tmp_path, metric, objective, compare_config):
    _csv(tmp_path)
    body = CSV.format(extra="").replace('metric = "binary_logloss"', f'metric = "{metric}"')
    if objective == "multiclass":
        body = body.replace('params = { objective = "binary" }', 'params = { objective = "multiclass", num_class = 2 }')
    cfg = compare_config(body)
    assert cfg.experiments[0].metric == metric
    assert main(["compare", str(config(tmp_path, body))]) == 0
