/** The daemon's local API, one method per route. */
import { Buffer } from "node:buffer";

import { Credential, decodeCredential } from "./credential.js";
import { UnexpectedResponse } from "./errors.js";
import {
  Deleted,
  Event,
  Health,
  ListOptions,
  Page,
  UsableCredential,
  decodeEvent,
  decodePage,
  decodeUsableCredential,
} from "./models.js";
import {
  ExchangeRequest,
  Exchanged,
  SignIn,
  SignInRequest,
  SignInStatus,
  SignedIn,
  decodeExchanged,
  decodeSignIn,
  decodeSignInStatus,
} from "./signin.js";
import { defaultSocketPath } from "./socket.js";
import { ProxiedResponse } from "./proxied.js";
import type { Stream } from "./stream.js";
import { Token, decodeToken } from "./token.js";
import { Transport, credentialPath } from "./transport.js";
import type { Body, UpstreamResponse } from "./upstream.js";

export interface ClientOptions {
  /**
   * How long to wait for the daemon before giving up, in milliseconds (default 30 000): the
   * connect, the answer's head, and each wait for more of its body; 0 waits for ever. Streams
   * wait for their next line as long as it takes; slow routes (refresh, exchange, sign-in) allow
   * at least 60 s.
   */
  timeoutMs?: number;
}

/**
 * What `exchangeToken` asks the credential's provider for (RFC 8693): at least one `audience`,
 * `resource` or scope (the daemon refuses a request for none); anything left out is the
 * provider's to decide. The subject is always the credential's stored access token: the refresh
 * token never leaves the vault for an exchange.
 */
export interface TokenExchangeOptions {
  /** RFC 8693 `audience`: the service(s) the derived token is meant for. */
  audience?: string | readonly string[];
  /** RFC 8707 `resource`: the URI(s) of the resource(s) it is for. */
  resource?: string | readonly string[];
  /** The scopes it should have, typically narrower than the credential's. */
  scopes?: readonly string[];
  /** RFC 8693 `requested_token_type`, such as `urn:ietf:params:oauth:token-type:access_token`. */
  requestedTokenType?: string;
}

export interface CallOptions {
  /**
   * Headers for the upstream. The daemon passes an allowlist (`Accept`, `Content-Type`,
   * `Idempotency-Key`, …) and drops the rest, the caller's own `Authorization` among them.
   */
  headers?: Record<string, string>;
  /** Text or bytes, sent whole; or an iterable of chunks (a file's read stream), sent chunked. */
  body?: Body;
  /** Milliseconds (default 120 000; 0 waits for ever). */
  timeoutMs?: number;
}

/** A credential's labels. */
type Labels = Readonly<Record<string, string>>;

const NOT_A_TOKEN = "the token must be a JSON object (the token response as the provider or SDK gave it)";

/**
 * A client of one daemon. The daemon tells callers apart by their uid and groups, so this
 * process's rights are what the daemon's access rules give its user: the client has no
 * credentials of its own. Every method sends one request on a connection of its own; nothing is
 * kept between calls. Ids are `namespace/name`.
 */
export class Client {
  readonly #transport: Transport;

  /**
   * `socketPath`: the daemon's socket; left out, `defaultSocketPath()` (`$TOKENVAULT_SOCKET`,
   * else `/run/tokenvault/tokenvault.sock` if it exists, else `./.tokenvault/run/tokenvault.sock`
   * if `.tokenvault` is the caller's alone).
   */
  constructor(socketPath?: string, options: ClientOptions = {}) {
    this.#transport = new Transport(socketPath || defaultSocketPath(), options.timeoutMs ?? 30_000);
  }

  get socketPath(): string {
    return this.#transport.socketPath;
  }

  /** `GET /v1/health`: `status` (`ok` or `degraded`), the database, providers and courier. */
  async health(): Promise<Health> {
    const reply = await this.#transport.send("GET", "/v1/health");
    return reply.decode((document) => document.raw() as unknown as Health);
  }

