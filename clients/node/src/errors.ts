import { Buffer } from "node:buffer";

/**
 * Errors: the daemon's problem documents (RFC 9457) as exceptions, one class per HTTP status,
 * each carrying the problem's stable `code` and, for a 400, the offending `field`. The same
 * classes and codes as the Python client's errors.py, so code written against one reads the same
 * against the other.
 */

/** Anything this package throws about the daemon or its answers. */
export class TokenVaultError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    // The subclass's name in stack traces and `String(error)`.
    this.name = new.target.name;
  }
}

/** The socket could not be reached, or the connection broke mid-answer. */
export class ConnectionFailed extends TokenVaultError {
  readonly socketPath: string;

  constructor(socketPath: string, cause: unknown) {
    super(`cannot talk to the daemon on ${socketPath}: ${describe(cause)}`, { cause });
    this.socketPath = socketPath;
  }
}

/** An answer that is not what the API promises (a daemon of another version, a proxy in between). */
export class UnexpectedResponse extends TokenVaultError {
  readonly status: number;
  readonly detail: string;

  constructor(status: number, detail: string) {
    super(`unexpected answer (${status}): ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

/** The members of a problem document the client reads. */
export interface ProblemFields {
  title?: string | null;
  detail?: string | null;
  /** For a 400: the offending body path (`token.expires_in`) or query parameter (`limit`). */
  field?: string | null;
  /** For a 403: the permission the caller lacks. */
  permission?: string | null;
  /** `urn:tokenvault:request:<X-Request-Id>`, matching the daemon's log lines. */
  instance?: string | null;
}

/**
 * A problem document the daemon answered with. `code` is stable and machine-readable
 * (`credential_not_found`, `token_expired`, ...); `detail` is for people and never holds a secret.
 */
export class ProblemError extends TokenVaultError {
  /** The HTTP status this class stands for (0: any). */
  static readonly statusCode: number = 0;

  readonly status: number;
  readonly code: string;
  readonly title: string | null;
  readonly detail: string | null;
  readonly field: string | null;
  readonly permission: string | null;
  readonly instance: string | null;

  constructor(status: number, code: string, fields: ProblemFields = {}) {
    let message = `${fields.detail || fields.title || code} (${status} ${code}`;
    if (fields.field) message += `, field ${fields.field}`;
    if (fields.permission) message += `, needs ${fields.permission}`;
    if (fields.instance) message += `, ${fields.instance}`;
    super(message + ")");
    this.status = status;
    this.code = code;
    this.title = fields.title ?? null;
    this.detail = fields.detail ?? null;
    this.field = fields.field ?? null;
    this.permission = fields.permission ?? null;
    this.instance = fields.instance ?? null;
  }

  /** The error for an answer with an error status: its problem document when it has one. */
  static fromReply(status: number, contentType: string, body: Uint8Array): ProblemError {
    let document: unknown = null;
    if (contentType.includes("json")) {
      try {
        document = JSON.parse(text(body));
      } catch {
        document = null;
      }
    }
    if (!isRecord(document) || typeof document.code !== "string") {
      // A body is quoted only from an error status: a success's body may be a token.
      const detail = status >= 400 ? text(body.subarray(0, 200)) : null;
      const Class = errorClass(status, "");
      return new Class(status, `http_${status}`, { detail });
    }
    const problem = document;
    const member = (name: string): string | null => {
      const value = problem[name];
      return typeof value === "string" ? value : null;
    };
    const Class = errorClass(status, document.code);
    return new Class(status, document.code, {
      title: member("title"),
      detail: member("detail"),
      field: member("field"),
      permission: member("permission"),
      instance: member("instance"),
    });
  }
}

/** 400: `invalid_field`, `invalid_payload`, `invalid_credential_id`, `invalid_request`, `invalid_callback`. */
export class BadRequest extends ProblemError {
  static override readonly statusCode = 400;
}

/** 403: `forbidden`; `permission` names what the caller lacks. */
export class Forbidden extends ProblemError {
  static override readonly statusCode = 403;
}

/** 404: `credential_not_found`, `not_found`, `authorization_unknown`. */
export class NotFound extends ProblemError {
  static override readonly statusCode = 404;
}

/** 405: `method_not_allowed`. */
export class MethodNotAllowed extends ProblemError {
  static override readonly statusCode = 405;
}

/**
 * 409: `token_expired`, `min_ttl_unreachable`, `needs_reauth`, `revoke_pending`,
 * `not_refreshable`, `conflict`, `authorization_expired`, `authorization_mismatch`.
 */
export class Conflict extends ProblemError {
  static override readonly statusCode = 409;
}

/** 413: `payload_too_large`. */
export class PayloadTooLarge extends ProblemError {
  static override readonly statusCode = 413;
}

/** 415: `unsupported_media_type`. */
export class UnsupportedMediaType extends ProblemError {
  static override readonly statusCode = 415;
}

/**
 * 422: the provider or the request's content was refused (`unknown_provider`,
 * `provider_rejected`, `nonce_mismatch`, `upstream_not_allowed`, ...).
 */
export class Unprocessable extends ProblemError {
  static override readonly statusCode = 422;
}

/** 429: `rate_limited`, `too_many_streams`, `too_many_proxy_calls`, `too_many_authorizations`. */
export class TooManyRequests extends ProblemError {
  static override readonly statusCode = 429;
}

/** 500: the daemon failed (`internal_error`, `integrity_error`, `storage_error`, ...). */
export class InternalError extends ProblemError {
  static override readonly statusCode = 500;
}

/** 502: the provider or upstream failed (`provider_unavailable`, `upstream_unavailable`, `upstream_too_large`). */
export class BadGateway extends ProblemError {
  static override readonly statusCode = 502;
}

/**
 * 503: try again later (`storage_unavailable`, `commit_pending`, `engine_unavailable`,
 * `too_many_connections`, `clock_skew`).
 */
export class Unavailable extends ProblemError {
  static override readonly statusCode = 503;
}

/** 504: `upstream_timeout`. */
export class GatewayTimeout extends ProblemError {
  static override readonly statusCode = 504;
}

/** A `ProblemError` class: what `CODES` maps a code to. */
export type ProblemErrorClass = typeof ProblemError;

const BY_STATUS: ReadonlyMap<number, ProblemErrorClass> = new Map(
  [
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
  ].map((Class) => [Class.statusCode, Class]),
);

function each(codes: readonly string[], Class: ProblemErrorClass): [string, ProblemErrorClass][] {
  return codes.map((code) => [code, Class]);
}

/**
 * Every code the API sends (docs/openapi.yaml, `Problem`), with the class it throws: a code is
 * always the same class, whatever status a proxy in between might have turned it into.
 */
export const CODES: Readonly<Record<string, ProblemErrorClass>> = Object.freeze(
  Object.fromEntries([
    ...each(["invalid_field", "invalid_payload", "invalid_credential_id", "invalid_request", "invalid_callback"], BadRequest),
    ...each(["forbidden"], Forbidden),
    ...each(["credential_not_found", "not_found", "authorization_unknown"], NotFound),
    ...each(["method_not_allowed"], MethodNotAllowed),
    ...each(
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
    ...each(["payload_too_large"], PayloadTooLarge),
    ...each(["unsupported_media_type"], UnsupportedMediaType),
    ...each(
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
    ...each(["rate_limited", "too_many_streams", "too_many_proxy_calls", "too_many_authorizations"], TooManyRequests),
    ...each(
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
    ...each(["provider_unavailable", "upstream_unavailable", "upstream_too_large"], BadGateway),
    ...each(
      ["storage_unavailable", "commit_pending", "engine_unavailable", "too_many_connections", "clock_skew"],
      Unavailable,
    ),
    ...each(["upstream_timeout"], GatewayTimeout),
  ]),
);

/** The class for a code; for a code this version does not know, the class of its status. */
export function errorClass(status: number, code: string): ProblemErrorClass {
  return (Object.hasOwn(CODES, code) ? CODES[code] : undefined) ?? BY_STATUS.get(status) ?? ProblemError;
}

/** UTF-8 text, a malformed sequence replaced rather than refused. */
function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("utf8");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
