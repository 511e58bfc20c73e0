"""Shared fixtures: bundled real data, loaded once per session; comparison configs from text."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from smart_lgbm.datasets.bundled import load_a9a, load_higgs_sample


@pytest.fixture(scope="session")
def a9a():
    """((X_train, y_train), (X_test, y_test)) of the bundled a9a (real data)."""
    return load_a9a()


@pytest.fixture(scope="session")
def higgs():
    """LightGBM's bundled HIGGS sample (real data, 7,000 / 500 rows)."""
    return load_higgs_sample()


@pytest.fixture(scope="session")
def a9a_small(a9a):
    """First 4,000 training rows of a9a, for tests that need many runs."""
    (X, y), (Xt, yt) = a9a
    return (X[:4000], y[:4000]), (Xt[:2000], yt[:2000])


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def compare_config(tmp_path):
    """``compare_config(text)``: the comparison config of TOML text, written to
    ``tmp_path / "c.toml"`` (relative data paths resolve against ``tmp_path``) and loaded as
    ``smart-lgbm compare`` loads a user's file."""
    from smart_lgbm.compare.config import load_config

    def load(text: str):
        path = tmp_path / "c.toml"
        path.write_text(textwrap.dedent(text))
        return load_config(path)

    return load


# --------------------------------------------------------------------------- hypothesis profiles
#
# The differential property tests (tests/test_properties.py) run a fixed, derandomized budget
# in CI ("ci", the default: the same examples every run, a few minutes on two cores) and a
# long random search before releases: SMART_LGBM_HYPOTHESIS=release scripts/test
# tests/test_properties.py (see that module's docstring).
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # (the test extra is not installed: the property tests are skipped)
    pass
else:
    import os

    _SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True, print_blob=True,
                              suppress_health_check=_SLOW)
    settings.register_profile("release", max_examples=400, deadline=None, print_blob=True,
                              suppress_health_check=_SLOW)
    settings.load_profile(os.environ.get("SMART_LGBM_HYPOTHESIS", "ci"))
