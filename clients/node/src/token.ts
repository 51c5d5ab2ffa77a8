/**
 * The access token `token()`, `exchange()` and `exchangeToken()` return. A file of its own
 * because it is the one value of this package that holds a secret: it keeps the secret in
 * private fields and defines how it prints (`toString`, `toJSON`, `util.inspect`), so no log
 * line shows it.
 */
import { Document } from "./document.js";

const inspect = Symbol.for("nodejs.util.inspect.custom");

/**
 * An access token: the credential's own (`GET …/token`) or one derived from it
 * (`POST …/token-exchange`). Never a refresh token: the daemon does not give those out.
 *
 * The token and id token are private fields behind getters, so `console.log`, `util.inspect`,
 * `JSON.stringify` and string conversion never show them (a token in a log line is a leaked
 * token); read them explicitly with `accessToken`, `idToken` or `authorization`.
 */
export class Token {
  readonly #accessToken: string;
  readonly #idToken: string | null;
  /** The stored token type, `Bearer` when the provider gave none. */
  readonly tokenType: string;
  /** When it expires; `null` when unknown. */
  readonly expiresAt: string | null;
  /**
   * A derived token's RFC 8693 `issued_token_type` (`urn:ietf:params:oauth:token-type:access_token`,
   * …); `null` for the credential's own.
   */
  readonly issuedTokenType: string | null;
  /** A derived token's scopes; `null` for the credential's own. */
  readonly scopes: readonly string[] | null;

  constructor(
    accessToken: string,
    tokenType: string,
    expiresAt: string | null = null,
    idToken: string | null = null,
    issuedTokenType: string | null = null,
    scopes: readonly string[] | null = null,
  ) {
    this.#accessToken = accessToken;
    this.#idToken = idToken;
    this.tokenType = tokenType;
    this.expiresAt = expiresAt;
    this.issuedTokenType = issuedTokenType;
    this.scopes = scopes === null ? null : Object.freeze([...scopes]);
  }

  get accessToken(): string {
    return this.#accessToken;
  }

  /** The OIDC id token, when the credential has one. */
  get idToken(): string | null {
    return this.#idToken;
  }

  /** The `Authorization` header's value: `Bearer <token>`. */
  get authorization(): string {
    return `${this.tokenType} ${this.#accessToken}`;
  }

  toString(): string {
    // What a derived token is for (its type and scopes) is no secret: shown when there.
    const derived =
      this.issuedTokenType === null && this.scopes === null
        ? ""
        : `, issued ${this.issuedTokenType ?? "unknown"}, scopes [${(this.scopes ?? []).join(" ")}]`;
    return `Token(${this.tokenType}, expires ${this.expiresAt ?? "unknown"}${derived}, redacted)`;
  }

  toJSON(): { tokenType: string; expiresAt: string | null; issuedTokenType?: string; scopes?: readonly string[] } {
    return {
      tokenType: this.tokenType,
      expiresAt: this.expiresAt,
      ...(this.issuedTokenType === null ? {} : { issuedTokenType: this.issuedTokenType }),
      ...(this.scopes === null ? {} : { scopes: this.scopes }),
    };
  }

  [inspect](): string {
    return this.toString();
  }
}

export function decodeToken(document: Document): Token {
  return new Token(
    document.string("access_token"),
    document.optionalString("token_type") || "Bearer",
    document.optionalString("expires_at"),
    document.optionalString("id_token"),
    document.optionalString("issued_token_type"),
    document.optionalStrings("scopes"),
  );
}
