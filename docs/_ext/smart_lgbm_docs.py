"""The reference pages generated from the code: the command line and the config file format.

At every build (``builder-inited``) this extension writes ``generated/cli.rst`` from the
``smart-lgbm`` command's argparse parser (:func:`smart_lgbm.cli._parser`) and
``generated/config.rst`` from the config schema (:mod:`smart_lgbm.compare.keys`, the
method kinds of :mod:`smart_lgbm.compare.config`, the sampler specs of
:data:`smart_lgbm.samplers.registry.SPECS` and the adaptive rate's parameters), so that
what the pages say is what the code accepts.  A file is rewritten only when its text
changes, so an unchanged build stays incremental.

It also adds the ``config-key`` object type: ``.. config-key:: methods.first_order.rate``
documents a key (an index entry and a target of ``:config-key:`` references).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import shutil
import sys
from pathlib import Path
from typing import Any

#: Width of the usage lines in the CLI page (argparse wraps at the terminal's otherwise).
USAGE_WIDTH = 88


def _indent(text: str, spaces: int = 3) -> list[str]:
    pad = " " * spaces
    return [pad + line if line.strip() else "" for line in text.splitlines()]


def _heading(title: str, char: str) -> list[str]:
    return [title, char * len(title), ""]


def _literal(text: str) -> str:
    """``text`` as inline literal rst (backslashes and backquotes cannot break it)."""
    return "``" + text.replace("\\", "\\\\").replace("`", "\\`") + "``"


# --------------------------------------------------------------------------- CLI


def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand of ``parser``, in the parser's order."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            out += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return out


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """``.. option::`` entries of every argument of ``parser`` (subcommand choices excluded)."""
    formatter = _formatter(parser)
    lines: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        invocation = formatter._format_action_invocation(action)
        help_text = formatter._expand_help(action) if action.help else ""
        if action.option_strings and action.nargs == 0 and action.default not in (None, False, argparse.SUPPRESS):
            help_text += f" (default: {action.default})"
        if action.required and action.option_strings:
            help_text += " (required)"
        lines += [f".. option:: {invocation}", "", *_indent(help_text.strip()), ""]
    return lines


def cli_rst(parser: argparse.ArgumentParser | None = None) -> str:
    """The command-line reference page, as reStructuredText."""
    from smart_lgbm import cli

    parser = parser or cli._parser()
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=USAGE_WIDTH)
    doc = inspect.cleandoc(cli.__doc__ or "")
    lines = [".. This page is generated from smart_lgbm/cli.py by docs/_ext/smart_lgbm_docs.py: do not edit.", "",
             *_heading("Command line: smart-lgbm", "="), doc, "",
             "``python -m smart_lgbm`` runs the same command.", "",
             ".. program:: " + parser.prog, "", "::", "", *_indent(parser.format_usage()), "",
             parser.description or "", "", *_options(parser)]
    for _name, summary, sub in _subcommands(parser):
        sub.formatter_class = functools.partial(argparse.HelpFormatter, width=USAGE_WIDTH)
        lines += [*_heading(sub.prog, "-"), summary[:1].upper() + summary[1:] + ".", "",
                  ".. program:: " + sub.prog, "", "::", "", *_indent(sub.format_usage()), "", *_options(sub)]
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- config


def _toml_value(value: Any) -> str:
    """A Python default as a TOML config writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def _split_default(doc: str) -> tuple[str, str | None]:
    """A key doc ``"what it sets (default)"`` as (what it sets, default or None)."""
    if doc.endswith(")") and "(" in doc:
        depth = 0
        for i in range(len(doc) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(doc[i], 0)
            if depth == 0:
                return doc[:i].rstrip(), doc[i + 1:-1]
    return doc, None


def _key_entry(name: str, doc: str, accepted: str | None = None, default: str | None = None) -> list[str]:
    body = [doc[:1].upper() + doc[1:] + ("" if doc.endswith(".") else ".")]
    if accepted is not None:
        body.append(f"Accepts {accepted}.")
    if default is not None:
        body.append(f"Default: {default}.")
    return [f".. config-key:: {name}", "", *_indent(" ".join(body)), ""]


def _documented_keys(prefix: str, table: dict[str, str], only: tuple[str, ...] | None = None) -> list[str]:
    lines: list[str] = []
    for key, doc in table.items():
        if only is not None and key not in only:
            continue
        what, default = _split_default(doc)
        if default == "required":
            lines += _key_entry(prefix + key, what + "; required")
        else:
            lines += _key_entry(prefix + key, what, default=default)
    return lines


def _summary(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring, as one line."""
    doc = inspect.cleandoc(obj.__doc__ or obj.__name__)
    return " ".join(doc.split("\n\n")[0].split())


def _param_entry(name: str, param: Any) -> list[str]:
    toml = param.toml()
    if param.default is None:
        default = _literal(f'"{param.none_in_toml}"') if param.none_in_toml else "not set"
    else:
        default = _literal(_toml_value(param.default))
    accepted = toml.accepted.replace("True or False", "true or false")  # TOML's spelling
    return _key_entry(name, param.doc, accepted=accepted, default=default)


def config_rst() -> str:
    """The config file reference page, as reStructuredText."""
    from smart_lgbm.compare import config, keys
    from smart_lgbm.samplers import registry
    from smart_lgbm.samplers.adaptive import ADAPTIVE_RATE_PARAMS

    lines = [".. This page is generated from smart_lgbm/compare/keys.py, smart_lgbm/compare/config.py and the",
             "   sampler specs by docs/_ext/smart_lgbm_docs.py: do not edit.", "",
             *_heading("Config file format", "="),
             "``smart-lgbm compare`` and ``smart-lgbm run`` read a TOML file. Relative paths are relative to "
             "the config file's folder, so a config works from any working directory. Every key is checked "
             "when the file is loaded, before anything trains: an unknown key, a value of the wrong type or "
             "out of range is refused with one line naming the table, the key and what it accepts, e.g. "
             "``[methods.fo] key 'rate' must be a number in (0, 1], \"auto\" or a table of AdaptiveRate's "
             "parameters, got 1.5``. The guide page :doc:`../compare` explains how a comparison uses them.", "",
             "A complete example, ``configs/quick.toml`` as shipped:", "",
             ".. literalinclude:: ../../configs/quick.toml", "   :language: toml", "",
             *_heading("Top-level keys", "-"), *_documented_keys("", keys.TOP_KEYS),
             *_heading("[[experiments]]", "-"),
             "One table per data set; a key it leaves out takes the top-level value.", "",
             *_documented_keys("experiments.", keys.EXPERIMENT_KEYS),
             *_heading("[methods.LABEL]", "-"),
             "One table per method; the table's name is the method's label (letters, digits, ``_``, ``.``, ``-``, "
             "used in file names). Every method takes these keys, and its kind adds its own below.", "",
             *_documented_keys("methods.", keys.METHOD_KEYS), *_heading("Method kinds", "~")]
    specs = registry.SPECS
    kind_docs = {**keys.STOCK_KIND_DOCS, **keys.PEER_KIND_DOCS}
    rows = []
    for kind in config.kinds():
        spec = specs.get(kind)
        what = kind_docs.get(kind) or (f":class:`~smart_lgbm.{spec.cls.__name__}`: {_summary(spec.cls)}"
                                       if spec else "")
        rows.append((kind, what))
    lines += [".. list-table::", "   :header-rows: 1", "   :widths: 1 4", "", "   * - kind", "     - runs"]
    for kind, what in rows:
        lines += [f"   * - ``{kind}``", f"     - {what}"]
    lines.append("")
    for kind in config.kinds():
        options = config.kind_options(kind)
        spec = specs.get(kind)
        lines += _heading(f"kind = \"{kind}\"", "^")
        if spec is not None:
            lines += [f"Runs ``smart_lgbm.train`` with :class:`smart_lgbm.{spec.cls.__name__}`; its keys are the "
                      "sampler's parameters, as TOML writes them.", ""]
        else:
            lines += [kind_docs.get(kind, kind) + ".", ""]
        if not options:
            lines += ["No keys besides the common ones.", ""]
        for param in options:
            lines += _param_entry(f"methods.{kind}.{param.name}", param)
    lines += [*_heading("Adaptive rate tables", "~"),
              "``rate = \"auto\"`` is the adaptive rate with its defaults; a table sets some of its parameters, "
              "e.g. ``rate = { start = 0.1, slowdown = 0.01 }`` (:class:`smart_lgbm.AdaptiveRate`).", ""]
    for param in ADAPTIVE_RATE_PARAMS:
        lines += _param_entry(f"rate.{param.name}", param)
    lines += [*_heading("data", "-"),
              "An experiment's ``data`` table: its ``source`` says which other keys it takes.", "",
              ".. list-table::", "   :header-rows: 1", "   :widths: 1 4", "", "   * - source", "     - keys"]
    for source, names in keys.DATA_SOURCES.items():
        lines += [f"   * - ``{source}``", "     - " + ", ".join(f":config-key:`data.{n}`" for n in names)]
    lines.append("")
    lines += _documented_keys("data.", keys.DATA_KEYS)
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- Sphinx


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def generate(srcdir: str | Path) -> list[Path]:
    """Write the generated pages into ``srcdir/generated``; returns their paths."""
    out = Path(srcdir) / "generated"
    pages = {out / "cli.rst": cli_rst(), out / "config.rst": config_rst()}
    for path, text in pages.items():
        _write_if_changed(path, text)
    return list(pages)


def _on_builder_inited(app: Any) -> None:
    # autosummary writes one page per name into generated/api but never removes the page of
    # a name that is gone, which would then fail the build as a page outside every toctree:
    # start from an empty folder (autosummary, connected after this, writes them all again)
    shutil.rmtree(Path(app.srcdir) / "generated" / "api", ignore_errors=True)
    generate(app.srcdir)


def _skip_member(app: Any, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    # scikit-learn's metadata-routing setters (set_fit_request, ...) are generated per
    # estimator class; their docstrings refer to scikit-learn's own glossary
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _public_bases(app: Any, name: str, obj: Any, options: Any, bases: list[type]) -> None:
    # the estimators' private mix-ins (the engine's fit) are not part of the API
    bases[:] = [b for b in bases if not b.__name__.startswith("_")]


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module or an object of the package."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif inspect.isclass(obj) and attr == parts[-1] and _instance_attribute(obj, attr):
                return True
            else:
                return False
        return True
    return False


def _instance_attribute(cls: type, name: str) -> bool:
    """Whether instances of ``cls`` have an attribute ``name`` set in its methods or annotated."""
    if any(name in getattr(c, "__annotations__", {}) for c in cls.__mro__):
        return True
    try:
        return f"self.{name} =" in inspect.getsource(cls) or f"self.{name}:" in inspect.getsource(cls)
    except (OSError, TypeError):
        return False


def _package_name(target: str, module: str | None, cls: str | None) -> bool:
    """Whether a reference's target names something of smart_lgbm: as written, relative to
    the documented object's module or class, or a module or attribute of any of the
    package's modules (docstrings refer to their neighbours by short names)."""
    target = target.lstrip("~.")
    candidates = [target]
    if module:
        candidates += [f"{module}.{target}"] + ([f"{module}.{cls}.{target}"] if cls else [])
    if any(c.startswith("smart_lgbm") and _resolves(c) for c in candidates):
        return True
    head = target.split(".")[0]
    for name, mod in list(sys.modules.items()):
        if name.startswith("smart_lgbm") and mod is not None:
            if name.endswith("." + target) or (hasattr(mod, head) and _resolves(f"{name}.{target}")):
                return True
    return False


def _internal_reference(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """A reference to a private part of the package (a module or object that exists but has no
    page) becomes plain text; a reference to a name that exists nowhere still warns."""
    if node.get("refdomain") != "py":
        return None
    if _package_name(node["reftarget"], node.get("py:module"), node.get("py:class")):
        return contnode
    return None


def setup(app: Any) -> dict[str, Any]:
    app.add_object_type("config-key", "config-key", indextemplate="pair: %s; config key")
    app.connect("builder-inited", _on_builder_inited, priority=400)  # before autosummary's (500)
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("missing-reference", _internal_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
