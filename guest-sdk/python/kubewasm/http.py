"""Outbound HTTP, within what the operator granted: a small ``requests``-like client over
the contract's ``http.send`` import.

    from kubewasm import http

    response = http.post(url, json={"text": "hello"}, timeout=5)
    response.raise_for_status()
    answer = response.json()

A request is sent only when its URL is allowed both by the manifest's ``outbound`` and by
the operator's grant (``[http] allow`` in the plugin's settings); otherwise, and when the
host has no response for it, the call raises a :class:`RequestError` whose message is the
host's reason (for a denied URL, the setting that would allow it). Every error here is a
:class:`kubewasm.Error`, retryable when sending again later may succeed: one that the
plugin does not catch reaches the host as the call's error.

Bodies are whole (no streaming); the host caps the response's size and each request's
time, and counts the requests of a call against its budget. In native tests
(:mod:`kubewasm.testing`) the requests are answered from canned responses and recorded.
"""

from __future__ import annotations

import json as _json
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Union
from urllib.parse import urlencode

from .errors import Error, PermanentError

Body = Union[bytes, bytearray, str, Mapping[str, Any], None]
HeaderValues = Union[Mapping[str, str], Iterable[tuple[str, str]], None]


class RequestError(Error):
    """A request that got no response: ``kind`` is why (``denied``, ``timeout``,
    ``too-large``, ``too-many-requests`` or ``failed``), ``reason`` the host's own words,
    naming the URL's origin (for a denied URL, the setting that would allow it).
    Retryable for ``timeout`` and ``failed``: sending again later may succeed."""

    kind = "failed"

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"HTTP request {self.kind}: {reason}", retryable=self.kind in ("timeout", "failed"))


class Denied(RequestError):
    """The URL is outside the manifest's ``outbound`` or the operator's grant (the message
    names the setting that would allow it), resolves only to refused addresses, or a
    redirect left the grant. Permanent: the settings must change."""

    kind = "denied"


class Timeout(RequestError):
    """No complete response within the timeout. Retryable."""

    kind = "timeout"


class TooLarge(RequestError):
    """The response body exceeds the host's cap. Permanent."""

    kind = "too-large"


class TooManyRequests(RequestError):
    """The call has used up its request budget (``[http] max-requests``). Permanent: the
    same call would send as many requests again."""

    kind = "too-many-requests"


class Failed(RequestError):
    """Anything else: a malformed request, DNS, connection, TLS, protocol. Retryable."""

    kind = "failed"


ERRORS: dict[str, type[RequestError]] = {e.kind: e for e in (Denied, Timeout, TooLarge, TooManyRequests, Failed)}
"""The error class of each case of the contract's ``http-error``."""


class HTTPError(Error):
    """A response whose status is an error (:meth:`Response.raise_for_status`):
    retryable for 408, 425, 429 and 5xx, permanent for the other 4xx."""

    def __init__(self, response: Response):
        self.response = response
        status = response.status_code
        super().__init__(
            f"{response.request_method} {response.url}: HTTP {status}{_excerpt(response.content)}",
            retryable=status in (408, 425, 429) or status >= 500,
        )


def _excerpt(body: bytes) -> str:
    """The start of an error response's body, for the message."""
    text = body[:200].decode("utf-8", "replace").strip()
    return f": {text}" if text else ""


class Headers(Mapping[str, str]):
    """Response headers: a mapping whose keys match in any case; a header sent more than
    once reads as its values joined with ``", "`` (:meth:`get_all` lists them)."""

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()):
        self._pairs = [(str(k), str(v)) for k, v in pairs]

    def get_all(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self._pairs if k.lower() == name]

    def __getitem__(self, name: str) -> str:
        values = self.get_all(name)
        if not values:
            raise KeyError(name)
        return ", ".join(values)

    def __iter__(self) -> Iterator[str]:
        seen: dict[str, None] = {}
        for k, _ in self._pairs:
            seen.setdefault(k.lower())
        return iter(seen)

    def __len__(self) -> int:
        return len({k.lower() for k, _ in self._pairs})

    def items_all(self) -> list[tuple[str, str]]:
        """Every header as it came, in order."""
        return list(self._pairs)

    def __repr__(self) -> str:
        return f"Headers({self._pairs!r})"


@dataclass
class Response:
    """A response, whatever its status."""

    status_code: int
    headers: Headers
    content: bytes
    url: str = ""
    """The URL requested (the host follows redirects itself)."""
    request_method: str = "GET"

    @property
    def ok(self) -> bool:
        """Whether the status is below 400."""
        return self.status_code < 400

    @property
    def text(self) -> str:
        """The body as UTF-8 text (invalid bytes replaced)."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON; a body that is not JSON raises a permanent
        :class:`kubewasm.Error` naming the request."""
        try:
            return _json.loads(self.content)
        except ValueError as e:
            raise PermanentError(f"{self.request_method} {self.url}: the response is not JSON: {e}") from None

    def raise_for_status(self) -> Response:
        """Raises :class:`HTTPError` for a 4xx or 5xx status; returns the response
        otherwise, so that calls chain."""
        if not self.ok:
            raise HTTPError(self)
        return self


