"""A result file that cannot be replaced (issue 19, class 6): what can be checked is checked
before training; what fails after training leaves the earlier set of files, all of them, and
one clear error line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smart_lgbm.cli import main
from smart_lgbm.compare import io as cio
from test_compare_cli import assert_consistent, config, one_error_line, watch_timed_runs


def _snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("blocked", ["summary.md", "a9a/table.md", "a9a/records.json", "rank/records.csv"])
def test_a_result_file_that_is_a_folder_is_refused_before_training(tmp_path, capsys, monkeypatch, blocked):
    out = tmp_path / "out"
    (out / blocked).mkdir(parents=True)
    trained = watch_timed_runs(monkeypatch)
    assert main(["compare", str(config(tmp_path))]) == 2
    assert f"the result file {out / blocked} is a folder" in one_error_line(capsys)
    assert trained == []


@pytest.mark.parametrize("fail_on", ["summary.md", "table.md", "metric_vs_seconds.png", "records.csv"])
def test_a_replace_failing_after_training_keeps_the_earlier_set(tmp_path, capsys, monkeypatch, fail_on):
    path = config(tmp_path)
    out = tmp_path / "out"
    assert main(["compare", str(path), "--experiment", "a9a"]) == 0
    before = _snapshot(out)
    real_replace = os.replace

    def failing(src, dst, *args, **kwargs):
        if Path(dst).name == fail_on and str(src).endswith(".tmp"):
            raise PermissionError(13, "Permission denied", str(dst))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(cio.os, "replace", failing)
    capsys.readouterr()
    assert main(["compare", str(path), "--experiment", "a9a", "--method", "full"]) == 1
    line = one_error_line(capsys)
    assert fail_on in line and "the earlier ones are kept" in line
    monkeypatch.setattr(cio.os, "replace", real_replace)
    assert _snapshot(out) == before  # every file as it was, no temporary left
    assert_consistent(out, ["a9a"])


def test_a_folder_appearing_in_place_of_the_summary_during_training_keeps_the_earlier_set(tmp_path, capsys,
                                                                                          monkeypatch):
    path = config(tmp_path)
    out = tmp_path / "out"
    assert main(["compare", str(path), "--experiment", "a9a"]) == 0
    before = _snapshot(out)

    def block(method, seed):
        if not (out / "summary.md").is_dir():
            (out / "summary.md").unlink()
            (out / "summary.md").mkdir()
        return False

    watch_timed_runs(monkeypatch, interrupt=block)
    assert main(["compare", str(path), "--experiment", "a9a", "--method", "full"]) == 1
    assert "summary.md" in one_error_line(capsys)
    (out / "summary.md").rmdir()
    after = _snapshot(out)
    before.pop("summary.md")
    assert after == before


def test_run_keeps_model_and_records_together_when_one_cannot_be_written(tmp_path, capsys, monkeypatch):
    path = config(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(path), "--method", "full", "--experiment", "a9a", "--seed", "0"]) == 0
    before = _snapshot(out)
    real_replace = os.replace

    def failing(src, dst, *args, **kwargs):
        if Path(dst).name.startswith("run_full") and str(src).endswith(".tmp"):
            raise OSError(28, "No space left on device", str(dst))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(cio.os, "replace", failing)
    assert main(["run", str(path), "--method", "full", "--experiment", "a9a", "--seed", "1"]) == 1
    assert "No space left on device" in one_error_line(capsys)
    assert _snapshot(out) == before


def test_written_together_replaces_all_or_none(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    cio.write_text(a, "old a")
    with cio.written_together():
        cio.write_text(a, "new a")
        cio.write_text(b, "new b")
        assert a.read_text() == "old a" and not b.exists() and cio.staged_text(b) == "new b"
    assert a.read_text() == "new a" and b.read_text() == "new b"
    with pytest.raises(RuntimeError):
        with cio.written_together():
            cio.write_text(a, "newer a")
            raise RuntimeError
    assert a.read_text() == "new a" and sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]
