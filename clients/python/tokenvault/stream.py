"""A stream of NDJSON lines from the daemon (`watch`, `events`)."""

from __future__ import annotations

import http.client
import json
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, TypeVar

from .errors import ConnectionFailed, UnexpectedResponse

if TYPE_CHECKING:
    from ._transport import _UnixConnection

T = TypeVar("T")


class Stream(Generic[T], Iterator[T]):
    """The daemon's lines, decoded one at a time as they arrive. The request is made when the
    stream is created, so nothing that happens after that is missed. Iteration ends when the
    daemon ends the stream (the credential was deleted, the daemon stops); `close` (or a `with`
    block) ends it early."""

    def __init__(
        self,
        connection: "_UnixConnection",
        response: http.client.HTTPResponse,
        decode: Callable[[Any], T],
        socket_path: str,
    ) -> None:
        self._connection = connection
        self._response = response
        self._decode = decode
        self._socket_path = socket_path
        self._closed = False

    def __iter__(self) -> "Stream[T]":
        return self

    def __next__(self) -> T:
        while not self._closed:
            try:
                line = self._response.readline()
            except Exception as error:
                if self._closed:  # closed from another thread while this one read
                    break
                self.close()
                if isinstance(error, (OSError, http.client.HTTPException)):
                    raise ConnectionFailed(self._socket_path, error) from None
                raise
            if not line:
                break
            if line.strip():
                try:
                    return self._decode(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    self.close()
                    raise UnexpectedResponse(200, "a stream line is not what the API promises") from None
        self.close()
        raise StopIteration

    def close(self) -> None:
        """Ends the stream; safe from another thread than the one iterating (which then stops)."""
        self._closed = True
        self._connection.end(self._response)

    def __enter__(self) -> "Stream[T]":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
