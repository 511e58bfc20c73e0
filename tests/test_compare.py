"""Comparison machinery: table arithmetic, atomic files, data sources, a tiny end-to-end run."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from smart_lgbm.compare import io as cio
from smart_lgbm.compare.config import DataSpec, load_config
from smart_lgbm.compare.data import load_data
from smart_lgbm.compare.methods import RunRecord, method_seeds, run_method
from smart_lgbm.compare.report import (
    asri,
    best_index,
    build_table,
    first_reaching,
    mean_curves,
    parse_markdown_table,
    to_markdown,
)


def rec(method, kind, values, rates, seconds, seed=0, higher=False):
    return RunRecord("e", method, kind, seed, "m", higher, list(values), list(rates), list(seconds))


# --------------------------------------------------------------------------- table arithmetic


def test_first_reaching_both_directions_and_not_reached():
    lower = np.array([0.5, 0.4, 0.35, 0.30, 0.32])
    assert first_reaching(lower, 0.35, higher_is_better=False) == 2  # equality counts
    assert first_reaching(lower, 0.31, higher_is_better=False) == 3
    assert first_reaching(lower, 0.2, higher_is_better=False) is None
    higher = np.array([0.6, 0.7, 0.72, 0.71])
    assert first_reaching(higher, 0.7, higher_is_better=True) == 1
    assert first_reaching(higher, 0.8, higher_is_better=True) is None
    assert first_reaching(higher, 0.73, higher_is_better=True, tolerance=0.02) == 2
    # float noise between two implementations of the same algorithm is not a miss
    assert first_reaching(np.array([0.33427551564497815]), 0.3342755156449769, False) == 0
    assert best_index(lower, False) == 3 and best_index(higher, True) == 2
    assert asri(np.array([1.0, 0.5, 0.3, 0.2]), 2) == pytest.approx(0.6)


def test_table_on_hand_made_records_lower_is_better():
    records = [
        rec("stock_full", "stock_full", [0.6, 0.5, 0.4, 0.3], [1, 1, 1, 1], [1.0, 1.0, 1.0, 1.0]),
        rec("stock_goss", "stock_goss", [0.6, 0.45, 0.35, 0.3], [1, 1, 0.2, 0.2], [1.0, 1.0, 0.25, 0.25]),
        # two seeds, averaged per iteration: values [0.55, 0.35, 0.3, 0.25], rates [0.1, 0.2, 0.3, 0.4]
        rec("fo", "first_order", [0.5, 0.3, 0.3, 0.2], [0.1, 0.2, 0.3, 0.4], [0.1, 0.1, 0.1, 0.1], seed=0),
        rec("fo", "first_order", [0.6, 0.4, 0.3, 0.3], [0.1, 0.2, 0.3, 0.4], [0.3, 0.3, 0.3, 0.3], seed=1),
        rec("bad", "uniform", [0.7, 0.6, 0.5, 0.45], [0.5] * 4, [0.1] * 4),
    ]
    curves = mean_curves(records)
    assert [c.method for c in curves] == ["stock_full", "stock_goss", "fo", "bad"]
    table = build_table("e", "m", False, curves)
    assert table.target == 0.3 and table.target_source == "best of stock_full: iteration 4 of 4"
    up = {r.method: r for r in table.upper}
    assert (up["stock_full"].iterations, up["stock_full"].asri, up["stock_full"].seconds) == (4, 1.0, 4.0)
    assert (up["stock_goss"].iterations, up["stock_goss"].seconds) == (4, 2.5)
    assert up["stock_goss"].asri == pytest.approx(0.6)
    fo = up["fo"]
    assert fo.runs == 2 and fo.iterations == 3 and fo.value == pytest.approx(0.3)
    assert fo.asri == pytest.approx(0.2) and fo.seconds == pytest.approx(0.6)
    assert fo.speedup_full == pytest.approx(4.0 / 0.6) and fo.speedup_goss == pytest.approx(2.5 / 0.6)
    assert up["stock_full"].speedup_full == pytest.approx(1.0)
    assert up["bad"].iterations is None and up["bad"].speedup_full is None
    low = {r.method: r for r in table.lower}
    assert (low["fo"].value, low["fo"].iterations) == (pytest.approx(0.25), 4)
    assert low["fo"].asri == pytest.approx(0.25) and low["fo"].seconds == pytest.approx(0.8)
    assert (low["bad"].value, low["bad"].iterations) == (0.45, 4)

    rows = parse_markdown_table(to_markdown(table))
    assert rows[0][:6] == ["method", "runs", "m", "iter", "ASRI", "time/s"]
    assert rows[0][6:] == ["speed-up vs stock_full", "speed-up vs stock_goss"]
    by_name = {r[0]: r for r in rows[1:5]}
    assert by_name["fo"][2:] == ["0.3000", "3", "0.2000", "0.600", "6.67x", "4.17x"]
    assert by_name["bad"][2] == "not reached" and by_name["bad"][6] == "—"
    assert rows[5][0] == "**best quality**"
    assert [r[0] for r in rows[6:]] == ["stock_full", "stock_goss", "fo", "bad"]
    assert rows[8][2:6] == ["0.2500", "4", "0.2500", "0.800"]


def test_target_is_the_best_of_a_long_run_or_its_final_quality():
    # stock full overfits after iteration 3: its best (0.30) is the fair target, not its final 0.34
    records = [
        rec("stock_full", "stock_full", [0.6, 0.4, 0.30, 0.32, 0.34], [1] * 5, [1.0] * 5),
        rec("fo", "first_order", [0.7, 0.5, 0.40, 0.33, 0.31, 0.305], [0.1] * 6, [0.25] * 6),
    ]
    curves = mean_curves(records)
    best = build_table("e", "m", False, curves, tolerance=0.01)
    assert best.target == 0.30 and best.target_source == "best of stock_full: iteration 3 of 5"
    up = {r.method: r for r in best.upper}
    assert up["stock_full"].iterations == 3 and up["fo"].iterations == 5  # 0.31 <= 0.30 + 0.01
    assert up["fo"].seconds == pytest.approx(1.25) and up["fo"].speedup_full == pytest.approx(3.0 / 1.25)
    text = to_markdown(best)
    assert "Target: m 0.3 (best of stock_full: iteration 3 of 5); a method reaches it at <= 0.31 (tolerance 0.01)" in text
    final = build_table("e", "m", False, curves, target_at="final")
    assert final.target == 0.34 and final.target_source == "stock_full after 5 iterations"
    assert {r.method: r.iterations for r in final.upper} == {"stock_full": 3, "fo": 4}
    higher = build_table("e", "m", True, mean_curves([rec("a", "stock_full", [0.5, 0.9, 0.7], [1] * 3, [1] * 3,
                                                          higher=True)]), target_at="best")
    assert higher.target == 0.9
    with pytest.raises(ValueError, match="target_at must be 'best' or 'final', got 'last'"):
        build_table("e", "m", False, curves, target_at="last")


def test_equal_time_table_reads_each_curve_at_shares_of_stock_fulls_time_to_target():
    records = [
        rec("stock_full", "stock_full", [0.6, 0.5, 0.4, 0.3], [1] * 4, [1.0] * 4),  # target 0.3 at 4.0 s
        rec("fo", "first_order", [0.55, 0.45, 0.35, 0.32, 0.30, 0.29], [0.1] * 6, [0.5] * 6),
        rec("slow", "uniform", [0.5, 0.4], [0.1] * 2, [1.5, 1.5]),
        rec("late", "mvs", [0.2], [0.1], [2.5]),
    ]
    table = build_table("e", "m", False, mean_curves(records), equal_time_shares=(0.25, 0.5, 1.0))
    et = table.equal_time
    assert et.reference == "stock_full" and et.seconds == 4.0 and et.basis == "its time to the target"
    assert et.cells["stock_full"] == [(0.6, 1, False), (0.5, 2, False), (0.3, 4, False)]
    # fo: 0.5 s per iteration -> 2 iterations in 1 s, 4 in 2 s, all 6 (3 s) within 4 s: ended early
    assert et.cells["fo"] == [(0.45, 2, False), (0.32, 4, False), (0.29, 6, True)]
    assert et.cells["slow"] == [(None, None, False), (0.5, 1, False), (0.4, 2, True)]
    assert et.cells["late"] == [(None, None, False), (None, None, False), (0.2, 1, True)]
    text = to_markdown(table)
    assert "each method's m after 25% / 50% / 100% of stock_full's training time to the target (4.000 s" in text
    block = text[text.index("| method | 25%"):]
    rows = parse_markdown_table(block)
    assert rows[0] == ["method", "25% (1.000 s)", "50% (2.000 s)", "100% (4.000 s)"]
    by = {r[0]: r[1:] for r in rows[1:]}
    assert by["fo"] == ["**0.4500 (2)**", "**0.3200 (4)**", "0.2900 (6, †)"]
    assert by["late"] == ["—", "—", "**0.2000 (1, †)**"]
    assert build_table("e", "m", False, mean_curves(records), equal_time_shares=None).equal_time is None
    # without a stock full the target method is the reference; one that misses the target: its whole time
    no_full = build_table("e", "m", False, mean_curves(records[1:]), target=0.1, equal_time_shares=(1.0,))
    assert no_full.equal_time.reference == "fo" and no_full.equal_time.seconds == 3.0
    assert "misses the target" in no_full.equal_time.basis


def test_table_higher_is_better_with_a_number_target_and_no_goss():
    records = [
        rec("stock_full", "stock_full", [0.70, 0.74, 0.73], [1, 1, 1], [2, 2, 2], higher=True),
        rec("so", "second_order", [0.72, 0.76, 0.75], [0.1, 0.1, 0.2], [0.5, 0.5, 0.5], higher=True),
    ]
    table = build_table("e", "ndcg@10", True, mean_curves(records), target=0.73)
    up = {r.method: r for r in table.upper}
    assert up["stock_full"].iterations == 2 and up["stock_full"].seconds == 4
    assert up["so"].iterations == 2 and up["so"].speedup_full == pytest.approx(4.0)
    assert up["so"].speedup_goss is None and table.goss_reference is None
    assert table.lower[0].iterations == 2 and table.lower[0].value == 0.74
    header = parse_markdown_table(to_markdown(table))[0]
    assert header[-1] == "speed-up vs stock_full"


def test_target_from_a_named_method_and_missing_method():
    records = [rec("a", "full", [0.5, 0.4], [1, 1], [1, 1]), rec("b", "uniform", [0.45, 0.41], [0.1, 0.1], [1, 1])]
    table = build_table("e", "m", False, mean_curves(records), target="b")
    assert table.target == 0.41 and [r.iterations for r in table.upper] == [2, 2]
    # a target method without results (e.g. interrupted before it finished) leaves the
    # table without a target, saying why, instead of failing (or keeping an old table)
    table = build_table("e", "m", False, mean_curves(records), target="zz")
    assert table.target is None and "target method 'zz' has no results" in table.target_source
    rows = parse_markdown_table(to_markdown(table))
    assert [r[2] for r in rows[1:3]] == ["—", "—"] and [r[2] for r in rows[4:6]] == ["0.4000", "0.4100"]
    assert "No target quality: target method 'zz' has no results" in to_markdown(table)


# --------------------------------------------------------------------------- atomic files


def test_atomic_write_failure_keeps_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "table.md"
    cio.write_text(target, "old content\n")

    def fails_midway(fh):
        fh.write("half of the new")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        cio.atomic_write(target, fails_midway)
    assert target.read_text() == "old content\n"
    assert os.listdir(tmp_path) == ["table.md"]

    def interrupted(fh):
        fh.write(b"x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cio.atomic_write(target, interrupted, binary=True)
    assert target.read_text() == "old content\n" and os.listdir(tmp_path) == ["table.md"]


def test_atomic_writers_write_complete_files(tmp_path):
    cio.write_json(tmp_path / "sub" / "a.json", {"x": [1, 2]})
    assert json.loads((tmp_path / "sub" / "a.json").read_text()) == {"x": [1, 2]}
    cio.write_csv(tmp_path / "a.csv", [{"a": 1, "b": 2, "c": 3}], ["a", "b"])
    assert (tmp_path / "a.csv").read_text() == "a,b\n1,2\n"
    mode = (tmp_path / "a.csv").stat().st_mode & 0o777
    assert mode & 0o044  # readable by others as a plain open() would make it, not mkstemp's 0600


# --------------------------------------------------------------------------- data sources


def test_file_sources_svmlight_lightgbm_csv(tmp_path):
    rng = np.random.default_rng(0)
    lines, qlines = [], []
    for q in range(30):
        size = 4
        qlines.append(str(size))
        for _ in range(size):
            lines.append((int(rng.integers(0, 3)), q, rng.random(3)))
    (tmp_path / "r.svm").write_text("".join(f"{y} qid:{q} 1:{x[0]:.3f} 2:{x[1]:.3f} 3:{x[2]:.3f}\n" for y, q, x in lines))
    (tmp_path / "r.txt").write_text("".join(f"{y} 1:{x[0]:.3f} 2:{x[1]:.3f} 3:{x[2]:.3f}\n" for y, q, x in lines))
    (tmp_path / "r.txt.query").write_text("\n".join(qlines) + "\n")
    (tmp_path / "r.csv").write_text("label,qid,a,b\n" + "".join(f"{y},{q},{x[0]:.3f},{x[1]:.3f}\n" for y, q, x in lines))

    svm = load_data(DataSpec("svmlight", train=tmp_path / "r.svm", test_size=0.2, seed=1))
    assert svm.is_ranking and svm.train.group.sum() + svm.valid.group.sum() == 120
    assert svm.valid.group.shape[0] == 6 and svm.train.X.shape[1] == 4  # column 0 unused, as in LightGBM
    lgbf = load_data(DataSpec("lightgbm", train=tmp_path / "r.txt", valid=tmp_path / "r.txt"))
    assert lgbf.train.group.tolist() == [4] * 30 and lgbf.valid.num_rows == 120
    csv = load_data(DataSpec("csv", train=tmp_path / "r.csv", label="label", group="qid", max_rows=10))
    assert csv.train.X.shape[1] == 2 and csv.train.num_rows == 8  # whole queries only
    plain = load_data(DataSpec("csv", train=tmp_path / "r.csv", label="label", features=("a",)))
    assert plain.train.group is None and plain.train.X.shape == (96, 1) and plain.valid.num_rows == 24
    with pytest.raises(ValueError, match="no column 'grp' named by key 'group'"):
        load_data(DataSpec("csv", train=tmp_path / "r.csv", label="label", group="grp"))


# --------------------------------------------------------------------------- methods


def test_stock_goss_rate_is_read_from_the_model_and_skips_the_first_iterations(tmp_path, compare_config):
    exp = compare_config("""
        rounds = 8
        [params]
        learning_rate = 0.25
        num_leaves = 7
        num_threads = 1
        [methods.stock_goss]
        top_rate = 0.1
        other_rate = 0.1
        [methods.stock_bagging]
        bagging_fraction = 0.2
        [methods.full]
        [[experiments]]
        name = "h"
        metric = "auc"
        data = { source = "bundled", name = "higgs_sample" }
        params = { objective = "binary" }
    """).experiments[0]
    data = load_data(exp.data)
    goss = run_method(exp.method("stock_goss"), exp, data, seed=0)
    # LightGBM's GOSS samples nothing while iter < 1 / learning_rate (goss.hpp)
    assert goss.sampling_rate[:4] == [1.0] * 4
    assert all(0.17 < r < 0.23 for r in goss.sampling_rate[4:])
    bag = run_method(exp.method("stock_bagging"), exp, data, seed=0)
    assert all(0.15 < r < 0.25 for r in bag.sampling_rate)
    assert len(bag.values) == len(bag.seconds) == 8 and all(s >= 0 for s in bag.seconds)
    assert method_seeds(exp.method("full"), exp) == (0,)
    full1 = run_method(exp.method("full"), exp, data, seed=0)
    full2 = run_method(exp.method("full"), exp, data, seed=0)
    assert full1.values == full2.values and full1.sampling_rate == [1.0] * 8


# --------------------------------------------------------------------------- end to end


TINY = """
output = "out"
rounds = 6
seeds = [0, 1]
progress_seconds = -1

