"""Config-driven, side-by-side comparisons of stock LightGBM and the engine's samplers.

``smart-lgbm compare CONFIG`` reads a TOML config (:mod:`.config`), loads the data
(:mod:`.data`), checks data and parameters with a pre-flight run before anything is timed
(:mod:`.checks`), trains every method with every seed (:mod:`.methods`), and merges the
per-iteration records into the output folder with the paper-layout table (:mod:`.report`)
and the curves (:mod:`.plots`) drawn from them (:mod:`.store`), each file atomically
(:mod:`.io`); :mod:`.runner` ties them together.
"""

from .config import CompareConfig, ConfigError, ConfigFileError, ConfigTypeError, load_config, parse_config
from .runner import run_compare, run_single

__all__ = [
    "CompareConfig",
    "ConfigError",
    "ConfigFileError",
    "ConfigTypeError",
    "load_config",
    "parse_config",
    "run_compare",
    "run_single",
]
