"""Config validation: every error names the table and key, and lists what is accepted."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from smart_lgbm.compare.config import (
    ConfigError,
    ConfigFileError,
    ConfigTypeError,
    load_config,
    parse_config,
)

BASE = """
output = "out"
rounds = 5
seeds = [0, 1]

[params]
learning_rate = 0.1
num_leaves = 7

[methods.stock_full]
[methods.stock_goss]
top_rate = 0.1
other_rate = 0.1
[methods.fo]
kind = "first_order"
rate = 0.2

[[experiments]]
name = "a9a"
metric = "binary_logloss"
data = { source = "bundled", name = "a9a" }
params = { objective = "binary", sigmoid = 2.0 }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_valid_config_is_read_with_defaults(tmp_path):
    cfg = load_config(write(tmp_path, BASE))
    (exp,) = cfg.experiments
    assert cfg.output == tmp_path / "out"
    assert exp.rounds == 5 and exp.seeds == (0, 1) and exp.metric == "binary_logloss"
    assert not exp.higher_is_better
    assert exp.params == {"learning_rate": 0.1, "num_leaves": 7, "objective": "binary", "sigmoid": 2.0}
    assert [m.label for m in exp.methods] == ["stock_full", "stock_goss", "fo"]
    assert exp.method("fo").kind == "first_order" and exp.method("fo").options == {"rate": 0.2}
    assert exp.target is None and exp.tolerance == 0.0


def test_unknown_method_key_names_table_key_and_accepted(tmp_path):
    path = write(tmp_path, BASE.replace("rate = 0.2", "rat = 0.2"))
    with pytest.raises(ValueError, match=r"\[methods\.fo\] unknown key 'rat'; accepted: kind, params, rate, refit_leaves, rho, rounds, seeds, time_budget"):
        load_config(path)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("rounds = 5", "rounds = 5\nrouns = 3", r"\[config\] unknown key 'rouns'; accepted: .*rounds"),
        ("name = \"a9a\"\n", "name = \"a9a\"\nmetrc = \"auc\"\n", r"\[experiments\.a9a\] unknown key 'metrc'"),
        ("name = \"a9a\" }", "name = \"a9a\", nrows = 3 }", r"\[experiments\.a9a\] data unknown key 'nrows'"),
        ("num_leaves = 7", "num_leaf_x = 7", r"\[params\] unknown LightGBM parameter 'num_leaf_x'"),
    ],
)
def test_unknown_keys_everywhere(tmp_path, old, new, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, BASE.replace(old, new)))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("rounds = 5", 'rounds = "5"', r"\[config\] key 'rounds' must be an integer >= 1, got string '5'"),
        ("rate = 0.2", 'rate = "0.2"', r"\[methods\.fo\] key 'rate' must be a number in \(0, 1\], \"auto\" or a table of AdaptiveRate's parameters, got string '0.2'"),
        ("rate = 0.2", "rate = true", r"\[methods\.fo\] key 'rate' must be a number .*got boolean"),
        ("seeds = [0, 1]", 'seeds = ["a"]', r"\[config\] key 'seeds' must be a non-empty list of integers"),
        ('metric = "binary_logloss"', "metric = 3", r"\[experiments\.a9a\] key 'metric' must be a string"),
        ("num_leaves = 7", "num_leaves = { a = 1 }", r"\[params\] key 'num_leaves' must be a string, number"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_key(tmp_path, old, new, message):
    with pytest.raises(TypeError, match=message) as info:
        load_config(write(tmp_path, BASE.replace(old, new)))
    assert isinstance(info.value, ConfigTypeError)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("rate = 0.2", "rate = 1.5", r"\[methods\.fo\] key 'rate' must be a number in \(0, 1\], \"auto\" or a table of AdaptiveRate's parameters, got 1.5"),
        ("rate = 0.2", "rate = 0.2\nrho = 3.0", r"\[methods\.fo\] give either rate or rho"),
        ("top_rate = 0.1", "top_rate = 0.95", r"\[methods\.stock_goss\] keys 'top_rate' \+ 'other_rate' must be <= 1"),
        ('kind = "first_order"', 'kind = "first"', r"\[methods\.fo\] key 'kind' is 'first'; accepted values: stock_full"),
        ('metric = "binary_logloss"', 'metric = "accuracy"', r"key 'metric' is 'accuracy'; accepted: .*ndcg@K"),
        ('name = "a9a" }', 'name = "a8a" }', r"key 'name' is 'a8a'; accepted values: a9a, digits, higgs_sample, rank_sample"),
        ("num_leaves = 7", 'metric = "auc"', r"\[params\] key 'metric' cannot be set here: set the experiment's 'metric'"),
        ("num_leaves = 7", "bagging_fraction = 0.5", r"\[params\] key 'bagging_fraction' cannot be set here: use a method of kind stock_bagging"),
        ("rounds = 5", "rounds = 5\ntarget = \"nope\"", r"key 'target' names 'nope', which is not one of its methods"),
        ("rounds = 5", "rounds = 0", r"\[config\] key 'rounds' must be an integer >= 1, got 0"),
    ],
)
def test_bad_values_are_value_errors_naming_the_key(tmp_path, old, new, message):
    with pytest.raises(ValueError, match=message):
        load_config(write(tmp_path, BASE.replace(old, new)))


def test_missing_data_file_names_the_key(tmp_path):
    text = BASE.replace('data = { source = "bundled", name = "a9a" }',
                        'data = { source = "svmlight", train = "train.svm", valid = "missing.svm" }')
    (tmp_path / "train.svm").write_text("1 qid:1 1:0.5\n0 qid:1 2:0.5\n")
    with pytest.raises(FileNotFoundError, match=r"\[experiments\.a9a\] data key 'valid': file not found: .*missing\.svm") as info:
        load_config(write(tmp_path, text))
    assert isinstance(info.value, ConfigFileError)


