"""What the daemon answers, as typed values. Unknown fields are kept in `raw`, so a newer daemon's
additions are never lost; secrets never appear in a `repr`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Mapping, Optional, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Token:
    """An access token: the credential's own (`GET .../token`) or one derived from it (`POST
    .../token-exchange`). Never a refresh token: the daemon does not give those out."""

    access_token: str = field(repr=False)
    token_type: str
    expires_at: Optional[str] = None
    id_token: Optional[str] = field(default=None, repr=False)
    # A derived token's RFC 8693 type and scopes (say what it is for, so shown); None for the
    # credential's own. Left out of the hash: a list has none, and a Token stays hashable.
    issued_token_type: Optional[str] = None
    scopes: Optional[List[str]] = field(default=None, hash=False)

    @property
    def authorization(self) -> str:
        """The `Authorization` header's value: `Bearer <token>`."""
        return f"{self.token_type} {self.access_token}"

    @staticmethod
    def from_json(document: Mapping[str, Any]) -> "Token":
        return Token(
            access_token=document["access_token"],
            token_type=document.get("token_type") or "Bearer",
            expires_at=document.get("expires_at"),
            id_token=document.get("id_token"),
            issued_token_type=document.get("issued_token_type"),
            scopes=None if document.get("scopes") is None else list(document["scopes"]),
        )


@dataclass(frozen=True)
class Grant:
    """How the daemon obtains and renews a credential itself: `type` "client_credentials" or
    "token_exchange" (then `subject` is the credential whose access token it exchanges). Lists are
    left out of the hash: a list has none, and a Grant stays hashable."""

    type: str
    scopes: List[str] = field(default_factory=list, hash=False)
    audience: List[str] = field(default_factory=list, hash=False)
    resource: List[str] = field(default_factory=list, hash=False)
    subject: Optional[str] = None
    requested_token_type: Optional[str] = None

    @staticmethod
    def from_json(document: Mapping[str, Any]) -> "Grant":
        return Grant(
            type=document["type"],
            scopes=list(document.get("scopes") or []),
            audience=list(document.get("audience") or []),
            resource=list(document.get("resource") or []),
            subject=document.get("subject"),
            requested_token_type=document.get("requested_token_type"),
        )


@dataclass(frozen=True)
class Credential:
    """A credential's metadata (`GET /v1/credentials/{namespace}/{name}`): never a secret."""

    id: str
    namespace: str
    name: str
    provider: str
    kind: str
    status: str
    generation: int
    scopes: List[str]
    labels: Dict[str, str]
    issued_at: str
    created_at: str
    updated_at: str
    has_refresh_token: bool
    has_id_token: bool
    subject: Optional[str] = None
    token_type: Optional[str] = None
    expires_at: Optional[str] = None
    refresh_at: Optional[str] = None
    refresh_token_expires_at: Optional[str] = None
    refresh_failures: Optional[int] = None
    last_error: Optional[Dict[str, Any]] = None
    pending_commit: Optional[Dict[str, Any]] = None
    # None unless the daemon obtains and renews the credential itself.
    grant: Optional[Grant] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(document: Mapping[str, Any]) -> "Credential":
        return Credential(
            id=document["id"],
            namespace=document["namespace"],
            name=document["name"],
            provider=document["provider"],
            kind=document["kind"],
            status=document["status"],
            generation=document["generation"],
            scopes=list(document.get("scopes") or []),
            labels=dict(document.get("labels") or {}),
            issued_at=document["issued_at"],
            created_at=document["created_at"],
            updated_at=document["updated_at"],
            has_refresh_token=document["has_refresh_token"],
            has_id_token=document["has_id_token"],
            subject=document.get("subject"),
            token_type=document.get("token_type"),
            expires_at=document.get("expires_at"),
            refresh_at=document.get("refresh_at"),
            refresh_token_expires_at=document.get("refresh_token_expires_at"),
            refresh_failures=document.get("refresh_failures"),
            last_error=document.get("last_error"),
            pending_commit=document.get("pending_commit"),
            grant=None if document.get("grant") is None else Grant.from_json(document["grant"]),
            raw=dict(document),
        )


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing; pass `next_cursor` for the next (None: this was the last)."""

    items: List[T]
    next_cursor: Optional[str]


@dataclass(frozen=True)
class Event:
    """One line of `/v1/events`: `stored`, `refreshed`, `refresh_failed`, `status_changed`,
    `deleted`, `authorized` or `authorization_failed` (a device sign-in's end; `status` and
    `generation` are None when it failed for a credential that does not exist)."""

    type: str
    credential_id: str
    at: str
    status: Optional[str]
    generation: Optional[int]
    error: Optional[Dict[str, str]] = None

    @staticmethod
    def from_json(document: Mapping[str, Any]) -> "Event":
        return Event(
            type=document["type"],
            credential_id=document["credential_id"],
            at=document["at"],
            status=document.get("status"),
            generation=document.get("generation"),
            error=document.get("error"),
        )


@dataclass(frozen=True)
class Deleted:
    """What `delete` did. `revocation_pending` (202): the provider did not confirm revocation, the
    credential is `revoke_pending` (`credential`) and the daemon keeps trying; otherwise it is gone,
    and `revoked` says whether the provider confirmed revocation (False also without a revocation
    endpoint, or with `force`; None only from a daemon that does not say)."""

    revocation_pending: bool
    revoked: Optional[bool] = None
    credential: Optional[Credential] = None


@dataclass(frozen=True)
class Exchanged:
    """A redeemed code: the stored credential, its access token, and whether it was created."""

    credential: Credential
    token: Token
    created: bool


@dataclass(frozen=True)
class SignIn:
    """A started sign-in (`POST …/authorization`): the URL to send the person to, or (mode
    "parameters") the request's parameters for a mobile SDK, or (mode "device") the code the
    person enters at `verification_uri` while the daemon polls; and when it ends."""

    authorization_url: Optional[str]
    parameters: Optional[Dict[str, Any]]
    expires_at: str
    pushed: bool
    user_code: Optional[str] = None
    verification_uri: Optional[str] = None
    verification_uri_complete: Optional[str] = None
    interval: Optional[int] = None

    @staticmethod
    def from_json(document: Mapping[str, Any]) -> "SignIn":
        return SignIn(
            authorization_url=document.get("authorization_url"),
            parameters=document.get("parameters"),
            expires_at=document["expires_at"],
            pushed=bool(document["pushed"]),
            user_code=document.get("user_code"),
            verification_uri=document.get("verification_uri"),
            verification_uri_complete=document.get("verification_uri_complete"),
            interval=document.get("interval"),
        )


@dataclass(frozen=True)
class SignInStatus:
    """`GET …/authorization`: the caller's device sign-ins the daemon still polls for the
    credential (each a dict: kind, provider, started_at, expires_at, next_poll_at, interval), and
    how the caller's last sign-in into it ended (`last`: at, outcome "authorized" or "failed",
    reason), or None."""

    pending: List[Dict[str, Any]]
    last: Optional[Dict[str, Any]]

    @staticmethod
    def from_json(document: Mapping[str, Any]) -> "SignInStatus":
        return SignInStatus(pending=list(document.get("pending") or []), last=document.get("last"))


@dataclass(frozen=True)
class SignedIn:
    """A finished sign-in: the stored credential (never a token) and whether it was created
    (`False`: an existing one was repaired or replaced)."""

    credential: Credential
    created: bool


@dataclass(frozen=True)
class UsableCredential:
    """A credential the caller may use through the proxy, and where (`GET /v1/proxy/credentials`)."""

    id: str
    provider: str
    status: str
    api_base_urls: List[str]
