# Sourced (not run) by scripts/test, scripts/run and .ci/run: the virtual environment of one
# supported LightGBM version, created and installed on first use.
#
# SMART_LGBM_LIGHTGBM selects the LightGBM minor version, one of LIGHTGBM_VERSIONS.  Unset or
# empty means the newest, which lives in .venv; an older one gets .venv-lightgbm<version>, so
# switching back and forth reinstalls nothing.

# Oldest first.  Keep in step with pyproject.toml's lightgbm range and SUPPORTED_LIGHTGBM in
# smart_lgbm/_lightgbm/versions.py (tests/test_lightgbm_versions.py checks all three agree).
LIGHTGBM_VERSIONS="4.6 4.7"
NEWEST_LIGHTGBM="${LIGHTGBM_VERSIONS##* }"

# Sets VENV to the environment of LightGBM "$1" (empty: the newest), creating it and
# (re)installing the package when pyproject.toml or the version changed since the last install.
smart_lgbm_venv() {
    local version="${1:-$NEWEST_LIGHTGBM}"
    case " $LIGHTGBM_VERSIONS " in
        *" $version "*) ;;
        *)
            echo "SMART_LGBM_LIGHTGBM=$version is not supported; accepted: ${LIGHTGBM_VERSIONS// /, } (empty: $NEWEST_LIGHTGBM)" >&2
            return 2
            ;;
    esac
    if [ "$version" = "$NEWEST_LIGHTGBM" ]; then
        VENV=.venv
    else
        VENV=".venv-lightgbm$version"
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        echo "creating $VENV (first run only)" >&2
        python3 -m venv "$VENV"
    fi
    local stamp
    stamp="$VENV/.installed-$( (cat pyproject.toml; echo "lightgbm $version") | sha256sum | cut -c1-16)"
    if [ ! -f "$stamp" ]; then
        echo "installing smart-lgbm with lightgbm $version into $VENV" >&2
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
        # The explicit pin also moves an existing environment to the selected version (pip
        # would otherwise keep any installed LightGBM that satisfies pyproject.toml's range).
        # The dask extra too: the test suite runs the Dask estimators (tests/test_dask*.py);
        # the compare extra (matplotlib): scripts/run and the comparison tests draw plots; the
        # docs extra (Sphinx): tests/test_docs_site.py builds the documentation site; and the
        # peers extra (XGBoost, CatBoost: about 1 GB installed, with XGBoost's NCCL library):
        # the comparison tests train them (tests/test_peers.py).
        "$VENV/bin/python" -m pip install --quiet -e ".[test,dask,compare,docs,peers]" "lightgbm==$version.*"
        rm -f "$VENV"/.installed-*
        touch "$stamp"
    fi
}
