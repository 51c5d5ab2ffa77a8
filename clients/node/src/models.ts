/**
 * The smaller things the daemon answers, as typed values: listings, events, what a deletion did,
 * what the proxy may be used with. Absent optional members are `null`.
 */
import type { Credential, LastError } from "./credential.js";
import { Document } from "./document.js";

/** `GET /v1/health`: `status` is `ok` or `degraded`; the rest (database, providers, courier) as sent. */
export interface Health {
  readonly status: "ok" | "degraded" | (string & {});
  readonly [member: string]: unknown;
}

/** One page of a listing; pass `nextCursor` for the next (`null`: this was the last). */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null;
}

/** What `list` filters and pages by. */
export interface ListOptions {
  namespace?: string;
  status?: string;
  cursor?: string;
  /** 1-500; the daemon's default is 100. */
  limit?: number;
}

/**
 * One line of `/v1/events`: `stored`, `refreshed`, `refresh_failed`, `status_changed`,
 * `deleted`, `authorized` or `authorization_failed` (a device sign-in's end; `status` and
 * `generation` are `null` when it failed for a credential that does not exist). A newer daemon
 * may send other types: ignore those you do not know.
 */
export interface Event {
  readonly type: string;
  readonly credentialId: string;
  readonly at: string;
  readonly status: string | null;
  readonly generation: number | null;
  /** For failures: `code` and `message`, never a token. */
  readonly error: Pick<LastError, "code" | "message"> | null;
}

export function decodeEvent(document: Document): Event {
  const error = document.optionalDocument("error");
  return {
    type: document.string("type"),
    credentialId: document.string("credential_id"),
    at: document.string("at"),
    status: document.optionalString("status"),
    generation: document.optionalNumber("generation"),
    error: error && { code: error.string("code"), message: error.string("message") },
  };
}

/**
 * What `delete` did. `revocationPending` (202): the provider did not confirm revocation, the
 * credential is `revoke_pending` (`credential`) and the daemon keeps trying; otherwise it is
 * gone, and `revoked` says whether the provider confirmed revocation (false also without a
 * revocation endpoint, or with `force`; `null` only from a daemon that does not say).
 */
export interface Deleted {
  readonly revocationPending: boolean;
  readonly revoked: boolean | null;
  readonly credential: Credential | null;
}

/** A credential the caller may use through the proxy, and where (`GET /v1/proxy/credentials`). */
export interface UsableCredential {
  readonly id: string;
  readonly provider: string;
  readonly status: string;
  readonly apiBaseUrls: readonly string[];
}

export function decodeUsableCredential(document: Document): UsableCredential {
  return {
    id: document.string("id"),
    provider: document.string("provider"),
    status: document.string("status"),
    apiBaseUrls: document.strings("api_base_urls"),
  };
}

/** A page of `items` made by `build`, and its `next_cursor`. */
export function decodePage<T>(document: Document, build: (item: Document) => T): Page<T> {
  return { items: document.array("items", build), nextCursor: document.optionalString("next_cursor") };
}
