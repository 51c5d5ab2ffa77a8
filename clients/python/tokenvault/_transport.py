"""HTTP/1.1 over the daemon's Unix socket: the one place this package sends a request."""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, TypeVar
from urllib.parse import quote

from .errors import ConnectionFailed, ProblemError, UnexpectedResponse
from .stream import Stream

Query = Sequence[Tuple[str, Optional[str]]]
T = TypeVar("T")


class _UnixConnection(http.client.HTTPConnection):
    """`http.client`'s connection, connected to a Unix socket instead of a TCP port."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path
        # The socket, kept after `http.client` lets go of it (an answer with `Connection: close`
        # takes it over), so that a stream or an upstream answer can still be shut down.
        self.unix_socket: Optional[socket.socket] = None

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except BaseException:
            sock.close()
            raise
        self.sock = self.unix_socket = sock

    def end(self, response: http.client.HTTPResponse) -> None:
        """Ends the connection and its answer now, also for a thread blocked reading from it."""
        if self.unix_socket is not None:
            try:
                self.unix_socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        response.close()
        self.close()


class Reply:
    """A whole answer: status, headers (lower-cased names) and body."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = dict(headers)
        self.body = body

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as error:
            raise UnexpectedResponse(self.status, f"the body is not JSON: {error}") from None

    def decode(self, build: Callable[[Any], T]) -> T:
        """The body as `build` makes it of the JSON; a document without what the API promises is
        an `UnexpectedResponse`, not a `KeyError`."""
        document = self.json()
        try:
            return build(document)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise UnexpectedResponse(self.status, f"the document lacks {error}") from None


class Transport:
    """Sends requests to the daemon, one connection per request (a Unix socket connects in
    microseconds; nothing is kept between calls, so a client is safe to share between threads)."""

    def __init__(self, socket_path: str, timeout: float) -> None:
        self.socket_path = socket_path
        self.timeout = timeout

    @staticmethod
    def credential_path(credential_id: str, suffix: str = "") -> str:
        """`/v1/credentials/{namespace}/{name}{suffix}`, each part percent-encoded."""
        parts = credential_id.split("/")
        if len(parts) != 2 or any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"{credential_id!r} is not a credential id (namespace/name)")
        return f"/v1/credentials/{quote(parts[0], safe='')}/{quote(parts[1], safe='')}{suffix}"

    @staticmethod
    def target(path: str, query: Query = ()) -> str:
        pairs = [f"{quote(name, safe='')}={quote(value, safe='')}" for name, value in query if value is not None]
        return path + ("?" + "&".join(pairs) if pairs else "")

    def open(
        self,
        method: str,
        target: str,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
    ) -> Tuple[_UnixConnection, http.client.HTTPResponse]:
        """Sends the request and returns the connection and the answer, its body unread (the
        caller closes the connection). `body`: bytes, a file object, or an iterable of bytes
        (sent chunked)."""
        sent = dict(headers or {})
        for name, value in sent.items():
            if any(c in str(name) + str(value) for c in "\r\n\0"):
                raise ValueError(f"header {str(name)[:100]!r} has a line break or NUL in its name or value")
        connection = _UnixConnection(self.socket_path, self.timeout if timeout is None else timeout)
        try:
            chunked = body is not None and not isinstance(body, (bytes, bytearray)) and not hasattr(body, "read")
            connection.request(method, target, body=body, headers=sent, encode_chunked=chunked)
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise ConnectionFailed(self.socket_path, error) from None
        except BaseException:
            connection.close()
            raise

    @staticmethod
    def refuse(connection: _UnixConnection, response: http.client.HTTPResponse) -> ProblemError:
        """The daemon's problem in an answer that is not the one asked for (read up to 1 MiB),
        the connection closed."""
        try:
            return ProblemError.from_reply(response.status, response.getheader("content-type", ""), response.read(1 << 20))
        except (OSError, http.client.HTTPException) as error:
            return ProblemError(response.status, f"http_{response.status}", detail=f"the answer broke off: {error}")
        finally:
            connection.end(response)

    def send(
        self,
        method: str,
        path: str,
        query: Query = (),
        json_body: Any = None,
        raw_body: Optional[bytes] = None,
        expect: Sequence[int] = (200,),
        timeout: Optional[float] = None,
    ) -> Reply:
        """A request whose answer is read whole; a status outside `expect` raises the daemon's
        problem as a `ProblemError` subclass."""
        headers = {"Accept": "application/json"}
        body = raw_body
        if json_body is not None:
            body = json.dumps(json_body, separators=(",", ":")).encode()
        if body is not None:
            headers["Content-Type"] = "application/json"
        connection, response = self.open(method, self.target(path, query), body, headers, timeout)
        try:
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise ConnectionFailed(self.socket_path, error) from None
        finally:
            connection.close()
        reply = Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        if reply.status not in expect:
            raise ProblemError.from_reply(reply.status, reply.headers.get("content-type", ""), data)
        return reply

    def stream(self, path: str, decode: Callable[[Any], T]) -> Stream[T]:
        """An NDJSON answer as a `Stream`, its request sent now. A stream waits as long as the
        daemon is quiet: the client's timeout covers the connect and the answer's head only."""
        connection, response = self.open("GET", path, headers={"Accept": "application/x-ndjson"})
        if response.status != 200:
            raise self.refuse(connection, response)
        if connection.unix_socket is not None:
            connection.unix_socket.settimeout(None)
        return Stream(connection, response, decode, self.socket_path)
