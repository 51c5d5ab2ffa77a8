"""The daemon's local API, one method per route."""

from __future__ import annotations

import json
import os
import stat
from typing import IO, Any, Callable, Dict, Iterable, Iterator, Mapping, Optional, Tuple, TypeVar, Union

from ._transport import Transport
from .errors import UnexpectedResponse
from .models import (
    Credential,
    Deleted,
    Event,
    Exchanged,
    Page,
    SignedIn,
    SignIn,
    SignInStatus,
    Token,
    UsableCredential,
)
from .stream import Stream
from .upstream import UpstreamResponse

Body = Union[bytes, IO[bytes], Iterable[bytes]]
T = TypeVar("T")


PACKAGED_SOCKET = "/run/tokenvault/tokenvault.sock"
LOCAL_SOCKET = os.path.join(".tokenvault", "run", "tokenvault.sock")


def default_socket_path(packaged: str = PACKAGED_SOCKET) -> str:
    """`$TOKENVAULT_SOCKET` when set, else the packaged daemon's `/run/tokenvault/tokenvault.sock`
    when it exists, else `./.tokenvault/run/tokenvault.sock` (what `make run` starts) when
    `.tokenvault` and `.tokenvault/run` are directories of the caller's own that no one else can
    write, else the packaged path.

    The current directory may be anyone's (`/tmp`, a shared checkout): a socket another user
    planted there would receive the tokens a script stores. The same rule is in the CLI and the
    Go and Swift clients."""
    path = os.environ.get("TOKENVAULT_SOCKET")
    if path:
        return path
    if os.path.exists(packaged):
        return packaged
    if _own_unshared_directory(".tokenvault") and _own_unshared_directory(os.path.join(".tokenvault", "run")):
        # Absolute: a later chdir must not make the client dial an unchecked directory's socket.
        return os.path.abspath(LOCAL_SOCKET)
    return packaged