  /**
   * Stores or replaces a credential; says whether it was created. `token`: the token response
   * exactly as the provider or SDK gave it, as an object or as JSON text (passed on untouched,
   * so the daemon seals every field and names the one at fault).
   */
  async put(
    id: string,
    provider: string,
    token: Readonly<Record<string, unknown>> | string | Uint8Array,
    labels: Labels = {},
  ): Promise<{ credential: Credential; created: boolean }> {
    let raw: Uint8Array;
    if (typeof token === "string" || token instanceof Uint8Array) {
      raw = typeof token === "string" ? Buffer.from(token, "utf8") : token;
      const text = Buffer.from(raw).toString("utf8").trim();
      if (!text.startsWith("{") || !text.endsWith("}")) throw new TypeError(NOT_A_TOKEN);
    } else if (typeof token === "object" && token !== null && !Array.isArray(token)) {
      raw = Buffer.from(JSON.stringify(token), "utf8");
    } else {
      throw new TypeError(NOT_A_TOKEN);
    }
    const head = JSON.stringify({ provider, labels });
    const body = Buffer.concat([Buffer.from(`${head.slice(0, -1)},"token":`, "utf8"), raw, Buffer.from("}")]);
    const reply = await this.#transport.send("PUT", credentialPath(id), { raw: body, expect: [200, 201] });
    return { credential: reply.decode(decodeCredential), created: reply.status === 201 };
  }

