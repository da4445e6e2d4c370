"""``python -m kubewasm build app.py -o plugin.wasm``: the plugin module and what it
imports, with a Python interpreter, as one component of the contract's ``plugin``
world (componentize-py, with the WIT shipped in this package).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from ._paths import WIT, WORLD


def python_path(app_dir: Path) -> list[str]:
    """Where the component's imports are found: the app's directory, the SDK, then this
    interpreter's path (PYTHONPATH, site-packages, editable installs) but for its
    standard library, which componentize-py brings for WASI. Only modules the plugin
    imports end up in the component."""
    stdlib = {Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib")}
    # The SDK itself, wherever it is installed (an editable install is an import hook,
    # not a directory on sys.path).
    sdk = Path(__file__).resolve().parent.parent
    paths = [str(app_dir), str(sdk)]
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        inside_stdlib = any(path == s or s in path.parents for s in stdlib) and "site-packages" not in path.parts
        if path.is_dir() and not inside_stdlib and str(path) not in paths:
            paths.append(str(path))
    return paths


def build(app: Path, output: Path) -> None:
    """Builds the component of the plugin module ``app`` (a ``.py`` file) into ``output``."""
    if app.suffix != ".py" or not app.is_file():
        raise SystemExit(f"{app}: not a Python file; give the plugin module, e.g. app.py")
    _componentize(app.stem, python_path(app.resolve().parent), output)


def dev_component(output: Path, cache: Path) -> None:
    """Puts the development component (:mod:`kubewasm.develop`) at ``output``: built once
    per version of this SDK, componentize-py and Python, and kept in ``cache``."""
    from importlib.metadata import version

    key = hashlib.sha256()
    sdk = Path(__file__).resolve().parent
    for path in sorted([*sdk.glob("*.py"), *WIT.glob("*.wit")]):
        key.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    key.update(f"componentize-py {version('componentize-py')} {sys.version}".encode())
    cached = cache / f"python-dev-{key.hexdigest()[:32]}.wasm"
    if not cached.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        partial = cache / f".{cached.name}.{os.getpid()}.partial"
        _componentize("kubewasm.develop", [str(sdk.parent)], partial)
        partial.replace(cached)
    output.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cached, output)


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/kubewasm``, else ``~/.cache/kubewasm``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubewasm"


def _componentize(app_name: str, path: list[str], output: Path) -> None:
    import componentize_py

    output.parent.mkdir(parents=True, exist_ok=True)
    componentize_py.componentize(
        wit_path=[str(WIT)],
        worlds=[WORLD],
        features=[],
        all_features=False,
        world_module=None,
        python_path=path,
        module_worlds=[],
        app_name=app_name,
        output_path=str(output),
        stub_wasi=False,
        import_interface_names=[],
        export_interface_names=[],
        full_names=False,
        intersect_world=None,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kubewasm", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="build a plugin module into a component")
    b.add_argument("app", type=Path, help="the plugin module, e.g. app.py")
    b.add_argument("-o", "--output", type=Path, help="the component (default: APP without .py, plus .wasm)")
    commands.add_parser("wit", help="print the directory of the contract's WIT files")
    d = commands.add_parser(
        "dev-component",
        help="build the development component `kubewasm dev` runs a project as while it builds it (cached)",
    )
    d.add_argument("-o", "--output", type=Path, required=True, help="where to put the component")
    d.add_argument("--cache", type=Path, default=None, help="where it is kept (default: ~/.cache/kubewasm)")
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.app, args.output or args.app.with_suffix(".wasm"))
        print(f"built {args.output or args.app.with_suffix('.wasm')}", file=sys.stderr)
    elif args.command == "dev-component":
        dev_component(args.output, args.cache or default_cache())
    elif args.command == "wit":
        print(WIT.resolve())