@dataclass
class Request:
    """A request as the host receives it (what :mod:`kubewasm.testing` records)."""

    method: str
    url: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    timeout_ms: Optional[int] = None

    def header(self, name: str) -> Optional[str]:
        """The first value of header ``name`` (any case)."""
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return _json.loads(self.body)


def _wit() -> Any:
    from wit_world.imports import http as wit  # generated: in the component, or by kubewasm.testing

    return wit


def _send_to_host(request: Any) -> Any:
    """Sends a WIT ``http-request`` through the contract's import."""
    return _wit().send(request)


def _no_network(request: Any) -> Any:
    from componentize_py_types import Err

    raise Err(
        _wit().HttpError_Denied(
            f"{request.method} {request.url}: no network outside a component; "
            "kubewasm.testing answers requests from canned responses (`http=[...]`)"
        )
    )


transport: Callable[[Any], Any] = _send_to_host if sys.platform == "wasi" else _no_network
"""Where WIT requests go: the host in the component, :mod:`kubewasm.testing`'s canned
responses in native tests."""


def error_from_wit(error: Any) -> RequestError:
    """The SDK's error for a case of the contract's ``http-error``."""
    wit = _wit()
    cases = {
        wit.HttpError_Denied: Denied,
        wit.HttpError_Timeout: Timeout,
        wit.HttpError_TooLarge: TooLarge,
        wit.HttpError_TooManyRequests: TooManyRequests,
        wit.HttpError_Failed: Failed,
    }
    return cases.get(type(error), Failed)(str(error.value))


def error_to_wit(error: RequestError) -> Any:
    """The contract's ``http-error`` case of ``error`` (for :mod:`kubewasm.testing`)."""
    wit = _wit()
    cases = {
        "denied": wit.HttpError_Denied,
        "timeout": wit.HttpError_Timeout,
        "too-large": wit.HttpError_TooLarge,
        "too-many-requests": wit.HttpError_TooManyRequests,
        "failed": wit.HttpError_Failed,
    }
    return cases[error.kind](error.reason)


def send(request: Request) -> Response:
    """Sends ``request`` as it is and returns the response, whatever its status; raises
    the :class:`RequestError` of the host's reason when there is none."""
    from componentize_py_types import Err

    wit = _wit()
    try:
        answer = transport(
            wit.HttpRequest(
                method=request.method,
                url=request.url,
                headers=list(request.headers),
                body=bytes(request.body),
                timeout_ms=request.timeout_ms,
            )
        )
    except Err as e:
        raise error_from_wit(e.value) from None
    return Response(
        status_code=answer.status,
        headers=Headers(answer.headers),
        content=bytes(answer.body),
        url=request.url,
        request_method=request.method,
    )


def request(
    method: str,
    url: str,
    *,
    params: Optional[Mapping[str, Any]] = None,
    headers: HeaderValues = None,
    data: Body = None,
    json: Any = None,
    timeout: Optional[float] = None,
) -> Response:
    """Sends one request and returns its response, whatever its status.

    ``params`` are added to the URL's query; ``data`` is the body (bytes, text sent as
    UTF-8, or a mapping sent form-encoded), or ``json`` a value sent as JSON, each with
    its ``Content-Type`` unless ``headers`` gives one; ``timeout`` in seconds, lowered to
    the host's own.
    """
    pairs = list(headers.items() if isinstance(headers, Mapping) else headers or [])
    names = {k.lower() for k, _ in pairs}

    def content_type(value: str) -> None:
        if "content-type" not in names:
            pairs.append(("Content-Type", value))

    if json is not None and data is not None:
        raise TypeError("give the body as `data` or as `json`, not both")
    if json is not None:
        body = _json.dumps(json, separators=(",", ":"), ensure_ascii=False).encode()
        content_type("application/json")
    elif isinstance(data, Mapping):
        body = urlencode(data, doseq=True).encode()
        content_type("application/x-www-form-urlencoded")
    elif isinstance(data, str):
        body = data.encode()
        content_type("text/plain; charset=utf-8")
    else:
        body = bytes(data or b"")
    if params:
        url = f"{url}{'&' if '?' in url else '?'}{urlencode(params, doseq=True)}"
    timeout_ms = None if timeout is None else max(1, min(2**32 - 1, int(timeout * 1000)))
    return send(Request(method.upper(), url, pairs, body, timeout_ms))


def get(url: str, **kwargs: Any) -> Response:
    return request("GET", url, **kwargs)


def head(url: str, **kwargs: Any) -> Response:
    return request("HEAD", url, **kwargs)


def post(url: str, **kwargs: Any) -> Response:
    return request("POST", url, **kwargs)


def put(url: str, **kwargs: Any) -> Response:
    return request("PUT", url, **kwargs)


def patch(url: str, **kwargs: Any) -> Response:
    return request("PATCH", url, **kwargs)


def delete(url: str, **kwargs: Any) -> Response:
    return request("DELETE", url, **kwargs)


__all__ = [
    "Denied",
    "Failed",
    "HTTPError",
    "Headers",
    "Request",
    "RequestError",
    "Response",
    "Timeout",
    "TooLarge",
    "TooManyRequests",
    "delete",
    "get",
    "head",
    "patch",
    "post",
    "put",
    "request",
    "send",
]