def test_relative_paths_are_relative_to_the_config_folder(tmp_path, monkeypatch):
    sub = tmp_path / "cfg"
    sub.mkdir()
    (sub / "train.csv").write_text("y,a\n1,0.5\n0,0.1\n")
    text = BASE.replace('data = { source = "bundled", name = "a9a" }',
                        'data = { source = "csv", train = "train.csv", label = "y" }')
    path = sub / "c.toml"
    path.write_text(text)
    monkeypatch.chdir(tmp_path)
    cfg = load_config(path)
    assert cfg.experiments[0].data.train == sub / "train.csv"
    assert cfg.output == sub / "out"


def test_missing_config_file_and_bad_toml(tmp_path):
    with pytest.raises(FileNotFoundError, match="config file not found"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "rounds = = 3"))


def test_parquet_without_an_engine_is_refused_clearly(tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    # as in an environment without the compare extra (which installs pyarrow)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name in ("pyarrow", "fastparquet") else find_spec(name, *args))
    (tmp_path / "t.parquet").write_bytes(b"")
    raw = {"methods": {"full": {}}, "experiments": [{"name": "e", "metric": "auc",
           "data": {"source": "parquet", "train": "t.parquet", "label": "y"}}]}
    with pytest.raises(ConfigError, match="Parquet needs pyarrow or fastparquet"):
        parse_config(raw, tmp_path)


def test_shipped_configs_validate():
    root = Path(__file__).resolve().parents[1] / "configs"
    names = sorted(p.name for p in root.glob("*.toml"))
    assert {"quick.toml", "a9a.toml", "mslr-like.toml", "mslr30k-like.toml", "higgs-like.toml", "yahoo-like.toml"} <= set(names)
    for name in names:
        cfg = load_config(root / name)
        assert cfg.experiments
    quick = load_config(root / "quick.toml")
    assert [e.name for e in quick.experiments] == ["a9a", "rank-sample", "dense-synthetic"]
    dense = quick.experiment("dense-synthetic")
    assert dense.data.source == "synthetic"  # labelled so: its tables' Data line says synthetic
    # stock full is timed at both ends of every experiment (scripts/run's verdict spread)
    assert all(e.labels[0] == "stock_full" and e.labels[-1] == "stock_full_again" for e in quick.experiments)


def test_rounds_per_method_and_per_experiment(tmp_path):
    text = BASE.replace('kind = "first_order"', 'kind = "first_order"\nrounds = 40').replace(
        'params = { objective = "binary", sigmoid = 2.0 }',
        'params = { objective = "binary", sigmoid = 2.0 }\nmethod_rounds = { stock_goss = 7 }')
    exp = load_config(write(tmp_path, text)).experiments[0]
    assert [exp.rounds_of(m) for m in exp.methods] == [5, 7, 40]
    assert exp.target_at == "best" and exp.equal_time == (0.25, 0.5, 1.0)
    with pytest.raises(ValueError, match=r"key 'method_rounds' names 'nope', which is not one of its methods"):
        load_config(write(tmp_path, text.replace("stock_goss = 7", "nope = 7")))
    with pytest.raises(ValueError, match=r"method_rounds key 'stock_goss' must be an integer >= 1, got 0"):
        load_config(write(tmp_path, text.replace("stock_goss = 7", "stock_goss = 0")))


def test_time_budgets_multiply_the_target_methods_time(tmp_path):
    text = BASE.replace("seeds = [0, 1]", "seeds = [0, 1]\ntime_budget = 1.5").replace(
        'kind = "first_order"', 'kind = "first_order"\ntime_budget = 0.5')
    exp = load_config(write(tmp_path, text)).experiments[0]
    # the default target is stock_full: it has no budget; the others the experiment's or their own
    assert exp.target_method == "stock_full"
    assert [exp.budget_of(m) for m in exp.methods] == [None, 1.5, 0.5]
    with pytest.raises(ValueError, match=r"have a 'time_budget', a multiple of the target method's training time, "
                                         r"but the target is not a method"):
        load_config(write(tmp_path, text.replace("seeds = [0, 1]", "seeds = [0, 1]\ntarget = 0.3")))
    with pytest.raises(ValueError, match=r"\[methods.stock_full\] key 'time_budget' cannot be set on the target"):
        load_config(write(tmp_path, text.replace("[methods.stock_full]", "[methods.stock_full]\ntime_budget = 2")))
    with pytest.raises(ValueError, match=r"key 'time_budget' must be a finite number > 0"):
        load_config(write(tmp_path, text.replace("time_budget = 0.5", "time_budget = -1")))


@pytest.mark.parametrize(
    "line, message",
    [
        ('target_at = "last"', r"\[config\] key 'target_at' is 'last'; accepted values: best, final"),
        ("equal_time = []", r"key 'equal_time' must be a non-empty list of numbers in \(0, 100\]"),
        ("equal_time = [0.5, -1]", r"key 'equal_time' must be a non-empty list"),
        ("equal_time = 0.5", r"key 'equal_time' must be a non-empty list"),
    ],
)
def test_target_at_and_equal_time_are_checked(tmp_path, line, message):
    with pytest.raises(ValueError, match=message):
        load_config(write(tmp_path, BASE.replace("seeds = [0, 1]", f"seeds = [0, 1]\n{line}")))
    ok = load_config(write(tmp_path, BASE.replace("seeds = [0, 1]", 'seeds = [0, 1]\ntarget_at = "final"\n'
                                                  "equal_time = [1, 0.5, 0.5]"))).experiments[0]
    assert ok.target_at == "final" and ok.equal_time == (0.5, 1.0)