def _own_unshared_directory(path: str) -> bool:
    """A directory (not a link to one) owned by this process's user, which neither its group nor
    others may write."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(status.st_mode) and status.st_uid == os.geteuid() and status.st_mode & 0o022 == 0


class Client:
    """A client of one daemon. The daemon tells callers apart by their uid and groups, so this
    process's rights are what the daemon's access rules give its user. Thread-safe: nothing is
    kept between calls. Ids are `namespace/name`."""

    def __init__(self, socket_path: Optional[str] = None, timeout: float = 30.0) -> None:
        self._transport = Transport(socket_path or default_socket_path(), timeout)

    @property
    def socket_path(self) -> str:
        return self._transport.socket_path

    def health(self) -> Dict[str, Any]:
        """`GET /v1/health`: `status` (`ok` or `degraded`), the database, providers and courier."""
        return self._transport.send("GET", "/v1/health").json()

    def put(
        self,
        credential_id: str,
        provider: str,
        token: Union[Mapping[str, Any], str, bytes],
        labels: Optional[Mapping[str, str]] = None,
    ) -> Tuple[Credential, bool]:
        """Stores or replaces a credential; returns its metadata and whether it was created.
        `token`: the token response exactly as the provider or SDK gave it, as a dict or as JSON
        text (passed on untouched, so the daemon seals every field)."""
        if isinstance(token, Mapping):
            raw = json.dumps(token, separators=(",", ":")).encode()
        else:
            raw = token.encode() if isinstance(token, str) else bytes(token)
            if not raw.strip().startswith(b"{") or not raw.strip().endswith(b"}"):
                raise ValueError("the token must be a JSON object (the token response as the provider or SDK gave it)")
        head = json.dumps({"provider": provider, "labels": dict(labels or {})}, separators=(",", ":"))
        body = head[:-1].encode() + b',"token":' + raw + b"}"
        reply = self._transport.send(
            "PUT", Transport.credential_path(credential_id), raw_body=body, expect=(200, 201)
        )
        return reply.decode(Credential.from_json), reply.status == 201

    def show(self, credential_id: str) -> Credential:
        """The credential's metadata; never a secret."""
        return self._transport.send("GET", Transport.credential_path(credential_id)).decode(Credential.from_json)

    def token(self, credential_id: str, min_ttl: Optional[int] = None) -> Token:
        """The current access token. `min_ttl`: seconds it must stay valid; the daemon refreshes
        first when it would not, or raises `Conflict` (`token_expired`, `min_ttl_unreachable`)."""
        query = [("min_ttl", None if min_ttl is None else str(min_ttl))]
        reply = self._transport.send("GET", Transport.credential_path(credential_id, "/token"), query)
        return reply.decode(Token.from_json)

    def exchange_token(
        self,
        credential_id: str,
        audience: Union[str, Iterable[str], None] = None,
        resource: Union[str, Iterable[str], None] = None,
        scopes: Optional[Iterable[str]] = None,
        requested_token_type: Optional[str] = None,
    ) -> Token:
        """A token the provider derives from the credential's by RFC 8693 token exchange (for
        another `audience` or `resource`, narrower `scopes`), so a downstream API gets a token meant
        for it while the credential's own never leaves the daemon. The subject is always the stored
        access token: the refresh token never leaves the vault for an exchange. The daemon answers
        the same request (lists in any order) from memory while the derived token lives. The
        provider's refusal is `Unprocessable` (`provider_rejected`, the OAuth error such as
        `invalid_target` in `detail`)."""
        if isinstance(scopes, str):
            # list("read") would ask for the scopes r, e, a and d.
            raise TypeError("scopes must be a list of strings, not a string")
        body: Dict[str, Any] = {}
        for name, value in (("audience", audience), ("resource", resource)):
            if value is not None:
                body[name] = value if isinstance(value, str) else list(value)
        if scopes is not None:
            body["scopes"] = list(scopes)
        if requested_token_type is not None:
            body["requested_token_type"] = requested_token_type
        path = Transport.credential_path(credential_id, "/token-exchange")
        return self._transport.send("POST", path, json_body=body, timeout=60).decode(Token.from_json)

    def list(
        self,
        namespace: Optional[str] = None,
        status: Optional[str] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Page[Credential]:
        """One page of metadata, ordered by id (`limit` 1-500, the daemon's default 100)."""
        query = [
            ("namespace", namespace),
            ("status", status),
            ("cursor", cursor),
            ("limit", None if limit is None else str(limit)),
        ]
        return self._transport.send("GET", "/v1/credentials", query).decode(
            lambda document: Page(
                [Credential.from_json(item) for item in document["items"]], document.get("next_cursor")
            )
        )

    def list_all(self, namespace: Optional[str] = None, status: Optional[str] = None) -> Iterator[Credential]:
        """Every matching credential, page by page (500 per request)."""
        return _pages(lambda cursor: self.list(namespace, status, cursor, 500))

    def delete(self, credential_id: str, force: bool = False) -> Deleted:
        """Revokes the tokens at the provider (when it has a revocation endpoint), then deletes.
        `force`: delete even when revocation fails."""
        reply = self._transport.send(
            "DELETE",
            Transport.credential_path(credential_id),
            [("force", "true" if force else None)],
            expect=(202, 204),
        )
        if reply.status == 202:
            return Deleted(revocation_pending=True, credential=reply.decode(Credential.from_json))
        revoked = reply.headers.get("tokenvault-revoked")
        return Deleted(revocation_pending=False, revoked=None if revoked is None else revoked == "true")

    def refresh(self, credential_id: str) -> Credential:
        """Refreshes now (at most once per credential every `limits.on_demand_refresh_seconds`)."""
        path = Transport.credential_path(credential_id, "/refresh")
        return self._transport.send("POST", path, timeout=60).decode(Credential.from_json)

    def exchange(
        self,
        credential_id: str,
        provider: str,
        code: str,
        code_verifier: str,
        redirect_uri: str,
        nonce: Optional[str] = None,
        state: Optional[str] = None,
        labels: Optional[Mapping[str, str]] = None,
    ) -> Exchanged:
        """Has the daemon redeem a one-time `code` with its PKCE verifier at provider instance
        `provider`, check the id token and store the result. Never returns the refresh token."""
        body: Dict[str, Any] = {
            "provider": provider,
            "code": code,
            "code_verifier": code_verifier,
            "redirect_uri": redirect_uri,
            "labels": dict(labels or {}),
        }
        if nonce is not None:
            body["nonce"] = nonce
        if state is not None:
            body["state"] = state
        reply = self._transport.send(
            "POST", Transport.credential_path(credential_id, "/exchange"), json_body=body, expect=(200, 201), timeout=60
        )
        return reply.decode(
            lambda document: Exchanged(
                Credential.from_json(document["credential"]), Token.from_json(document["token"]), reply.status == 201
            )
        )

    def start_sign_in(
        self,
        credential_id: str,
        provider: str,
        redirect_uri: Optional[str] = None,
        scopes: Iterable[str] = (),
        login_hint: Optional[str] = None,
        prompt: Optional[str] = None,
        resources: Iterable[str] = (),
        parameters: Optional[Mapping[str, str]] = None,
        labels: Optional[Mapping[str, str]] = None,
        mode: str = "url",
    ) -> SignIn:
        """Has the daemon start a sign-in at `provider` that finishes into `credential_id`: it makes
        and keeps the state, PKCE verifier and nonce, and answers the authorization URL (or, with
        mode "parameters", the request's parameters for a mobile SDK; with mode "device", a user
        code while the daemon polls, and no `redirect_uri`). `labels` None keeps those of a
        credential being repaired."""
        body: Dict[str, Any] = {
            "provider": provider,
            "scopes": list(scopes),
            "resources": list(resources),
            "parameters": dict(parameters or {}),
            "mode": mode,
        }
        for name, value in (("redirect_uri", redirect_uri), ("login_hint", login_hint), ("prompt", prompt)):
            if value is not None:
                body[name] = value
        if labels is not None:
            body["labels"] = dict(labels)
        reply = self._transport.send(
            "POST", Transport.credential_path(credential_id, "/authorization"), json_body=body, expect=(201,), timeout=60
        )
        return reply.decode(SignIn.from_json)

    def sign_in_status(self, credential_id: str) -> SignInStatus:
        """The caller's device sign-ins waiting for `credential_id`, and how their last sign-in
        into it ended."""
        reply = self._transport.send("GET", Transport.credential_path(credential_id, "/authorization"), expect=(200,))
        return reply.decode(SignInStatus.from_json)

    def finish_sign_in(self, credential_id: str, callback_url: str) -> SignedIn:
        """Finishes the sign-in the callback's `state` names with the whole URL the authorization
        server redirected to: the daemon redeems the code and stores (or repairs) the credential.
        Returns its metadata (never a token) and whether it was created."""
        reply = self._transport.send(
            "POST",
            Transport.credential_path(credential_id, "/authorization/callback"),
            json_body={"callback_url": callback_url},
            expect=(200, 201),
            timeout=60,
        )
        return reply.decode(lambda document: SignedIn(Credential.from_json(document), reply.status == 201))

    def watch(self, credential_id: str) -> Stream[Credential]:
        """The credential's metadata now, then again on every change, until it is deleted or the
        daemon stops (the stream then ends). Close the stream to stop watching."""
        return self._transport.stream(Transport.credential_path(credential_id, "/watch"), Credential.from_json)

    def events(self) -> Stream[Event]:
        """Every change to the credentials the caller may list, from now on, until the daemon stops."""
        return self._transport.stream("/v1/events", Event.from_json)

    def usable_credentials(self, namespace: Optional[str] = None) -> Iterator[UsableCredential]:
        """The credentials this process may use through the proxy, and their upstream bases."""

        def page(cursor: Optional[str]) -> Page[UsableCredential]:
            query = [("namespace", namespace), ("cursor", cursor), ("limit", "500")]
            return self._transport.send("GET", "/v1/proxy/credentials", query).decode(
                lambda document: Page(
                    [
                        UsableCredential(item["id"], item["provider"], item["status"], list(item["api_base_urls"]))
                        for item in document["items"]
                    ],
                    document.get("next_cursor"),
                )
            )

        return _pages(page)

    def call(
        self,
        credential_id: str,
        method: str,
        target: str,
        headers: Optional[Mapping[str, str]] = None,
        body: Optional[Body] = None,
        timeout: float = 120.0,
    ) -> UpstreamResponse:
        """Sends `method target` through the daemon's proxy with the credential's token attached;
        this process never sees the token (`credential:use` is enough). `target`: a URL inside the
        provider instance's `api_base_urls`, or a path (`/v1/x?y=1`) under the first of them. The
        upstream's answer is returned whatever its status; the daemon's own refusals
        (`upstream_not_allowed`, `too_many_proxy_calls`, an unreachable upstream) raise."""
        absolute = not target.startswith("/") and "://" in target
        if not absolute and not target.startswith("/"):
            raise ValueError(f"{target[:200]!r} is neither a URL nor a path starting with /")
        path = Transport.credential_path(credential_id, "/proxy" if absolute else "/proxy" + target)
        sent = dict(headers or {})
        if absolute:
            sent["TokenVault-Upstream-URL"] = target
        connection, response = self._transport.open(method.upper(), path, body, sent, timeout)
        marker = response.getheader("TokenVault-Proxy") or ""
        if not marker.startswith("upstream"):
            raise self._transport.refuse(connection, response)
        return UpstreamResponse(connection, response, "refreshed" in marker)


def _pages(page: Callable[[Optional[str]], Page[T]]) -> Iterator[T]:
    """Every item of a paged listing: `page` is asked for the page after each cursor (None: the
    first) until there is none. A daemon repeating a cursor would otherwise keep us here for ever."""
    cursor: Optional[str] = None
    seen = set()
    while True:
        current = page(cursor)
        yield from current.items
        if current.next_cursor is None:
            return
        if current.next_cursor in seen:
            raise UnexpectedResponse(200, "the daemon returned the same list cursor twice")
        seen.add(current.next_cursor)
        cursor = current.next_cursor
