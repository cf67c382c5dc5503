"""The package's import graph: no circles, and no import from a lower layer into a higher one.

The layer order is declared once, here (ARCHITECTURE.md describes it).  Every import counts,
including the lazy ones inside functions: a lazy import still ties the two modules together.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from uci_checkers.util.imports import import_graph, imports_of, package_modules

PACKAGE = Path(__file__).resolve().parent.parent / "uci_checkers"

# Lowest first.  A module belongs to the first entry that is its name or a prefix of it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("util", ("uci_checkers.util",)),
    ("rules", ("uci_checkers.rules",)),
    ("tables", ("uci_checkers.egdb",)),
    ("search", ("uci_checkers.search",)),
    ("book", ("uci_checkers.book",)),
    ("engine", ("uci_checkers.engine",)),
    ("protocols", ("uci_checkers.protocols",)),
    ("tools", ("uci_checkers.client", "uci_checkers.arena", "uci_checkers.gui", "uci_checkers.learn",
               "uci_checkers.tools")),
    ("entry", ("uci_checkers.cli", "uci_checkers.__main__")),
]
# The package root only re-exports the rules' public names (lazily).
ROOT_MODULE = "uci_checkers"


def all_modules() -> dict[str, Path]:
    return package_modules(PACKAGE)


def layer_of(module: str) -> int:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} belongs to no declared layer: add it to LAYERS (and ARCHITECTURE.md)")


def graph() -> dict[str, set[str]]:
    return import_graph(all_modules())


def test_every_module_has_a_layer():
    for name in all_modules():
        if name != ROOT_MODULE:
            layer_of(name)


def test_imports_point_down_only():
    wrong = []
    for name, deps in graph().items():
        if name == ROOT_MODULE:
            continue
        for dep in deps:
            if dep == ROOT_MODULE:
                continue   # __version__
            if layer_of(dep) > layer_of(name):
                wrong.append(f"{name} ({LAYERS[layer_of(name)][0]}) imports {dep} ({LAYERS[layer_of(dep)][0]})")
    assert not wrong, "imports from a lower layer into a higher one:\n" + "\n".join(sorted(wrong))


def test_root_reexports_only_the_rules():
    deps = graph()[ROOT_MODULE]
    text = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    lazy = {f"uci_checkers.{m}" for m in __import__("re").findall(r'"(rules\.[a-z_]+)"', text)}
    assert lazy and all(layer_of(m) == 1 for m in lazy)
    assert not deps - lazy


def find_circle(edges: dict[str, set[str]]) -> list[str]:
    """One import circle (as a list of modules, first repeated last), or []."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_no_import_circle():
    circle = find_circle(graph())
    assert not circle, "import circle: " + " -> ".join(circle)


@pytest.mark.parametrize("edges,expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
    ({"a": {"a"}}, True),
])
def test_the_circle_finder_finds_circles(edges, expected):
    assert bool(find_circle(edges)) is expected


def test_the_layer_check_sees_a_lazy_upward_import(tmp_path):
    """A lazy import inside a function counts like a top-level one."""
    pkg = tmp_path / "uci_checkers" / "rules"
    pkg.mkdir(parents=True)
    source = "def f():\n    from ..engine.facade import Engine\n    return Engine\n"
    (pkg / "x.py").write_text(source)
    modules = {"uci_checkers.rules.x": pkg / "x.py", "uci_checkers.engine.facade": tmp_path / "f.py"}
    deps = imports_of("uci_checkers.rules.x", pkg / "x.py", modules)
    assert deps == {"uci_checkers.engine.facade"}
    assert layer_of("uci_checkers.engine.facade") > layer_of("uci_checkers.rules.x")
