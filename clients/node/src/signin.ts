/**
 * Signing a person in through the daemon: redeeming a code the application got (`exchange`), or
 * having the daemon run the whole authorization request (`startSignIn` … `finishSignIn`, or a
 * device sign-in it polls). What is sent is camelCase here and snake_case on the wire.
 */
import { Credential, decodeCredential } from "./credential.js";
import { Document } from "./document.js";
import { Token, decodeToken } from "./token.js";

/** What `exchange` sends: a one-time code with its PKCE verifier. */
export interface ExchangeRequest {
  /** The provider instance that issued the code. */
  provider: string;
  code: string;
  /** The PKCE code verifier (RFC 7636): 43-128 unreserved characters. */
  codeVerifier: string;
  /** The redirect URI the authorization request used. */
  redirectUri: string;
  /** When given, the id token's `nonce` claim must equal it. */
  nonce?: string;
  /** The authorization response's `state`, for provider kinds that send it to the token endpoint. */
  state?: string;
  labels?: Record<string, string>;
}

/** A redeemed code: the stored credential, its access token, and whether it was created. */
export interface Exchanged {
  readonly credential: Credential;
  readonly token: Token;
  readonly created: boolean;
}

export function decodeExchanged(document: Document, created: boolean): Exchanged {
  return {
    credential: decodeCredential(document.document("credential")),
    token: decodeToken(document.document("token")),
    created,
  };
}

/**
 * What `startSignIn` sends. `mode` "url" (the default) answers the authorization URL;
 * "parameters" the request's parameters for a mobile SDK; "device" a user code while the daemon
 * polls (no `redirectUri`). `labels` left out keeps those of a credential being repaired.
 */
export interface SignInRequest {
  provider: string;
  redirectUri?: string;
  scopes?: readonly string[];
  loginHint?: string;
  prompt?: string;
  /** RFC 8707 resource indicators. */
  resources?: readonly string[];
  /** Extra authorization parameters the instance allows. */
  parameters?: Record<string, string>;
  labels?: Record<string, string>;
  mode?: "url" | "parameters" | "device";
}

/**
 * A started sign-in (`POST …/authorization`): the URL to send the person to, or (mode
 * "parameters") the request's parameters (a name given twice as an array), or (mode "device")
 * the code the person enters at `verificationUri` while the daemon polls; and when it ends.
 */
export interface SignIn {
  readonly authorizationUrl: string | null;
  readonly parameters: Readonly<Record<string, string | readonly string[]>> | null;
  readonly expiresAt: string;
  /** Whether the request was pushed (RFC 9126). */
  readonly pushed: boolean;
  readonly userCode: string | null;
  readonly verificationUri: string | null;
  readonly verificationUriComplete: string | null;
  /** Seconds between the daemon's polls. */
  readonly interval: number | null;
}

export function decodeSignIn(document: Document): SignIn {
  const parameters = document.optionalDocument("parameters");
  return {
    authorizationUrl: document.optionalString("authorization_url"),
    parameters: parameters && (parameters.raw() as Record<string, string | string[]>),
    expiresAt: document.string("expires_at"),
    pushed: document.boolean("pushed"),
    userCode: document.optionalString("user_code"),
    verificationUri: document.optionalString("verification_uri"),
    verificationUriComplete: document.optionalString("verification_uri_complete"),
    interval: document.optionalNumber("interval"),
  };
}

/** A device sign-in the daemon polls for. */
export interface PendingSignIn {
  readonly kind: string;
  readonly provider: string;
  readonly startedAt: string;
  readonly expiresAt: string;
  readonly nextPollAt: string;
  readonly interval: number;
}

/** How a sign-in ended: `outcome` "authorized", or "failed" with the `reason`. */
export interface EndedSignIn {
  readonly at: string;
  readonly outcome: "authorized" | "failed" | (string & {});
  readonly reason: string | null;
}

/**
 * `GET …/authorization`: the caller's device sign-ins the daemon still polls for the
 * credential, and how the caller's last sign-in into it ended (`null`: none found).
 */
export interface SignInStatus {
  readonly pending: readonly PendingSignIn[];
  readonly last: EndedSignIn | null;
}

export function decodeSignInStatus(document: Document): SignInStatus {
  const last = document.optionalDocument("last");
  return {
    pending: document.array("pending", (item) => ({
      kind: item.string("kind"),
      provider: item.string("provider"),
      startedAt: item.string("started_at"),
      expiresAt: item.string("expires_at"),
      nextPollAt: item.string("next_poll_at"),
      interval: item.number("interval"),
    })),
    last: last && { at: last.string("at"), outcome: last.string("outcome"), reason: last.optionalString("reason") },
  };
}

/**
 * A finished sign-in: the stored credential (never a token) and whether it was created (false:
 * an existing one was repaired or replaced).
 */
export interface SignedIn {
  readonly credential: Credential;
  readonly created: boolean;
}
