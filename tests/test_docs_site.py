"""The documentation site builds with no warning and documents every public name, every config
key and every command-line option (the reference pages are generated from the code, so a name
added to the code appears there, or the build says why not).

The site's build needs the ``docs`` extra (Sphinx); the test environment of scripts/test and
CI installs it, so these tests are skipped only where Sphinx is absent.
"""

from __future__ import annotations

import importlib.util
import os
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import smart_lgbm_docs  # noqa: E402  (docs/_ext: the generator of the reference pages)

needs_sphinx = pytest.mark.skipif(importlib.util.find_spec("sphinx") is None,
                                  reason="Sphinx is not installed (the docs extra)")


def _config_keys() -> set[str]:
    """Every key a config file takes, under the names the config reference gives them."""
    from smart_lgbm.compare import config, keys
    from smart_lgbm.samplers.adaptive import ADAPTIVE_RATE_PARAMS

    names = set(keys.TOP_KEYS) | {f"experiments.{k}" for k in keys.EXPERIMENT_KEYS}
    names |= {f"methods.{k}" for k in keys.METHOD_KEYS} | {f"data.{k}" for k in keys.DATA_KEYS}
    names |= {f"methods.{kind}.{p.name}" for kind in config.kinds() for p in config.kind_options(kind)}
    names |= {f"rate.{p.name}" for p in ADAPTIVE_RATE_PARAMS}
    return names


def _sampler_keys() -> set[str]:
    from smart_lgbm.samplers.registry import SPECS

    return {f"methods.{name}.{p.name}" for name, spec in SPECS.items() for p in spec.params}


def _cli_options() -> set[str]:
    """``program.option`` of every option and positional argument of every (sub)command."""
    import argparse

    from smart_lgbm.cli import _parser

    out = set()
    parsers = [_parser()]
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
            else:
                prog = parser.prog.replace(" ", "-")
                out |= {f"{prog}.{o}" for o in (action.option_strings or [action.dest])}
    return out


def test_generated_config_reference_has_every_key_with_what_it_accepts():
    text = smart_lgbm_docs.config_rst()
    for name in _config_keys():
        assert f".. config-key:: {name}\n" in text, name
    from smart_lgbm.samplers.registry import SPECS

    rate = SPECS["first_order"].param("rate").toml()
    assert f"Accepts {rate.accepted}." in text  # what the key accepts comes from the spec itself
    assert "Accepts true or false. Default: ``false``." in text  # refit_leaves, as TOML writes it
    assert len(_sampler_keys()) >= 14  # every built-in sampler's parameters (rate, rho, refit_leaves, ...)


def test_generated_cli_reference_has_every_option():
    text = smart_lgbm_docs.cli_rst()
    for prog_option in _cli_options():
        prog, option = prog_option.split(".", 1)
        assert f".. program:: {prog.replace('-', ' ').replace('smart lgbm', 'smart-lgbm')}" in text, prog
        assert any(line.startswith(".. option:: ") and option in line.split(" ", 2)[2].replace(",", " ").split()
                   for line in text.splitlines()), prog_option


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-n", "-W", "--keep-going", "-q",
                             str(DOCS), str(out)], capture_output=True, text=True, env=env, timeout=900)
    return out, result


@needs_sphinx
def test_site_builds_without_a_warning(site):
    out, result = site
    assert result.returncode == 0, f"sphinx-build -n -W failed:\n{result.stderr[-6000:]}"
    assert (out / "index.html").is_file()


def _inventory(out: Path) -> dict[str, set[str]]:
    from sphinx.util.inventory import InventoryFile

    with open(out / "objects.inv", "rb") as fh:
        inventory = InventoryFile.load(fh, "", posixpath.join)
    items = inventory.items() if hasattr(inventory, "items") else inventory.data.items()
    return {kind: set(entries) for kind, entries in items}


@needs_sphinx
def test_site_has_an_api_entry_for_every_public_name(site):
    import smart_lgbm
    import smart_lgbm.dask
    import smart_lgbm.datasets
    import smart_lgbm.losses

    out, result = site
    assert result.returncode == 0, result.stderr[-3000:]
    documented = set().union(*(names for kind, names in _inventory(out).items() if kind.startswith("py:")))
    wanted = {f"smart_lgbm.{n}" for n in smart_lgbm.__all__} | {f"smart_lgbm.dask.{n}" for n in smart_lgbm.dask.__all__}
    wanted |= {f"smart_lgbm.datasets.{n}" for n in smart_lgbm.datasets.__all__}
    wanted |= {f"smart_lgbm.losses.{n}" for n in smart_lgbm.losses.__all__}
    missing = sorted(wanted - documented)
    assert not missing, f"no API entry for {missing}: add them to docs/api.rst"


@needs_sphinx
def test_site_documents_every_config_key_and_command_line_option(site):
    out, result = site
    assert result.returncode == 0, result.stderr[-3000:]
    inventory = _inventory(out)
    keys = inventory.get("std:config-key", set())
    assert _sampler_keys() <= keys, sorted(_sampler_keys() - keys)
    assert _config_keys() <= keys, sorted(_config_keys() - keys)
    options = inventory.get("std:cmdoption", set())
    assert _cli_options() <= options, sorted(_cli_options() - options)
