"""Errors: the daemon's problem documents (RFC 9457) as exceptions, one class per HTTP status,
each carrying the problem's stable `code` and, for a 400, the offending `field`."""

from __future__ import annotations

import json
from typing import Dict, Optional, Type


class TokenVaultError(Exception):
    """Anything this package raises about the daemon or its answers."""


class ConnectionFailed(TokenVaultError):
    """The socket could not be reached, or the connection broke mid-answer."""

    def __init__(self, socket_path: str, cause: BaseException) -> None:
        super().__init__(f"cannot talk to the daemon on {socket_path}: {cause}")
        self.socket_path = socket_path
        self.cause = cause

    def __reduce__(self):  # type: ignore[no-untyped-def]
        # Picklable (a ProcessPoolExecutor sends exceptions back): rebuilt from its arguments.
        return (type(self), (self.socket_path, self.cause))


class UnexpectedResponse(TokenVaultError):
    """An answer that is not what the API promises (a daemon of another version, a proxy in between)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"unexpected answer ({status}): {detail}")
        self.status = status
        self.detail = detail

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.status, self.detail))


class ProblemError(TokenVaultError):
    """A problem document the daemon answered with. `code` is stable and machine-readable
    (`credential_not_found`, `token_expired`, ...); `detail` is for people and never holds a secret."""

    status_code = 0

    def __init__(
        self,
        status: int,
        code: str,
        title: Optional[str] = None,
        detail: Optional[str] = None,
        field: Optional[str] = None,
        permission: Optional[str] = None,
        instance: Optional[str] = None,
    ) -> None:
        text = f"{detail or title or code} ({status} {code}"
        if field:
            text += f", field {field}"
        if permission:
            text += f", needs {permission}"
        if instance:
            text += f", {instance}"
        super().__init__(text + ")")
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.field = field
        self.permission = permission
        self.instance = instance

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (
            type(self),
            (self.status, self.code, self.title, self.detail, self.field, self.permission, self.instance),
        )

    @staticmethod
    def from_reply(status: int, content_type: str, body: bytes) -> "ProblemError":
        """The exception for an answer with an error status: its problem document when it has one."""
        document = None
        if "json" in content_type:
            try:
                document = json.loads(body)
            except ValueError:
                document = None
        if not isinstance(document, dict) or not isinstance(document.get("code"), str):
            # A body is quoted only from an error status: a success's body may be a token.
            detail = body[:200].decode("utf-8", "replace") if status >= 400 else None
            return error_class(status, "")(status, f"http_{status}", detail=detail)
        code = document["code"]
        return error_class(status, code)(
            status,
            code,
            title=document.get("title"),
            detail=document.get("detail"),
            field=document.get("field"),
            permission=document.get("permission"),
            instance=document.get("instance"),
        )


class BadRequest(ProblemError):
    """400: `invalid_field`, `invalid_payload`, `invalid_credential_id`, `invalid_request`."""

    status_code = 400


class Forbidden(ProblemError):
    """403: `forbidden`; `permission` names what the caller lacks."""

    status_code = 403


class NotFound(ProblemError):
    """404: `credential_not_found`, `not_found`."""

    status_code = 404


class MethodNotAllowed(ProblemError):
    """405: `method_not_allowed`."""

    status_code = 405


class Conflict(ProblemError):
    """409: `token_expired`, `min_ttl_unreachable`, `needs_reauth`, `revoke_pending`,
    `not_refreshable`, `conflict`."""

    status_code = 409


class PayloadTooLarge(ProblemError):
    """413: `payload_too_large`."""

    status_code = 413


class UnsupportedMediaType(ProblemError):
    """415: `unsupported_media_type`."""

    status_code = 415


class Unprocessable(ProblemError):
    """422: the provider or the request's content was refused (`unknown_provider`,
    `provider_rejected`, `nonce_mismatch`, `upstream_not_allowed`, ...)."""

    status_code = 422


class TooManyRequests(ProblemError):
    """429: `rate_limited`, `too_many_streams`, `too_many_proxy_calls`."""

    status_code = 429


class InternalError(ProblemError):
    """500: the daemon failed (`internal_error`, `integrity_error`, `storage_error`, ...)."""

    status_code = 500


class BadGateway(ProblemError):
    """502: the provider or upstream failed (`provider_unavailable`, `upstream_unavailable`, `upstream_too_large`)."""

    status_code = 502


class Unavailable(ProblemError):
    """503: try again later (`storage_unavailable`, `commit_pending`, `engine_unavailable`, `too_many_connections`,
    `clock_skew`)."""

    status_code = 503


class GatewayTimeout(ProblemError):
    """504: `upstream_timeout`."""

    status_code = 504


_BY_STATUS: Dict[int, Type[ProblemError]] = {
    cls.status_code: cls
    for cls in (
        BadRequest,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        Unprocessable,
        TooManyRequests,
        InternalError,
        BadGateway,
        Unavailable,
        GatewayTimeout,
    )
}

# Every code the API sends (docs/openapi.yaml, `Problem`), with the class it raises: a code is
# always the same class, whatever status a proxy in between might have turned it into.
CODES: Dict[str, Type[ProblemError]] = {
    **dict.fromkeys(
        ["invalid_field", "invalid_payload", "invalid_credential_id", "invalid_request", "invalid_callback"], BadRequest
    ),
    "forbidden": Forbidden,
    **dict.fromkeys(["credential_not_found", "not_found", "authorization_unknown"], NotFound),
    "method_not_allowed": MethodNotAllowed,
    **dict.fromkeys(
        [
            "token_expired",
            "min_ttl_unreachable",
            "needs_reauth",
            "revoke_pending",
            "not_refreshable",
            "conflict",
            "authorization_expired",
            "authorization_mismatch",
        ],
        Conflict,
    ),
    "payload_too_large": PayloadTooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    **dict.fromkeys(
        [
            "unknown_provider",
            "provider_not_configured",
            "provider_rejected",
            "nonce_mismatch",
            "audience_mismatch",
            "id_token_expired",
            "id_token_invalid",
            "upstream_not_allowed",
            "authorization_denied",
            "issuer_mismatch",
            "redirect_uri_not_allowed",
        ],
        Unprocessable,
    ),
    **dict.fromkeys(
        ["rate_limited", "too_many_streams", "too_many_proxy_calls", "too_many_authorizations"], TooManyRequests
    ),
    **dict.fromkeys(
        [
            "internal_error",
            "integrity_error",
            "crypto_error",
            "unknown_key_term",
            "storage_error",
            "wrong_master_key",
            "key_source_error",
            "migration_error",
        ],
        InternalError,
    ),
    **dict.fromkeys(["provider_unavailable", "upstream_unavailable", "upstream_too_large"], BadGateway),
    **dict.fromkeys(
        ["storage_unavailable", "commit_pending", "engine_unavailable", "too_many_connections", "clock_skew"],
        Unavailable,
    ),
    "upstream_timeout": GatewayTimeout,
}


def error_class(status: int, code: str) -> Type[ProblemError]:
    """The class for a code; for a code this version does not know, the class of its status."""
    return CODES.get(code) or _BY_STATUS.get(status) or ProblemError
