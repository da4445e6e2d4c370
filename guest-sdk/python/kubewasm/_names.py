"""Kubernetes name rules and Rust's `{:?}` quoting, shared by the manifest check and
the response check so that their messages are the host's, word for word."""

from __future__ import annotations


def byte_len(s: str) -> int:
    return len(s.encode("utf-8"))


def is_dns_label(s: str) -> bool:
    return (
        0 < byte_len(s) <= 63
        and all(c.isascii() and (c.islower() or c.isdigit() or c == "-") for c in s)
        and not s.startswith("-")
        and not s.endswith("-")
    )


def is_dns_subdomain(s: str) -> bool:
    return 0 < byte_len(s) <= 253 and all(is_dns_label(label) for label in s.split("."))


def _alnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def is_qualified_name(key: str) -> bool:
    """``[prefix/]name``, as label and annotation keys."""
    prefix, _, name = key.rpartition("/")
    return (
        (not prefix or is_dns_subdomain(prefix))
        and 0 < byte_len(name) <= 63
        and all(_alnum(c) or c in "-_." for c in name)
        and _alnum(name[0])
        and _alnum(name[-1])
    )


def is_label_value(v: str) -> bool:
    return v == "" or (is_qualified_name(v) and "/" not in v)


_ESCAPES = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"', "\0": "\\0"}


def debug(s: str) -> str:
    """``s`` quoted as Rust's ``{:?}`` prints a string (for the characters plugins use:
    printable text is kept, quotes, backslashes and control characters are escaped)."""
    out = []
    for c in s:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0:
            out.append(f"\\u{{{ord(c):x}}}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'
