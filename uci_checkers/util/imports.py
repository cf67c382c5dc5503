"""The package's own import graph, read from the sources with ``ast`` (nothing is imported).

One reader serves two users: the compile cache key (:func:`uci_checkers.util.jit.kernel_sources`)
and the layer check (``tests/test_layers.py``).  Every import counts, lazy ones inside functions
included: a lazy import still ties the two modules together.
"""
from __future__ import annotations

import ast
from pathlib import Path

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


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that module ``name`` (file ``path``) imports.

    ``from x import y`` counts ``x.y`` when that is a module, else ``x``.
    """
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package modules it imports."""
    return {name: imports_of(name, path, modules) for name, path in modules.items()}
