"""The package's own import graph, read from the sources with ``ast`` (nothing is imported).

One reader serves two users: the compile cache key (:func:`uci_checkers.util.jit.kernel_sources`)
and the layer check (``tests/test_layers.py``).  Every import counts, lazy ones inside functions
included: a lazy import still ties the two modules together.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

PACKAGE_NAME = "uci_checkers"


def module_name(path: Path, package_dir: Path) -> str:
    """``uci_checkers.rules.movegen`` for ``<package_dir>/rules/movegen.py`` (a package for ``__init__.py``)."""
    parts = list(path.relative_to(package_dir).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE_NAME] + parts)


def package_modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package below ``package_dir``, by dotted name."""
    return {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py")) if "__pycache__" not in p.parts}


def imports_of(name: str, path: Path, modules: dict[str, Path], text: Optional[str] = None) -> set[str]:
    """The modules of ``modules`` that module ``name`` (file ``path``, or its ``text`` when already read)
    imports.  ``from x import y`` counts ``x.y`` when that is a module, else ``x``.
    """
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    source = path.read_text(encoding="utf-8") if text is None else text
    for node in _statements(ast.parse(source).body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names} & modules.keys()
            found.update(submodules or {target})
    return {m for m in found if m in modules and m != name}


def _statements(body: list[ast.stmt]):
    """Every statement, at any depth (function, class, if, try, with, loop bodies), but no expression:
    imports are statements, and skipping the expressions makes the walk several times faster."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if children:
                stack.extend(reversed(children))


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    return {name: imports_of(name, path, modules) for name, path in modules.items()}
