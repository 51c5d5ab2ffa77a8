"""A client for the TokenVault daemon over its Unix socket, standard library only.

    from tokenvault import Client
    vault = Client()                      # $TOKENVAULT_SOCKET, /run/tokenvault/..., ./.tokenvault/run/... if yours alone
    token = vault.token("payments/alice", min_ttl=60)
"""

from .client import Client, default_socket_path
from .errors import (
    CODES,
    BadGateway,
    BadRequest,
    Conflict,
    ConnectionFailed,
    Forbidden,
    GatewayTimeout,
    InternalError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    ProblemError,
    TokenVaultError,
    TooManyRequests,
    Unavailable,
    UnexpectedResponse,
    Unprocessable,
    UnsupportedMediaType,
)
from .models import Credential, Deleted, Event, Exchanged, Grant, Page, SignedIn, SignIn, SignInStatus, Token, UsableCredential
from .stream import Stream
from .upstream import UpstreamResponse
from .webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "CODES",
    "BadGateway",
    "BadRequest",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "Credential",
    "Deleted",
    "Event",
    "Exchanged",
    "Forbidden",
    "GatewayTimeout",
    "Grant",
    "InternalError",
    "MethodNotAllowed",
    "NotFound",
    "Page",
    "SignIn",
    "SignInStatus",
    "SignedIn",
    "Stream",
    "PayloadTooLarge",
    "ProblemError",
    "Token",
    "TokenVaultError",
    "TooManyRequests",
    "Unavailable",
    "UnexpectedResponse",
    "Unprocessable",
    "UnsupportedMediaType",
    "UpstreamResponse",
    "UsableCredential",
    "WebhookVerificationError",
    "default_socket_path",
    "verify_webhook",
]
