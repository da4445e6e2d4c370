"""Structured logging into the host's logs, where each line carries the plugin and the
parent: ``log.info("scaled", replicas=3)``.

In the component the lines go through the contract's ``log`` import (the host keeps at
most 1000 lines a call). In native tests they go to stderr and are kept in
``Outcome.logs``.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Any


class Level(Enum):
    TRACE = "trace"
    DEBUG = "debug"
    INFO = "info"
    WARN = "warn"
    ERROR = "error"


Line = tuple[Level, str, list[tuple[str, str]]]
"""One logged line: level, message, fields."""

_captured: list[Line] = []


def log(level: Level, message: str, **fields: Any) -> None:
    """Log ``message`` with key/value ``fields`` (values are written with ``str``)."""
    pairs = [(key, str(value)) for key, value in fields.items()]
    if sys.platform == "wasi":
        from wit_world.imports import log as wit  # the bindings exist only in the component

        wit.log(wit.Level[level.name], message, pairs)
    else:
        text = " ".join(f"{k}={v!r}" for k, v in pairs)
        print(f"[{level.name}] {message} {text}".rstrip(), file=sys.stderr)
        _captured.append((level, message, pairs))


def trace(message: str, **fields: Any) -> None:
    log(Level.TRACE, message, **fields)


def debug(message: str, **fields: Any) -> None:
    log(Level.DEBUG, message, **fields)


def info(message: str, **fields: Any) -> None:
    log(Level.INFO, message, **fields)


def warn(message: str, **fields: Any) -> None:
    log(Level.WARN, message, **fields)


def error(message: str, **fields: Any) -> None:
    log(Level.ERROR, message, **fields)
