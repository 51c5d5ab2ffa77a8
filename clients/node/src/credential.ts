/**
 * A credential's metadata, the value most routes answer (`put`, `show`, `refresh`, listings,
 * `watch`, sign-ins), and its decoding from the daemon's snake_case. A file of its own because
 * client.ts, models.ts and signin.ts all build or return it; it never holds a secret.
 */
import { Document } from "./document.js";

/** Where a credential stands (docs/openapi.yaml, `CredentialStatus`); a newer daemon may add more. */
export type CredentialStatus =
  | "active"
  | "failing"
  | "needs_reauth"
  | "revoke_pending"
  | "expired"
  | "pending_authorization"
  | (string & {});

/** The last failure recorded against a credential; never contains a token. */
export interface LastError {
  readonly code: string;
  readonly message: string;
  readonly at: string;
}

/** New tokens the database has not taken yet, held in the daemon's memory while it retries. */
export interface PendingCommit {
  readonly since: string;
  readonly failures: number;
  readonly lastError: string;
  readonly nextAttemptAt: string;
}

/**
 * How the vault obtains a credential's tokens itself and renews them before they expire: a client
 * credentials grant of its provider instance, or an RFC 8693 token exchange of another credential's
 * access token. Never a secret: the client's secret is the instance's, and the subject is only named.
 */
export interface Grant {
  /** A newer daemon may add more. */
  readonly type: "client_credentials" | "token_exchange" | (string & {});
  readonly scopes: readonly string[];
  readonly audience: readonly string[];
  readonly resource: readonly string[];
  /** `token_exchange` only: the credential (`namespace/name`) whose access token is exchanged. */
  readonly subject: string | null;
  readonly requestedTokenType: string | null;
}

/**
 * A credential's metadata (`GET /v1/credentials/{namespace}/{name}`): never a secret. Members
 * are the API's, in camelCase; absent optional ones are `null`. `raw` (not enumerable, so not in
 * `console.log` or `JSON.stringify`) is the document as the daemon sent it, so a newer daemon's
 * additions are never lost.
 */
export interface Credential {
  readonly id: string;
  readonly namespace: string;
  readonly name: string;
  readonly provider: string;
  readonly kind: string;
  readonly status: CredentialStatus;
  readonly generation: number;
  readonly scopes: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly issuedAt: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly hasRefreshToken: boolean;
  readonly hasIdToken: boolean;
  readonly subject: string | null;
  readonly tokenType: string | null;
  readonly expiresAt: string | null;
  readonly refreshAt: string | null;
  readonly refreshTokenExpiresAt: string | null;
  readonly refreshFailures: number | null;
  readonly lastError: LastError | null;
  readonly pendingCommit: PendingCommit | null;
  /** How the vault obtains and renews the tokens itself; `null` for tokens a put or a sign-in stored. */
  readonly grant: Grant | null;
  readonly raw: Readonly<Record<string, unknown>>;
}

export function decodeCredential(document: Document): Credential {
  const lastError = document.optionalDocument("last_error");
  const pendingCommit = document.optionalDocument("pending_commit");
  const grant = document.optionalDocument("grant");
  const credential: Credential = {
    id: document.string("id"),
    namespace: document.string("namespace"),
    name: document.string("name"),
    provider: document.string("provider"),
    kind: document.string("kind"),
    status: document.string("status"),
    generation: document.number("generation"),
    scopes: document.strings("scopes"),
    labels: document.labels("labels"),
    issuedAt: document.string("issued_at"),
    createdAt: document.string("created_at"),
    updatedAt: document.string("updated_at"),
    hasRefreshToken: document.boolean("has_refresh_token"),
    hasIdToken: document.boolean("has_id_token"),
    subject: document.optionalString("subject"),
    tokenType: document.optionalString("token_type"),
    expiresAt: document.optionalString("expires_at"),
    refreshAt: document.optionalString("refresh_at"),
    refreshTokenExpiresAt: document.optionalString("refresh_token_expires_at"),
    refreshFailures: document.optionalNumber("refresh_failures"),
    lastError: lastError && {
      code: lastError.string("code"),
      message: lastError.string("message"),
      at: lastError.string("at"),
    },
    pendingCommit: pendingCommit && {
      since: pendingCommit.string("since"),
      failures: pendingCommit.number("failures"),
      lastError: pendingCommit.string("last_error"),
      nextAttemptAt: pendingCommit.string("next_attempt_at"),
    },
    grant: grant && {
      type: grant.string("type"),
      scopes: grant.strings("scopes"),
      audience: grant.strings("audience"),
      resource: grant.strings("resource"),
      subject: grant.optionalString("subject"),
      requestedTokenType: grant.optionalString("requested_token_type"),
    },
    raw: document.raw(),
  };
  return Object.defineProperty(credential, "raw", { enumerable: false });
}
