"""scripts/render_results.py: the results page and README's table come from the records.

The committed page and README table must be what the renderer makes of the committed
records (so no figure is typed by hand), and the renderer must show every method the
records hold, grouped, with what the records say (or do not say) about how they were made.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def renderer():
    spec = importlib.util.spec_from_file_location("render_results", ROOT / "scripts" / "render_results.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_committed_page_and_readme_table_are_what_the_records_give(renderer):
    pages = renderer.render(ROOT / "docs" / "results", ROOT / "README.md", ROOT / "configs")
    for path, text in pages.items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} disagrees with the committed records: run python scripts/render_results.py")
    # the README table has a row per experiment folder, linking to its section of the page
    table = (ROOT / "README.md").read_text().split(renderer.START)[1].split(renderer.END)[0]
    for records in (ROOT / "docs" / "results").glob("*/records.json"):
        assert f"(docs/results/README.md#{records.parent.name})" in table


def _run(method, kind, values, seconds, seed=0):
    return {"experiment": "toy", "method": method, "kind": kind, "seed": seed, "metric": "binary_logloss",
            "higher_is_better": False, "values": values, "sampling_rate": [1.0] * len(values),
            "seconds": seconds, "wall_seconds": sum(seconds), "rounds": len(values), "note": ""}


def _records(env=None, tolerance=0.01, **extra):
    methods = [{"label": "stock_full", "kind": "stock_full", "options": {}},
               {"label": "fo", "kind": "first_order", "options": {"rate": 0.1, "refit_leaves": True}},
               {"label": "xgb", "kind": "xgboost_hist", "options": {"subsample": 0.5}},
               {"label": "stock_goss", "kind": "stock_goss", "options": {"top_rate": 0.1, "other_rate": 0.1}}]
    if env is not None:
        for m in methods:
            m["environment"] = env
    runs = [_run("stock_full", "stock_full", [0.60, 0.50, 0.40, 0.30], [5.0, 5.0, 5.0, 5.0]),
            _run("fo", "first_order", [0.55, 0.35, 0.305, 0.29], [1.0, 1.0, 1.0, 1.0]),
            _run("fo", "first_order", [0.55, 0.33, 0.305, 0.31], [1.5, 1.5, 1.5, 1.5], seed=1),
            _run("xgb", "xgboost_hist", [0.5, 0.45, 0.32, 0.31], [2.0, 2.0, 2.0, 2.0]),
            _run("stock_goss", "stock_goss", [0.6, 0.5, 0.45, 0.42], [1.0, 1.0, 1.0, 1.0])]
    records = {"format": 2, "experiment": "toy", "metric": "binary_logloss", "higher_is_better": False,
               "rounds": 4, "data": "synthetic dense_binary (n_rows=100, seed=0): 80 train / 20 valid rows",
               "setup": {"data": {"source": "synthetic"}}, "config": None, "methods": methods, "runs": runs}
    if tolerance is not None:
        records.update(target=None, target_at="best", tolerance=tolerance)
    records.update(extra)
    return records


def _write(tmp_path, records):
    folder = tmp_path / "results" / records["experiment"]
    folder.mkdir(parents=True)
    (folder / "records.json").write_text(json.dumps(records))
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{renderer_markers()}\n\nrest\n")
    return tmp_path / "results", readme


def renderer_markers():
    return "<!-- results-table:start -->\nold\n<!-- results-table:end -->"


def test_methods_are_grouped_with_their_times_to_the_target_and_best_quality(renderer, tmp_path):
    env = {"smart_lgbm": "9.9", "lightgbm": "4.7.0", "numpy": "2.0", "numba": "0.60", "python": "3.11",
           "platform": "Linux-x", "cpu": "Some CPU", "cpu_count": 2, "command": "smart-lgbm compare toy.toml",
           "time": "2030-01-02T03:04:05+00:00"}
    results, readme = _write(tmp_path, _records(env))
    pages = renderer.render(results, readme, tmp_path)
    page = pages[results / "README.md"]
    section = page.split("## toy")[1]
    # groups in order: stock LightGBM, the other libraries, smart-lgbm; every method shown
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    assert [r.split("|")[1].strip() for r in rows] == ["stock LightGBM", "", "other libraries", "smart-lgbm"]
    assert [r.split("`")[1] for r in rows] == ["stock_full", "stock_goss", "xgb", "fo"]
    # target: stock full's best 0.30 + 0.01 -> 0.31; stock full gets there at iteration 4 (20 s);
    # fo's mean curve [0.55, 0.34, 0.305, 0.30] at iteration 3 (mean seconds 1.25 a step: 3.75 s)
    fo = next(r for r in rows if "`fo`" in r)
    assert "3.750 s (5.33x)" in fo and "first_order (rate=0.1, refit_leaves=true)" in fo
    assert "0.3000 (4)" in fo and "same" in fo  # best of the mean curve, beside stock full's 0.30
    xgb = next(r for r in rows if "`xgb`" in r)
    assert "8.000 s (2.50x)" in xgb and "+0.0100 (worse)" in xgb
    assert "not reached" in next(r for r in rows if "`stock_goss`" in r)
    for stated in ("`smart-lgbm compare toy.toml`", "Some CPU, 2 cores, Linux-x", "2030-01-02",
                   "smart-lgbm 9.9, lightgbm 4.7.0, numpy 2.0, numba 0.60, Python 3.11", "synthetic",
                   "tolerance of 0.01"):
        assert stated in section, stated
    assert renderer.NOT_RECORDED not in section
    # README: stock full 20 s, the fastest other method (xgb, 8 s), the fastest smart-lgbm (fo)
    table = pages[readme].split(renderer.START)[1].split(renderer.END)[0]
    row = next(line for line in table.splitlines() if line.startswith("| [toy]"))
    assert "| 20.0 s |" in row and "`xgb` 8.000 s" in row and "`fo` 3.750 s (fastest)" in row
    assert "5.33x" in row and "2.13x" in row
    assert pages[readme].endswith("\n\nrest\n") and "old" not in pages[readme]


def test_readme_shows_the_recommended_method_not_the_fastest(renderer, tmp_path):
    records = _records({"command": "c", "time": "2030-01-01T00:00:00"})
    # a slower run under the recommended label: README's table shows it, not the faster fo
    records["methods"].append({"label": renderer.RECOMMENDED[0], "kind": "first_order",
                               "options": {"rate": "auto", "refit_leaves": True}})
    records["runs"].append(_run(renderer.RECOMMENDED[0], "first_order", [0.55, 0.4, 0.31, 0.30],
                                [2.0, 2.0, 2.0, 2.0]))
    results, readme = _write(tmp_path, records)
    table = renderer.render(results, readme, tmp_path)[readme].split(renderer.START)[1].split(renderer.END)[0]
    row = next(line for line in table.splitlines() if line.startswith("| [toy]"))
    # reaches 0.31 at iteration 3: 6 s, 20 / 6 = 3.33x stock full; xgb's 8 s / 6 s = 1.33x
    assert f"`{renderer.RECOMMENDED[0]}` 6.000 s |" in row and "`fo`" not in row
    assert "| 3.33x | 1.33x |" in row


def test_an_experiment_one_folder_deeper_is_read_with_its_plot(renderer, tmp_path):
    # smart-lgbm compare --output results/cfg writes results/cfg/<experiment>/
    records = _records({"command": "smart-lgbm compare cfg.toml --output results/cfg", "time": "2030-01-01T00:00:00"})
    folder = tmp_path / "results" / "cfg" / "toy"
    folder.mkdir(parents=True)
    (folder / "records.json").write_text(json.dumps(records))
    (folder / "metric_vs_seconds.png").write_bytes(b"png")
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{renderer_markers()}\n")
    pages = renderer.render(tmp_path / "results", readme, tmp_path)
    page = pages[tmp_path / "results" / "README.md"]
    assert "## toy" in page and "(cfg/toy/metric_vs_seconds.png)" in page
    assert "| [toy](" in pages[readme] and "#toy) (synthetic)" in pages[readme]


def test_records_without_metadata_say_not_recorded_and_take_the_tolerance_from_their_config(renderer, tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "toy.toml").write_text(
        'tolerance = 0.02\n[methods.stock_full]\n[methods.fo]\nkind = "first_order"\n'
        '[[experiments]]\nname = "toy"\nmetric = "binary_logloss"\n'
        'data = { source = "bundled", name = "a9a" }\nparams = { objective = "binary" }\n')
    records = _records(env=None, tolerance=None, config="/elsewhere/configs/toy.toml")
    results, readme = _write(tmp_path, records)
    page = renderer.render(results, readme, configs)[results / "README.md"]
    section = page.split("## toy")[1]
    assert "**Command**: not recorded" in section and "**Machine**: not recorded" in section
    assert "**Date**: not recorded" in section and "**Versions**: not recorded" in section
    assert "tolerance of 0.02 (from configs/toy.toml: not recorded in the records)" in section
    # without a config either: the tolerance is not recorded, and nothing counts as reaching within it
    records = _records(env=None, tolerance=None)
    shutil.rmtree(results)
    results, readme = _write(tmp_path / "again", records)
    section = renderer.render(results, readme, configs)[results / "README.md"].split("## toy")[1]
    assert "tolerance not recorded" in section


def test_check_fails_when_readme_disagrees_with_the_records(renderer, tmp_path, capsys):
    results, readme = _write(tmp_path, _records({"command": "c", "time": "2030-01-01T00:00:00"}))
    assert renderer.main(["--results", str(results), "--readme", str(readme), "--configs", str(tmp_path),
                          "--check"]) == 1
    assert "differs from what the records give" in capsys.readouterr().err
    assert renderer.main(["--results", str(results), "--readme", str(readme), "--configs", str(tmp_path)]) == 0
    assert renderer.main(["--results", str(results), "--readme", str(readme), "--configs", str(tmp_path),
                          "--check"]) == 0
    text = readme.read_text()
    readme.write_text(text.replace("5.33x", "6.00x"))  # a figure typed by hand
    assert renderer.main(["--results", str(results), "--readme", str(readme), "--configs", str(tmp_path),
                          "--check"]) == 1


def test_compare_records_state_command_machine_versions_and_tolerance(tmp_path):
    from smart_lgbm.compare.config import parse_config
    from smart_lgbm.compare.methods import RunRecord
    from smart_lgbm.compare.store import ExperimentStore, command_line

    config = parse_config({
        "tolerance": 0.003, "methods": {"stock_full": {}},
        "experiments": [{"name": "toy", "metric": "binary_logloss", "data": {"source": "bundled", "name": "a9a"},
                         "params": {"objective": "binary"}}]}, tmp_path)
    exp = config.experiments[0]
    store = ExperimentStore(exp, tmp_path / "toy", ["stock_full"])
    store.add_method(exp.methods[0], [RunRecord.from_dict(_run("stock_full", "stock_full", [0.5, 0.4], [1.0, 1.0]))])
    store.write()
    records = json.loads((tmp_path / "toy" / "records.json").read_text())
    assert records["tolerance"] == 0.003 and records["target_at"] == "best" and records["target"] is None
    env = records["methods"][0]["environment"]
    for key in ("command", "cpu", "cpu_count", "platform", "time", "smart_lgbm", "lightgbm", "numpy", "numba",
                "python"):
        assert env.get(key), key
    assert command_line(["/usr/local/bin/smart-lgbm", "compare", "my config.toml"]).endswith(
        "compare 'my config.toml'")
