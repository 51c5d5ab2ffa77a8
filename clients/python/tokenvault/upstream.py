"""The answer of a call made through the daemon's proxy."""

from __future__ import annotations

import http.client
from typing import TYPE_CHECKING, Iterator, List, Optional, Tuple

if TYPE_CHECKING:
    from ._transport import _UnixConnection


class UpstreamResponse:
    """The upstream's status, headers and body, the body still streaming from the daemon. Read it
    (`read`, `iter_bytes`) and close it, or use it in a `with` block."""

    def __init__(
        self, connection: "_UnixConnection", response: http.client.HTTPResponse, refreshed: bool
    ) -> None:
        self._connection = connection
        self._response = response
        self.status: int = response.status
        self.reason: str = response.reason
        self.headers: List[Tuple[str, str]] = [
            (name, value) for name, value in response.getheaders() if name.lower() != "tokenvault-proxy"
        ]
        # The token was refused once, refreshed, and the call sent again.
        self.refreshed = refreshed

    def header(self, name: str) -> Optional[str]:
        """The first header named `name` (any case)."""
        lowered = name.lower()
        return next((value for key, value in self.headers if key.lower() == lowered), None)

    def read(self, amount: Optional[int] = None) -> bytes:
        return self._response.read(amount)

    def iter_bytes(self, chunk_size: int = 65536) -> Iterator[bytes]:
        while True:
            chunk = self._response.read(chunk_size)
            if not chunk:
                return
            yield chunk

    def close(self) -> None:
        self._connection.end(self._response)

    def __enter__(self) -> "UpstreamResponse":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