[params]
learning_rate = 0.2
num_leaves = 7
num_threads = 1

[methods.stock_full]
[methods.stock_goss]
top_rate = 0.2
other_rate = 0.2
[methods.full]
[methods.second_order]
rate = 0.4

[[experiments]]
name = "a9a"
metric = "binary_logloss"
data = { source = "bundled", name = "a9a", max_rows = 2000 }
params = { objective = "binary", sigmoid = 2.0 }

[[experiments]]
name = "rank"
metric = "ndcg@5"
rounds = 4
data = { source = "bundled", name = "rank_sample", max_rows = 800 }
params = { objective = "lambdarank" }
"""


def test_compare_end_to_end_writes_records_table_and_plots(tmp_path, capsys):
    from smart_lgbm.cli import main

    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    assert main(["compare", str(path)]) == 0
    captured = capsys.readouterr()
    assert "(1/6) a9a stock_full seed 0: 6 iterations" in captured.err  # one line per method/seed
    out = tmp_path / "out"
    for exp, rounds in (("a9a", 6), ("rank", 4)):
        folder = out / exp
        names = set(os.listdir(folder))
        assert {"records.json", "records.csv", "table.md", "metric_vs_iteration.png", "metric_vs_seconds.png",
                "sampling_rate_vs_iteration.png"} <= names
        assert not [n for n in names if n.endswith(".tmp")]
        records = json.loads((folder / "records.json").read_text())
        runs = {(r["method"], r["seed"]) for r in records["runs"]}
        # stock_full and full are deterministic: one seed; the samplers run both seeds
        assert runs == {("stock_full", 0), ("stock_goss", 0), ("stock_goss", 1), ("full", 0),
                        ("second_order", 0), ("second_order", 1)}
        csv_lines = (folder / "records.csv").read_text().splitlines()
        assert csv_lines[0].startswith("experiment,method,kind,seed,iteration,metric,value,sampling_rate")
        assert len(csv_lines) == 1 + 6 * rounds
        rows = parse_markdown_table((folder / "table.md").read_text())
        assert rows[0][:6] == ["method", "runs", records["metric"], "iter", "ASRI", "time/s"]
        upper = {r[0]: r for r in rows[1:5]}
        assert upper["stock_full"][3] == str(rounds) or int(upper["stock_full"][3]) <= rounds
        assert upper["stock_full"][5 + 1] == "1.00x"
        # the engine's Full is stock full's algorithm: it reaches the same quality
        assert upper["full"][2] != "not reached" and upper["full"][3] == upper["stock_full"][3]
        assert (folder / "metric_vs_iteration.png").read_bytes()[:4] == b"\x89PNG"
    assert "### a9a" in (out / "summary.md").read_text() and "### rank" in captured.out


def test_interrupt_keeps_finished_methods(tmp_path, monkeypatch, capsys):
    from smart_lgbm.cli import main
    from smart_lgbm.compare import runner

    path = tmp_path / "tiny.toml"
    path.write_text("warmup = false\n" + TINY)
    real = runner.run_method

    def interrupt_at_full(method, *args, **kwargs):
        if method.label == "full":
            raise KeyboardInterrupt
        return real(method, *args, **kwargs)

    monkeypatch.setattr(runner, "run_method", interrupt_at_full)
    assert main(["compare", str(path), "--experiment", "a9a"]) == 130
    err = capsys.readouterr().err
    assert "interrupted; kept the finished methods' results" in err and "a9a: stock_full, stock_goss" in err
    records = json.loads((tmp_path / "out" / "a9a" / "records.json").read_text())
    assert {r["method"] for r in records["runs"]} == {"stock_full", "stock_goss"}
    rows = parse_markdown_table((tmp_path / "out" / "a9a" / "table.md").read_text())
    assert [r[0] for r in rows[1:3]] == ["stock_full", "stock_goss"]


def test_cli_errors_name_the_key_and_exit_2(tmp_path, capsys):
    from smart_lgbm.cli import main

    path = tmp_path / "bad.toml"
    path.write_text(TINY.replace("rate = 0.4", "rat = 0.4"))
    assert main(["compare", str(path)]) == 2
    assert "[methods.second_order] unknown key 'rat'" in capsys.readouterr().err
    good = tmp_path / "good.toml"
    good.write_text(TINY)
    assert main(["compare", str(good), "--method", "nope"]) == 2
    assert "no method 'nope'" in capsys.readouterr().err


def test_run_writes_records_and_a_model_that_reproduces_them(tmp_path, capsys):
    from smart_lgbm.cli import main

    path = tmp_path / "tiny.toml"
    path.write_text("warmup = false\n" + TINY)
    assert main(["run", str(path), "--method", "second_order", "--experiment", "a9a", "--seed", "1"]) == 0
    folder = tmp_path / "out" / "a9a"
    assert f"results in {tmp_path / 'out'}" in capsys.readouterr().err
    assert sorted(os.listdir(folder)) == ["model_second_order_seed1.txt", "run_second_order.csv",
                                         "run_second_order.json"]
    (run,) = json.loads((folder / "run_second_order.json").read_text())["runs"]
    assert (run["method"], run["seed"]) == ("second_order", 1)
    # the saved model is a stock LightGBM model whose validation log-loss is the recorded one
    import lightgbm as lgb

    booster = lgb.Booster(model_file=str(folder / "model_second_order_seed1.txt"))
    assert booster.num_trees() == len(run["values"]) == 6
    valid = load_data(load_config(path).experiment("a9a").data).valid
    p = booster.predict(valid.X)
    logloss = -np.mean(valid.y * np.log(p) + (1 - valid.y) * np.log(1 - p))
    assert logloss == pytest.approx(run["values"][-1], rel=1e-9)


# --------------------------------------------------------------------------- single-leaf trees (issue #12 item 7)


SPLITLESS = """
output = "out"
rounds = 5
seeds = [0]
progress_seconds = -1
[params]
learning_rate = 0.2
num_leaves = 7
num_threads = 1
{extra}
[methods.stock_full]
[methods.stock_bagging]
bagging_fraction = 0.5
[methods.stock_goss]
[methods.full]
[methods.uniform]
rate = 0.5
[[experiments]]
name = "h"
metric = "binary_logloss"
data = {data}
params = {{ objective = "binary" }}
"""


@pytest.mark.parametrize(
    "extra, data",
    [
        ("min_data_in_leaf = 4000", '{ source = "bundled", name = "higgs_sample" }'),  # above the 2000-row warm-up
        ("", '{ source = "bundled", name = "higgs_sample", max_rows = 3 }'),  # tiny data
        ("min_gain_to_split = 1e9", '{ source = "bundled", name = "higgs_sample", max_rows = 500 }'),
        ("min_sum_hessian_in_leaf = 1e9", '{ source = "bundled", name = "higgs_sample", max_rows = 500 }'),
    ],
)
def test_single_leaf_trees_give_a_table_that_shows_every_method(tmp_path, capsys, extra, data):
    from smart_lgbm.cli import main

    path = tmp_path / "c.toml"
    path.write_text(SPLITLESS.format(extra=extra, data=data))
    assert main(["compare", str(path)]) == 0
    folder = tmp_path / "out" / "h"
    rows = parse_markdown_table((folder / "table.md").read_text())
    upper = {r[0]: r for r in rows[1:6]}
    assert set(upper) == {"stock_full", "stock_bagging", "stock_goss", "full", "uniform"}
    # LightGBM and the engine keep a constant first tree, then add no more trees: one iteration
    assert upper["stock_full"][3] == upper["full"][3] == upper["uniform"][3] == "1"
    text = (folder / "table.md").read_text()
    assert "- stock_full: stopped after 1 of 5 iterations: no split met LightGBM's requirements" in text
    # a deterministic engine method stops (its next iteration would be the same) ...
    assert ("- full: stopped after 1 of 5 iterations: no split met LightGBM's requirements (min_data_in_leaf, "
            "min_gain_to_split, ...) and the sampler draws no differently next time") in text
    # ... a random one goes on with new samples, as LightGBM's bagging does, and says so
    assert "- uniform: 4 of 5 iterations added no tree" in text
    records = json.loads((folder / "records.json").read_text())
    assert {r["method"] for r in records["runs"]} == set(upper)


def test_stock_iterations_that_add_no_tree_are_not_counted_as_iterations(tmp_path):
    import lightgbm as lgb

    path = tmp_path / "c.toml"
    path.write_text(SPLITLESS.format(extra="min_data_in_leaf = 140",
                                     data='{ source = "bundled", name = "higgs_sample", max_rows = 3000 }')
                    .replace("rounds = 5", "rounds = 30").replace("bagging_fraction = 0.5", "bagging_fraction = 0.1"))
    exp = load_config(path).experiments[0]
    data = load_data(exp.data)
    boosters: list[lgb.Booster] = []
    bag = run_method(exp.method("stock_bagging"), exp, data, seed=0, on_model=boosters.append)
    # with 300-row bags and min_data_in_leaf 140, some bags cannot split: LightGBM skips them
    trees = boosters[0].num_trees()
    assert 0 < trees < 30 and bag.num_iterations == trees
    assert f"{30 - trees} of 30 iterations added no tree" in bag.note
    # every recorded value is the model's after that many trees, not a skipped iteration's repeat
    y = data.valid.y
    for i in range(1, trees + 1):
        p = boosters[0].predict(data.valid.X, num_iteration=i)
        logloss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
        assert bag.values[i - 1] == pytest.approx(logloss, rel=1e-9)
    assert len(bag.seconds) == len(bag.sampling_rate) == trees
    assert all(0.05 < r < 0.15 for r in bag.sampling_rate)


def test_engine_split_warnings_are_recognised_by_type_not_text(tmp_path, monkeypatch):
    # The harness turns the engine's "could not split" warnings into the record's note and
    # passes every other warning on: by class (smart_lgbm.IterationNotSplitWarning and its
    # subclass NoMoreSplitsWarning), whatever the text says.
    import warnings

    import smart_lgbm as sl
    from smart_lgbm.compare import methods

    path = tmp_path / "c.toml"
    path.write_text(SPLITLESS.format(extra="", data='{ source = "bundled", name = "higgs_sample", max_rows = 500 }'))
    exp = load_config(path).experiments[0]
    data = load_data(exp.data)
    real = methods.engine_train

    def noisy_train(*args, **kwargs):
        warnings.warn("reworded: nothing to split here", sl.IterationNotSplitWarning)
        warnings.warn("reworded again", sl.NoMoreSplitsWarning)
        warnings.warn("a user's own warning that mentions a sample could not be split", UserWarning)
        return real(*args, **kwargs)

    monkeypatch.setattr(methods, "engine_train", noisy_train)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_method(exp.method("uniform"), exp, data, seed=0)
    passed_on = [(w.category, str(w.message)) for w in caught]
    assert (UserWarning, "a user's own warning that mentions a sample could not be split") in passed_on
    assert not [c for c, _ in passed_on if issubclass(c, sl.IterationNotSplitWarning)]


def test_warning_classes_are_exported_and_user_warnings():
    import smart_lgbm as sl

    assert issubclass(sl.SmartLGBMWarning, UserWarning)
    assert issubclass(sl.IterationNotSplitWarning, sl.SmartLGBMWarning)
    assert issubclass(sl.NoMoreSplitsWarning, sl.IterationNotSplitWarning)
    assert {"SmartLGBMWarning", "IterationNotSplitWarning", "NoMoreSplitsWarning"} <= set(sl.__all__)


def test_yahoo_like_data_reach_lightgbm_and_the_engine_as_csr(tmp_path, monkeypatch, compare_config):
    import scipy.sparse as sp

    from smart_lgbm.compare import methods
    from smart_lgbm.compare.data import make_datasets

    exp = compare_config("""
        rounds = 3
        [params]
        num_leaves = 7
        num_threads = 1
        [methods.stock_full]
        [methods.first_order]
        rate = 0.3
        [[experiments]]
        name = "y"
        metric = "ndcg@10"
        data = { source = "synthetic", generator = "yahoo_like", n_rows = 4000, seed = 0 }
        params = { objective = "lambdarank" }
    """).experiments[0]
    assert exp.data.n_features == 700  # the generator's default width
    data = load_data(exp.data)
    assert sp.isspmatrix_csr(data.train.X) and sp.isspmatrix_csr(data.valid.X) and data.is_ranking
    assert data.description.startswith("synthetic yahoo_like (n_rows=4000, seed=0)")
    train, valid = make_datasets(data)
    assert train.data is data.train.X and valid.data is data.valid.X  # never densified or copied
    seen = []
    real = methods.engine_train

    def spy(params, train_set, *args, **kwargs):
        seen.append(train_set.data)
        return real(params, train_set, *args, **kwargs)

    monkeypatch.setattr(methods, "engine_train", spy)
    record = run_method(exp.method("first_order"), exp, data, seed=0)
    assert seen and seen[0] is data.train.X and record.num_iterations == 3
