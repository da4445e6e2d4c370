"""The development component: the interpreter and this SDK, without the plugin, which
it imports from the project's sources at each call. ``kubewasm dev`` runs a Python
project as this component while the plugin's own component builds, so a save acts
without a build.

componentize-py snapshots the interpreter after importing this module, and a component
reads no files at run time but those of a directory the host opens for it: only
``kubewasm dev`` opens one, read-only, at ``/project``: a copy of the project's sources
as they were at the save this version of the component stands for (``kubewasm run``
opens none, so this component cannot run there). Each call is a fresh instance of the
snapshot, so each call imports the plugin module from that copy. What the snapshot lacks
cannot be imported: the SDK and the standard library modules imported below are in it;
a module of the standard library not among them, or a package of the project's
virtualenv, is not, and the call fails saying so until the plugin's own component, which
has what it imports, takes over.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

SDK = (
    "admission conditions crd errors event export http kind kinds log manifest objects query request "
    "response validate"
).split()
"""The SDK's modules a plugin may import (all but the build's and the native tests')."""

PROJECT = "/project"
"""Where the host opens the copy of the project's sources, read-only."""
APP = "app"
"""The plugin module, as ``python -m kubewasm build app.py`` builds it."""

STDLIB = (
    "abc array base64 binascii bisect calendar collections collections.abc contextlib copy "
    "dataclasses datetime decimal difflib enum fnmatch fractions functools hashlib heapq hmac "
    "html inspect io ipaddress itertools json linecache math numbers operator os pathlib pprint "
    "random re secrets shlex statistics string struct textwrap time tokenize traceback types "
    "typing urllib.parse uuid warnings zlib"
).split()
"""The standard library modules a plugin may import in the development component."""

for _name in SDK:
    importlib.import_module(f"kubewasm.{_name}")
for _name in STDLIB:
    try:
        importlib.import_module(_name)
    except ImportError:  # not built for WASI
        pass


def _app() -> Any:
    """The project's plugin module, imported from the copy of its sources."""
    sys.dont_write_bytecode = True  # the directory is read-only
    if PROJECT not in sys.path:
        sys.path.insert(0, PROJECT)
    try:
        return importlib.import_module(APP)
    except ModuleNotFoundError as e:
        if e.name == APP:
            raise RuntimeError(
                f"no {APP}.py in {PROJECT}: this is kubewasm's development component, which only "
                f"`kubewasm dev` runs, giving it the project's sources"
            ) from None
        if e.name and e.name.split(".")[0] not in sys.modules and not _in_project(e.name):
            raise ModuleNotFoundError(
                f"{e.name} is not in kubewasm's development component (the SDK and common standard "
                f"library modules): this version waits for the plugin's own component, which "
                f"`kubewasm dev` is building with what it imports",
                name=e.name,
            ) from e
        raise


def _in_project(name: str) -> bool:
    """Whether ``name`` is a module of the project (a missing one is the author's error)."""
    import os

    top = os.path.join(PROJECT, name.split(".")[0])
    return os.path.exists(top + ".py") or os.path.isdir(top)


def _export(name: str) -> Any:
    """A fresh instance of the class ``@kubewasm.plugin`` defined as ``name`` in the app."""
    exported = getattr(_app(), name, None)
    if exported is None:
        raise TypeError(f"{APP}.py defines no plugin: put @kubewasm.plugin on its plugin class")
    return exported()


class PluginInfo:
    def describe(self) -> Any:
        return _export("PluginInfo").describe()


class Reconciler:
    def related(self, parent: str) -> Any:
        return _export("Reconciler").related(parent)

    def reconcile(self, request: Any) -> Any:
        return _export("Reconciler").reconcile(request)


class Handler:
    def handle(self, event: Any) -> Any:
        return _export("Handler").handle(event)


class Admission:
    def default(self, request: Any) -> Any:
        return _export("Admission").default(request)

    def validate(self, request: Any) -> Any:
        return _export("Admission").validate(request)

    def convert(self, request: Any) -> Any:
        return _export("Admission").convert(request)
