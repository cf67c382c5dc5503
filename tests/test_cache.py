"""The compile cache: edits anywhere in the package are noticed, read-only installs work, stale dirs are pruned.

numba keys a cached function on its own source file only; ``util.jit`` keys the cache
directory on a hash of every package source instead.  These tests run a copy of
the package in fresh subprocesses and look at what the kernels compute and at
numba's own cache hit/miss counters.
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from uci_checkers.util import jit as _jit

PACKAGE = REPO_ROOT / "uci_checkers"


def copy_package(dst: Path) -> Path:
    """A copy of the package sources (no caches) under ``dst/uci_checkers``, as an install would have."""
    pkg = dst / "uci_checkers"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return pkg


def clean_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("UCI_CHECKERS_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH", "NUMBA_CACHE_DIR")}
    for name in ("xdg", "home", "tmp"):
        (root / name).mkdir(exist_ok=True)
    env.update(PYTHONPATH=str(root), XDG_CACHE_HOME=str(root / "xdg"), HOME=str(root / "home"),
               TMPDIR=str(root / "tmp"), UCI_CHECKERS_CACHE_PRUNE="0")
    return env


def run_json(root: Path, script: str, env: dict[str, str], preexec_fn=None) -> dict:
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600, preexec_fn=preexec_fn)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


ZOBRIST_SCRIPT = r"""
import json
from uci_checkers.util import jit as _jit
from uci_checkers.rules import bitboard as bb, movegen as mg
from uci_checkers.rules.position import Position
p = Position.start()
h = int(mg.hash_position(p.black, p.white, p.kings, p.turn))
# The same key from the Python-level table, which is always fresh.
expected = 0
for sq in range(1, 13):
    expected ^= int(bb.ZOBRIST_PIECE[0, bb.SQUARE_TO_BIT[sq - 1]])
for sq in range(21, 33):
    expected ^= int(bb.ZOBRIST_PIECE[1, bb.SQUARE_TO_BIT[sq - 1]])