  /** The credential's metadata; never a secret. */
  async show(id: string): Promise<Credential> {
    return (await this.#transport.send("GET", credentialPath(id))).decode(decodeCredential);
  }

  /**
   * The current access token. `minTtl`: seconds it must stay valid; the daemon refreshes first
   * when it would not, or throws `Conflict` (`token_expired`, `min_ttl_unreachable`).
   */
  async token(id: string, options: { minTtl?: number } = {}): Promise<Token> {
    const query = [["min_ttl", options.minTtl === undefined ? null : String(options.minTtl)]] as const;
    const reply = await this.#transport.send("GET", credentialPath(id, "/token"), { query });
    return reply.decode(decodeToken);
  }

  /**
   * A token derived from the credential's by RFC 8693 token exchange at its provider: for
   * another audience or resource, narrower scopes, or another token type, so a downstream
   * service gets a token meant for it alone while the credential's own never leaves the daemon.
   * The subject is always the stored access token: the refresh token never leaves the vault for
   * an exchange. The daemon answers the same request (lists in any order) from memory while the
   * derived token lives, and leaves the credential as it is. The provider's refusal
   * (`invalid_target`, `invalid_scope`) throws `Unprocessable` with code `provider_rejected` and
   * the OAuth error in `detail`. The result's `issuedTokenType` and `scopes` say what was issued.
   */
  async exchangeToken(id: string, options: TokenExchangeOptions = {}): Promise<Token> {
    // Only what was asked for: the daemon refuses members it does not know.
    const body: Record<string, unknown> = {};
    if (options.audience !== undefined) body.audience = copy(options.audience);
    if (options.resource !== undefined) body.resource = copy(options.resource);
    if (options.scopes !== undefined) body.scopes = [...options.scopes];
    if (options.requestedTokenType !== undefined) body.requested_token_type = options.requestedTokenType;
    const reply = await this.#transport.send("POST", credentialPath(id, "/token-exchange"), {
      json: body,
      timeoutMs: this.#slow(),
    });
    return reply.decode(decodeToken);
  }

  /** One page of metadata, ordered by id (`limit` 1-500, the daemon's default 100). */
  async list(options: ListOptions = {}): Promise<Page<Credential>> {
    const query = [
      ["namespace", options.namespace],
      ["status", options.status],
      ["cursor", options.cursor],
      ["limit", options.limit === undefined ? undefined : String(options.limit)],
    ] as const;
    const reply = await this.#transport.send("GET", "/v1/credentials", { query });
    return reply.decode((document) => decodePage(document, decodeCredential));
  }

  /** Every matching credential, page by page (500 per request): `for await (const c of …)`. */
  listAll(options: { namespace?: string; status?: string } = {}): AsyncGenerator<Credential, void, undefined> {
    return pages((cursor) => this.list({ ...options, ...(cursor === null ? {} : { cursor }), limit: 500 }));
  }

  /**
   * Revokes the tokens at the provider (when it has a revocation endpoint), then deletes.
   * `force`: delete even when revocation fails.
   */
  async delete(id: string, options: { force?: boolean } = {}): Promise<Deleted> {
    const reply = await this.#transport.send("DELETE", credentialPath(id), {
      query: [["force", options.force ? "true" : null]],
      expect: [202, 204],
    });
    if (reply.status === 202) {
      return { revocationPending: true, revoked: null, credential: reply.decode(decodeCredential) };
    }
    const revoked = reply.header("tokenvault-revoked");
    return { revocationPending: false, revoked: revoked === null ? null : revoked === "true", credential: null };
  }

  /** Refreshes now (at most once per credential every `limits.on_demand_refresh_seconds`). */
  async refresh(id: string): Promise<Credential> {
    const reply = await this.#transport.send("POST", credentialPath(id, "/refresh"), { timeoutMs: this.#slow() });
    return reply.decode(decodeCredential);
  }

  /**
   * Has the daemon redeem a one-time `code` with its PKCE verifier at provider instance
   * `provider`, check the id token and store the result. Never returns the refresh token.
   */
  async exchange(id: string, request: ExchangeRequest): Promise<Exchanged> {
    const body: Record<string, unknown> = {
      provider: request.provider,
      code: request.code,
      code_verifier: request.codeVerifier,
      redirect_uri: request.redirectUri,
      labels: request.labels ?? {},
    };
    if (request.nonce !== undefined) body.nonce = request.nonce;
    if (request.state !== undefined) body.state = request.state;
    const reply = await this.#transport.send("POST", credentialPath(id, "/exchange"), {
      json: body,
      expect: [200, 201],
      timeoutMs: this.#slow(),
    });
    return reply.decode((document) => decodeExchanged(document, reply.status === 201));
  }

  /**
   * Has the daemon start a sign-in at `request.provider` that finishes into `id`: it makes and
   * keeps the state, PKCE verifier and nonce, and answers the authorization URL (or, with mode
   * "parameters", the request's parameters for a mobile SDK; with mode "device", a user code
   * while the daemon polls, and no `redirectUri`).
   */
  async startSignIn(id: string, request: SignInRequest): Promise<SignIn> {
    const body: Record<string, unknown> = {
      provider: request.provider,
      scopes: [...(request.scopes ?? [])],
      resources: [...(request.resources ?? [])],
      parameters: { ...request.parameters },
      mode: request.mode ?? "url",
    };
    if (request.redirectUri !== undefined) body.redirect_uri = request.redirectUri;
    if (request.loginHint !== undefined) body.login_hint = request.loginHint;
    if (request.prompt !== undefined) body.prompt = request.prompt;
    if (request.labels !== undefined) body.labels = { ...request.labels };
    const reply = await this.#transport.send("POST", credentialPath(id, "/authorization"), {
      json: body,
      expect: [201],
      timeoutMs: this.#slow(),
    });
    return reply.decode(decodeSignIn);
  }

  /** The caller's device sign-ins waiting for `id`, and how their last sign-in into it ended. */
  async signInStatus(id: string): Promise<SignInStatus> {
    return (await this.#transport.send("GET", credentialPath(id, "/authorization"))).decode(decodeSignInStatus);
  }

  /**
   * Finishes the sign-in the callback's `state` names with the whole URL the authorization
   * server redirected to: the daemon redeems the code and stores (or repairs) the credential.
   * Returns its metadata (never a token) and whether it was created.
   */
  async finishSignIn(id: string, callbackUrl: string): Promise<SignedIn> {
    const reply = await this.#transport.send("POST", credentialPath(id, "/authorization/callback"), {
      json: { callback_url: callbackUrl },
      expect: [200, 201],
      timeoutMs: this.#slow(),
    });
    return { credential: reply.decode(decodeCredential), created: reply.status === 201 };
  }

  /**
   * The credential's metadata now, then again on every change, until it is deleted or the
   * daemon stops (the stream then ends). Close the stream to stop watching. Resolves once the
   * daemon has accepted the watch (a credential that does not exist throws `NotFound`).
   */
  watch(id: string): Promise<Stream<Credential>> {
    return this.#transport.stream(credentialPath(id, "/watch"), decodeCredential);
  }

  /** Every change to the credentials the caller may list, from now on, until the daemon stops. */
  events(): Promise<Stream<Event>> {
    return this.#transport.stream("/v1/events", decodeEvent);
  }

  /** The credentials this process may use through the proxy, and their upstream bases. */
  usableCredentials(options: { namespace?: string } = {}): AsyncGenerator<UsableCredential, void, undefined> {
    return pages(async (cursor) => {
      const query = [
        ["namespace", options.namespace],
        ["cursor", cursor],
        ["limit", "500"],
      ] as const;
      const reply = await this.#transport.send("GET", "/v1/proxy/credentials", { query });
      return reply.decode((document) => decodePage(document, decodeUsableCredential));
    });
  }

  /**
   * Sends `method target` through the daemon's proxy with the credential's token attached; this
   * process never sees the token (`credential:use` is enough). `target`: a URL inside the
   * provider instance's `api_base_urls`, or a path (`/v1/x?y=1`) under the first of them. The
   * upstream's answer is returned whatever its status; the daemon's own refusals
   * (`upstream_not_allowed`, `too_many_proxy_calls`, an unreachable upstream) throw. A path is
   * sent as it is written (percent-encode what must be), less any `#fragment`, which is never
   * part of a request.
   */
  async call(id: string, method: string, target: string, options: CallOptions = {}): Promise<UpstreamResponse> {
    const absolute = !target.startsWith("/") && target.includes("://");
    if (!absolute && !target.startsWith("/")) {
      throw new TypeError(`${JSON.stringify(target.slice(0, 200))} is neither a URL nor a path starting with /`);
    }
    const fragment = target.indexOf("#");
    const relative = fragment < 0 ? target : target.slice(0, fragment);
    const path = credentialPath(id, absolute ? "/proxy" : `/proxy${relative}`);
    const headers: Record<string, string> = { ...options.headers };
    if (absolute) headers["TokenVault-Upstream-URL"] = target;
    const response = await this.#transport.open(method.toUpperCase(), path, {
      body: options.body,
      headers,
      timeoutMs: options.timeoutMs ?? 120_000,
    });
    const marker = response.headers["tokenvault-proxy"];
    if (typeof marker !== "string" || !marker.startsWith("upstream")) throw await this.#transport.refuse(response);
    return new ProxiedResponse(response, marker.includes("refreshed"), this.socketPath);
  }

  /**
   * The timeout of a route that waits for a provider: the client's, but at least 60 s; none when
   * the client has none (0).
   */
  #slow(): number {
    const timeoutMs = this.#transport.timeoutMs;
    return timeoutMs === 0 ? 0 : Math.max(timeoutMs, 60_000);
  }
}

/** One value or several, as sent: a string stays a string, a list is copied. */
function copy(value: string | readonly string[]): string | string[] {
  return typeof value === "string" ? value : [...value];
}

/**
 * Every item of a paged listing: `page` is asked for the page after each cursor (`null`: the
 * first) until there is none. A daemon repeating a cursor would otherwise keep us here for ever.
 */
async function* pages<T>(page: (cursor: string | null) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | null = null;
  const seen = new Set<string>();
  for (;;) {
    const current: Page<T> = await page(cursor);
    yield* current.items;
    if (current.nextCursor === null) return;
    if (seen.has(current.nextCursor)) throw new UnexpectedResponse(200, "the daemon returned the same list cursor twice");
    seen.add(current.nextCursor);
    cursor = current.nextCursor;
  }
}
