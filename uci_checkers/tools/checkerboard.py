"""Build and install the CheckerBoard bridge (``uci-checkers checkerboard``).

CheckerBoard, the Windows GUI English-checkers players use, hosts engines only as DLLs
with its engine API.  ``bridge/checkerboard/`` (C99) is such a DLL that talks
``protocol.md`` to this engine over pipes.  This tool compiles it (a Windows x64 DLL
with mingw-w64, or a native shared library of the same source for tests), lists a
DLL's exports, and installs the DLL with its ini file into CheckerBoard's engines folder::

    uci-checkers checkerboard build [--target windows|native] [--out DIR] [--cc COMPILER]
    uci-checkers checkerboard install ENGINES_DIR [--dll FILE] [--command CMD] [--directory DIR]
                                      [--option NAME=VALUE ...]
    uci-checkers checkerboard exports FILE.dll

The C sources are in the repository (``bridge/checkerboard/``), so ``build`` runs from a
checkout (an editable install).

Exit status (the tools' convention, :mod:`uci_checkers.util.commandline`): 0 done; 1 the build
failed (no compiler, or it refused the sources) or ``exports`` found a required name missing;
2 a usage or input error (an engines folder that is not one, a ``--dll`` that does not exist or
is not a Windows DLL with the engine API); errors are one line on stderr.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

from ..util.exitcodes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser, os_error_text
from ..util.atomicfile import write_bytes_atomic
from ..util.cbuild import (COMMON_FLAGS, CBuildError, DllReadError, bridge_root, compile_c, default_compiler,
                           native_link_flags, pe_header)

LIBRARY_NAME = "uci_checkers_cb"
SOURCES = ("bridge.c", "board.c", "platform.c")
HELP_FILE = f"{LIBRARY_NAME}.htm"     # enginecommand "help" names it when it lies beside the DLL
HEADERS = ("cb_api.h", "board.h", "platform.h")
API_EXPORTS = ("getmove", "enginecommand", "islegal")


class BridgeBuildError(CBuildError):
    """The bridge could not be installed (the message says why, in one line)."""


class BridgeInputError(BridgeBuildError):
    """What the user gave cannot be used: a folder that is not one, a missing or foreign DLL."""


def source_dir() -> Path:
    """``bridge/checkerboard`` of the checkout this package is imported from."""
    return bridge_root() / "checkerboard"


def library_filename(target: str) -> str:
    return f"{LIBRARY_NAME}.dll" if target == "windows" else f"{LIBRARY_NAME}.so"


def build(target: str = "windows", out_dir: Optional[Path] = None, cc: Optional[str] = None) -> Path:
    """Compile the bridge for ``windows`` (x64 DLL) or ``native`` (this system's shared library)."""
    if target not in ("windows", "native"):
        raise BridgeBuildError(f"unknown target {target!r}: windows or native")
    src = source_dir()
    out_dir = Path(out_dir) if out_dir is not None else src / "build"
    out_dir.mkdir(parents=True, exist_ok=True)
    output = out_dir / library_filename(target)
    compiler = cc or default_compiler(target)
    sources = [str(src / name) for name in SOURCES]
    if target == "windows":
        # --kill-at: undecorated names even if a 32-bit toolchain is used; static libgcc: one file to copy
        command = [compiler, *COMMON_FLAGS, "-shared", "-s", "-static-libgcc", "-Wl,--kill-at", "-o", "@OUT@",
                   *sources]
    else:
        command = [compiler, *COMMON_FLAGS, "-D_POSIX_C_SOURCE=200809L", "-fPIC", "-fvisibility=hidden", "-shared",
                   "-o", "@OUT@", *sources, *native_link_flags()]
    compile_c(command, output)
    return output


def build_wine_probe(out_dir: Path, cc: Optional[str] = None) -> tuple[Path, Path]:
    """The Windows program that loads the DLL as CheckerBoard does, and its stand-in engine (for wine)."""
    src = source_dir()
    programs = []
    for name in ("wine_probe", "wine_engine"):
        output = Path(out_dir) / f"{name}.exe"
        compile_c([cc or default_compiler("windows"), *COMMON_FLAGS, "-o", "@OUT@", str(src / f"{name}.c")], output)
        programs.append(output)
    return programs[0], programs[1]


def pe_exports(path: Path) -> list[str]:
    """The exported names of a Windows DLL, read from its PE export directory."""
    return list(pe_header(path).exports)


def ini_text(command: str, directory: str = "", options: Optional[dict[str, str]] = None) -> str:
    """The bridge's ini file: the engine command, its working directory, engine options."""
    lines = ["; uci_checkers CheckerBoard bridge: how to start the engine (read when the DLL is loaded)",
             "[engine]", f"command = {command}", f"directory = {directory}", "", "[options]",
             "; any engine option of protocol.md, e.g. Hash = 64 or Skill Level = 10"]
    lines += [f"{name} = {value}" for name, value in (options or {}).items()]
    return "\n".join(lines) + "\n"


def default_engine_command() -> str:
    """This Python running this package: the engine as installed here."""
    exe = sys.executable
    return f'"{exe}" -m uci_checkers' if " " in exe else f"{exe} -m uci_checkers"


def install(engines_dir: Path, dll: Optional[Path] = None, command: Optional[str] = None,
            directory: str = "", options: Optional[dict[str, str]] = None) -> tuple[Path, Path]:
    """Copy the DLL into CheckerBoard's engines folder and write its ini (and help page) beside it."""
    engines_dir = Path(engines_dir)
    if not engines_dir.is_dir():
        raise BridgeInputError(f"{engines_dir} is not a directory (CheckerBoard's engines folder, "
                               "e.g. C:\\Program Files\\CheckerBoard\\engines)")
    if dll is not None and not Path(dll).is_file():
        raise BridgeInputError(f"--dll {dll}: no such file (build one with: uci-checkers checkerboard build)")
    given = dll is not None
    dll = Path(dll) if dll is not None else build("windows")
    missing = [name for name in API_EXPORTS if name not in pe_exports(dll)]
    if missing:
        error = BridgeInputError if given else BridgeBuildError
        raise error(f"{dll} does not export {', '.join(missing)}")
    target = engines_dir / f"{LIBRARY_NAME}.dll"
    write_bytes_atomic(target, dll.read_bytes())
    ini = engines_dir / f"{LIBRARY_NAME}.ini"
    write_bytes_atomic(ini, ini_text(command or default_engine_command(), directory, options).encode("utf-8"))
    help_page = Path(__file__).resolve().parents[2] / "bridge" / "checkerboard" / HELP_FILE
    if help_page.is_file():
        write_bytes_atomic(engines_dir / HELP_FILE, help_page.read_bytes())
    return target, ini


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..util.commandline import parse_option_args

    p = ToolParser(prog="uci-checkers checkerboard",
                   description="Build and install the CheckerBoard bridge DLL (bridge/checkerboard).")
    sub = p.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="compile the bridge")
    b.add_argument("--target", choices=("windows", "native"), default="windows",
                   help="windows: x64 DLL with mingw-w64 (default); native: this system's shared library")
    b.add_argument("--out", type=Path, default=None, help="output directory (default bridge/checkerboard/build)")
    b.add_argument("--cc", default=None, help="the C compiler")
    i = sub.add_parser("install", help="copy the DLL and its ini into CheckerBoard's engines folder")
    i.add_argument("engines_dir", type=Path)
    i.add_argument("--dll", type=Path, default=None, help="an already built DLL (default: build one)")
    i.add_argument("--command", default=None, help="engine command line (default: this Python -m uci_checkers)")
    i.add_argument("--directory", default="", help="the engine's working directory")
    i.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="engine option, repeatable")
    e = sub.add_parser("exports", help="list the names a DLL exports")
    e.add_argument("dll", type=Path)
    args = p.parse_args(list(argv) if argv is not None else None)
    try:
        if args.action == "build":
            output = build(args.target, args.out, args.cc)
            print(output)
            if args.target == "windows":
                print("exports:", " ".join(pe_exports(output)))
        elif args.action == "install":
            target, ini = install(args.engines_dir, args.dll, args.command, args.directory,
                                  parse_option_args(args.option))
            print(f"installed {target}\nsettings  {ini}\nIn CheckerBoard: Engine > Select... > {target.name}")
        else:
            names = pe_exports(args.dll)
            print("\n".join(names))
            missing = [name for name in API_EXPORTS if name not in names]
            if missing:
                print(f"uci-checkers checkerboard: {args.dll} lacks {', '.join(missing)}", file=sys.stderr)
                return EXIT_FAILED
    except (BridgeInputError, DllReadError, ValueError) as exc:
        print(f"uci-checkers checkerboard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CBuildError as exc:
        print(f"uci-checkers checkerboard: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:              # a folder or file that cannot be written: one line, not [Errno n]
        print(f"uci-checkers checkerboard: {os_error_text(exc)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