st = mg.hash_position.stats
print(json.dumps({"cache_dir": str(_jit.CACHE_DIR), "hash": h, "expected": expected,
                  "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values())}))
"""


def test_edit_of_a_constant_in_another_module_is_not_served_stale(tmp_path):
    """hash_position (movegen.py) freezes the Zobrist table of bitboard.py: editing the seed there must recompile."""
    pkg = copy_package(tmp_path)
    env = clean_env(tmp_path)
    first = run_json(tmp_path, ZOBRIST_SCRIPT, env)
    assert first["hash"] == first["expected"]
    assert Path(first["cache_dir"]).parent == pkg / "__pycache__"
    second = run_json(tmp_path, ZOBRIST_SCRIPT, env)
    assert second["hash"] == first["hash"]
    assert second["hits"] >= 1 and second["misses"] == 0, "the warm run must load from the cache"
    source = (pkg / "rules" / "bitboard.py").read_text()
    assert "_splitmix64(0x5EED_C4EC_3E25)" in source
    (pkg / "rules" / "bitboard.py").write_text(source.replace("_splitmix64(0x5EED_C4EC_3E25)", "_splitmix64(0x5EED_0000_0001)"))
    third = run_json(tmp_path, ZOBRIST_SCRIPT, env)
    assert third["expected"] != first["expected"]
    assert third["hash"] == third["expected"], "stale machine code: the kernel kept the old Zobrist table"
    assert third["misses"] >= 1 and third["cache_dir"] != first["cache_dir"]


CAPTURES_SCRIPT = r"""
import json
import numpy as np
from uci_checkers.rules import movegen as mg
from uci_checkers.rules.position import Position
p = Position.from_fen("B:W14,15,22,23,K7:B1,2,18,19,K26")
moves = np.zeros(64, dtype=np.int64)
paths = np.zeros(64, dtype=np.int64)
n = int(mg.gen_captures(p.black, p.white, p.kings, p.turn, moves, paths, 0))
print(json.dumps({"n": n, "overloads": len(mg._gen_chains.signatures)}))
"""


def test_a_first_compile_cut_short_leaves_a_cache_that_loads(tmp_path):
    """A first run that ends while compiling (an engine quit during its warm-up) can leave the recursive
    capture-chain kernel in the cache without its caller.  The next process compiles the caller and loads
    the callee from the cache: with two overloads of the callee, one calling the other by a name only the
    first process knew, that load aborted the process (LLVM "Symbol not found"); one overload loads."""
    pkg = copy_package(tmp_path)
    env = clean_env(tmp_path)
    first = run_json(tmp_path, CAPTURES_SCRIPT, env)
    assert first["n"] >= 2 and first["overloads"] == 1
    cache = next((pkg / "__pycache__").glob("numba-*"))
    callers = [f for f in cache.iterdir() if f.name.startswith("movegen.gen_captures-")]
    assert callers and any(f.name.startswith("movegen._gen_chains-") for f in cache.iterdir())
    for f in callers:                 # as if the first process had ended before it saved the caller
        f.unlink()
    again = run_json(tmp_path, CAPTURES_SCRIPT, env)
    assert again == first


PROBE_OUTER = '''
from .util.jit import kernel
from .probe_inner import inner


@kernel
def outer(x):
    return inner(x) + 1
'''
PROBE_INNER = '''
from .util.jit import kernel


@kernel
def inner(x):
    return x * {factor}
'''
PROBE_SCRIPT = r"""
import json
from uci_checkers.probe_outer import outer
st = outer.stats
print(json.dumps({"value": int(outer(10)), "hits": sum(st.cache_hits.values()),
                  "misses": sum(st.cache_misses.values())}))
"""


def test_edit_of_a_callee_in_another_file_is_not_served_stale(tmp_path):
    """A kernel calling a kernel of another file.

    With plain ``njit(cache=True)`` this very sequence prints 21 after the edit (checked with numba 0.68):
    the caller's cache entry is keyed on its own file only and keeps the old inlined callee.
    """
    pkg = tmp_path / "uci_checkers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copytree(PACKAGE / "util", pkg / "util", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (pkg / "probe_outer.py").write_text(PROBE_OUTER)
    (pkg / "probe_inner.py").write_text(PROBE_INNER.format(factor=2))
    env = clean_env(tmp_path)
    assert run_json(tmp_path, PROBE_SCRIPT, env)["value"] == 21
    warm = run_json(tmp_path, PROBE_SCRIPT, env)
    assert warm["value"] == 21 and warm["hits"] == 1 and warm["misses"] == 0
    (pkg / "probe_inner.py").write_text(PROBE_INNER.format(factor=3))
    edited = run_json(tmp_path, PROBE_SCRIPT, env)
    assert edited["value"] == 31, "stale machine code: outer() still uses the old inner()"
    assert edited["misses"] == 1


READ_ONLY_SCRIPT = r"""
import json, os, tempfile
from uci_checkers.util import jit as _jit
from uci_checkers.rules import movegen as mg
from uci_checkers.rules.position import Position
try:
    tempfile.TemporaryFile(dir=_jit.PACKAGE_DIR).close()
    package_writable = True
except OSError:
    package_writable = False
p = Position.start()
n = int(mg.count_moves(p.black, p.white, p.kings, p.turn))
st = mg.count_moves.stats
print(json.dumps({"cache_dir": str(_jit.CACHE_DIR), "moves": n, "package_writable": package_writable,
                  "source_hash": _jit.SOURCE_HASH,
                  "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values())}))
"""


def _drop_root_file_powers() -> None:
    """preexec_fn: remove CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set.

    Root then obeys permission bits like anyone else (after exec its capabilities
    are limited by the bounding set), so a chmod a-w folder is really read-only.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _make_read_only(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)


def _make_writable(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)


def test_read_only_package_caches_elsewhere(tmp_path):
    pkg = copy_package(tmp_path)
    env = clean_env(tmp_path)
    preexec = None
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        if not sys.platform.startswith("linux"):
            pytest.skip("running as root and cannot drop the power to write read-only files on this platform")
        preexec = _drop_root_file_powers
    _make_read_only(pkg)
    try:
        try:
            first = run_json(tmp_path, READ_ONLY_SCRIPT, env, preexec_fn=preexec)
        except (OSError, subprocess.SubprocessError) as exc:  # e.g. no CAP_SETPCAP in this container
            pytest.skip(f"cannot run a subprocess without write access as this user: {exc}")
        if first["package_writable"]:
            pytest.skip("the package copy stayed writable (privileges could not be dropped); "
                        "test_cache_dir_chooser_falls_back covers the chooser")
        assert first["moves"] == 7
        xdg_dir = Path(first["cache_dir"])
        assert xdg_dir.parent == tmp_path / "xdg" / "uci_checkers", first
        assert xdg_dir.name == f"numba-{first['source_hash']}"
        assert any(xdg_dir.glob("movegen.count_moves-*.nbi")), "nothing was cached in the XDG directory"
        assert not (pkg / "__pycache__").exists() or not any((pkg / "__pycache__").glob("numba-*"))
        second = run_json(tmp_path, READ_ONLY_SCRIPT, env, preexec_fn=preexec)
        assert second["cache_dir"] == first["cache_dir"] and second["moves"] == 7
        assert second["hits"] >= 1 and second["misses"] == 0, "the read-only install must reuse its cache"
    finally:
        _make_writable(pkg)


def test_cache_dir_chooser_falls_back(tmp_path):
    """Direct test of the chooser (independent of the user running the tests)."""
    h = "0123456789abcdef"
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    cands = _jit.cache_dir_candidates(tmp_path / "pkg", h, {**env, "UCI_CHECKERS_CACHE_DIR": str(tmp_path / "own")})
    assert cands[:3] == [tmp_path / "own" / h, tmp_path / "pkg" / "__pycache__" / f"numba-{h}",
                         tmp_path / "xdg" / "uci_checkers" / f"numba-{h}"]
    assert cands[3].name == f"numba-{h}"
    # A writable package folder is used first.
    (tmp_path / "pkg").mkdir()
    assert _jit._choose_cache_dir(tmp_path / "pkg", h, env) == tmp_path / "pkg" / "__pycache__" / f"numba-{h}"
    # A package "folder" that cannot hold a __pycache__ (here: a file) falls back to XDG.
    blocker = tmp_path / "blocked"
    blocker.write_text("not a directory")
    assert _jit._choose_cache_dir(blocker, h, env) == tmp_path / "xdg" / "uci_checkers" / f"numba-{h}"
    # ... and when XDG is blocked too, to the temporary directory.
    (tmp_path / "xdgfile").write_text("")
    chosen = _jit._choose_cache_dir(blocker, h, {"XDG_CACHE_HOME": str(tmp_path / "xdgfile")})
    assert chosen == cands[3]


def test_cache_dir_is_named_after_the_source_hash():
    assert len(_jit.SOURCE_HASH) == 16 and int(_jit.SOURCE_HASH, 16) >= 0
    assert _jit.SOURCE_HASH in _jit.CACHE_DIR.name


def test_prune_stale_caches(tmp_path):
    now = time.time()
    parent = tmp_path / "__pycache__"
    parent.mkdir()
    chosen = parent / "numba-ffffffffffffffff"
    chosen.mkdir()
    ages = {  # hours since last use
        "numba-0000000000000001": 0.1, "numba-0000000000000002": 0.2, "numba-0000000000000003": 0.5,
        "numba-0000000000000004": 0.9, "numba-0000000000000005": 0.95, "numba-0000000000000006": 0.99,
        "numba-0000000000000007": 2, "numba-0000000000000008": 3, "numba-0000000000000009": 200,
    }
    for name, hours in ages.items():
        d = parent / name
        d.mkdir()
        (d / "movegen.x-1.py311.nbi").write_text("x")
        os.utime(d, (now - hours * 3600, now - hours * 3600))
    others = [parent / "numba-notahash", parent / "something-else"]
    for d in others:
        d.mkdir()
        os.utime(d, (now - 1000 * 3600,) * 2)
    (parent / "numba-000000000000000a").write_text("a file, not a cache dir")
    deleted = _jit.prune_stale_caches(chosen, keep_newest=3, min_age=3600, max_age=7 * 86400, now=now)
    names = sorted(p.name for p in deleted)
    # Younger than an hour: kept even beyond the newest 3; older than an hour and not among the newest: deleted.
    assert names == ["numba-0000000000000007", "numba-0000000000000008", "numba-0000000000000009"]
    assert chosen.exists() and all(d.exists() for d in others)
    assert (parent / "numba-000000000000000a").is_file()
    # With plenty to keep, only the week-old one goes.
    for name in ("numba-0000000000000007", "numba-0000000000000009"):
        d = parent / name
        d.mkdir()
        os.utime(d, (now - ages[name] * 3600,) * 2)
    deleted = _jit.prune_stale_caches(chosen, keep_newest=20, now=now)
    assert [p.name for p in deleted] == ["numba-0000000000000009"]


def test_prune_under_explicit_cache_dir_only_touches_hash_named_dirs(tmp_path):
    now = time.time()
    chosen = tmp_path / "ffffffffffffffff"
    chosen.mkdir()
    old = tmp_path / "0000000000000001"
    keep = tmp_path / "numba-0000000000000002"
    user = tmp_path / "my-data"
    for d in (old, keep, user):
        d.mkdir()
        os.utime(d, (now - 30 * 86400,) * 2)
    assert _jit.prune_stale_caches(chosen, now=now) == [old]
    assert keep.exists() and user.exists()


def test_cache_key_covers_every_kernel_module_and_what_it_imports():
    pkg = _jit.PACKAGE_DIR
    names = {p.relative_to(pkg).with_suffix("").as_posix() for p in _jit.kernel_sources()}
    for path in pkg.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "util.jit import" in text or "from ..util import jit" in text:
            rel = path.relative_to(pkg).with_suffix("").as_posix()
            assert rel in names, f"{rel} compiles kernels but does not key the cache"
    # bitboard's constant tables are frozen into the kernels that read them
    assert {"util/jit", "rules/bitboard", "rules/movegen", "search/alphabeta"} <= names
    # pure-Python front ends do not key it: editing them must not force a recompile
    assert not names & {"protocols/uci", "engine/facade", "protocols/hub", "client", "tools/analyse", "cli"}


def test_editing_a_front_end_keeps_the_cache_but_editing_a_kernel_module_changes_it(tmp_path):
    root = tmp_path / "copy"
    pkg = copy_package(root)
    probe = "import json; from uci_checkers.util import jit as _jit; print(json.dumps({'hash': _jit.SOURCE_HASH}))"
    env = clean_env(root)
    before = run_json(root, probe, env)["hash"]
    with open(pkg / "protocols" / "uci.py", "a") as f:
        f.write("\n# a comment in a front end\n")
    assert run_json(root, probe, env)["hash"] == before
    with open(pkg / "rules" / "movegen.py", "a") as f:
        f.write("\n# a comment in a kernel module\n")
    assert run_json(root, probe, env)["hash"] != before


def test_kernel_sources_equal_the_closure_over_the_whole_import_graph():
    """kernel_sources parses only what it reaches (it runs at every start); the slow, whole-package graph
    gives the same set."""
    from uci_checkers.util.imports import import_graph, package_modules

    modules = package_modules(_jit.PACKAGE_DIR)
    graph = import_graph(modules)
    me = "uci_checkers.util.jit"
    todo, seen = [name for name, deps in graph.items() if me in deps] + [me], set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    for name in list(seen):
        parts = name.split(".")
        seen.update(".".join(parts[:k]) for k in range(1, len(parts)) if ".".join(parts[:k]) in modules)
    assert _jit.kernel_sources() == sorted(modules[name] for name in seen)
