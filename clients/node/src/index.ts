/**
 * A client for the TokenVault daemon over its Unix socket, with no dependency but Node itself.
 *
 *     import { Client } from "tokenvault";
 *     const vault = new Client();   // $TOKENVAULT_SOCKET, /run/tokenvault/…, ./.tokenvault/run/… if yours alone
 *     const token = await vault.token("payments/alice", { minTtl: 60 });
 */
export { Client } from "./client.js";
export type { CallOptions, ClientOptions, TokenExchangeOptions } from "./client.js";
export type { Credential, CredentialStatus, Grant, LastError, PendingCommit } from "./credential.js";
export {
  BadGateway,
  BadRequest,
  CODES,
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
  errorClass,
} from "./errors.js";
export type { ProblemErrorClass, ProblemFields } from "./errors.js";
export type { Deleted, Event, Health, ListOptions, Page, UsableCredential } from "./models.js";
export type {
  EndedSignIn,
  ExchangeRequest,
  Exchanged,
  PendingSignIn,
  SignIn,
  SignInRequest,
  SignInStatus,
  SignedIn,
} from "./signin.js";
export { LOCAL_SOCKET, PACKAGED_SOCKET, defaultSocketPath } from "./socket.js";
export type { Stream } from "./stream.js";
export { Token } from "./token.js";
export type { Body, UpstreamResponse } from "./upstream.js";
export { WebhookVerificationError, verifyWebhook } from "./webhooks.js";
export type { VerifyWebhookOptions, WebhookHeaders } from "./webhooks.js";
