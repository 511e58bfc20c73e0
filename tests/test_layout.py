"""The package's layout: layers that point one way, no import circle, small modules.

Read from the source (the AST of every module, every import statement at any depth, those
under ``if TYPE_CHECKING:`` and inside functions included), not from what happens to be
imported at run time:

* no import circle anywhere in the package;
* no module over 700 lines;
* the training run (``smart_lgbm._engine``) is used through its package's names only: no
  module outside it imports one of its modules;
* the loss layer imports nothing above it (samplers, the run, the entry points), the sampler
  layer nothing of the run or the entry points, and the shared kernel constants nothing at all;
* ``smart_lgbm/__init__.py`` writes ``__all__`` once;
* one iteration (``BoostingRun.step``) reads in one screen.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "smart_lgbm"
MAX_LINES = 700


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package's ``__init__``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The package's modules that module ``name`` imports (a name imported from a package
    that is a module of its own counts as that module, any other as the package)."""
    path, is_package = MODULES[name]
    base = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_is_read_from_every_module():
    # the checks below see what they check: a module's own imports, relative and absolute
    assert "smart_lgbm._engine.run" in GRAPH["smart_lgbm._engine.training"]
    assert "smart_lgbm.samplers" in GRAPH["smart_lgbm._engine.run"]  # (a name of the package)
    assert "smart_lgbm._engine" in GRAPH["smart_lgbm.engine"]
    assert "smart_lgbm.losses._kernels" in GRAPH["smart_lgbm.losses.binary"]  # (a function-level import)
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_in_the_package():
    assert _circles(GRAPH) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_over_700_lines(name):
    lines = len(MODULES[name][0].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it by what it holds"


def test_no_module_outside_the_run_package_imports_its_internals():
    run = "smart_lgbm._engine"
    outside = {name: sorted(m for m in imports if m.startswith(run + "."))
               for name, imports in GRAPH.items() if name != run and not name.startswith(run + ".")}
    assert {name: found for name, found in outside.items() if found} == {}


def _layer_imports(prefix: str) -> dict[str, set[str]]:
    return {name: imports for name, imports in GRAPH.items() if name == prefix or name.startswith(prefix + ".")}


def test_the_loss_layer_imports_nothing_above_it():
    allowed = ("smart_lgbm.losses", "smart_lgbm._numba")
    above = {name: sorted(m for m in imports if not m.startswith(allowed))
             for name, imports in _layer_imports("smart_lgbm.losses").items()}
    assert {name: found for name, found in above.items() if found} == {}


def test_the_sampler_layer_imports_nothing_of_the_run_or_the_entry_points():
    allowed = ("smart_lgbm.samplers", "smart_lgbm.losses", "smart_lgbm._numba", "smart_lgbm._validation")
    above = {name: sorted(m for m in imports if not m.startswith(allowed))
             for name, imports in _layer_imports("smart_lgbm.samplers").items()}
    assert {name: found for name, found in above.items() if found} == {}


def test_the_shared_kernel_constants_are_a_leaf():
    assert GRAPH["smart_lgbm._numba.kernel_constants"] == set()


def test_the_package_writes_all_once():
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    writes = [node for node in ast.walk(tree)
              if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
              and "__all__" in {t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                                if isinstance(t, ast.Name)}]
    assert len(writes) == 1 and isinstance(writes[0], ast.Assign)
    import smart_lgbm

    assert sorted(smart_lgbm.__all__) == sorted(set(smart_lgbm.__all__))
    assert all(hasattr(smart_lgbm, name) for name in smart_lgbm.__all__)


def test_one_iteration_reads_in_one_screen():
    from smart_lgbm._engine.run import BoostingRun

    lines = inspect.getsource(BoostingRun.step).splitlines()
    assert len(lines) <= 40, f"BoostingRun.step has {len(lines)} lines"
    # the next iteration's gradients are a value the run holds, not flags carried across iterations
    source = inspect.getsource(BoostingRun)
    assert "_ready" not in source and "_statistics" not in source
