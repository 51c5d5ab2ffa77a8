/**
 * What `call` sends and returns. Interfaces, implemented in transport.ts and proxied.ts, so that
 * the declarations users compile against name no Node.js type (they need no `@types/node`).
 */

/**
 * A request body: text or bytes, sent whole; or an iterable of chunks (a file's read stream, a
 * generator), sent chunked as it yields.
 */
export type Body = string | Uint8Array | Iterable<Uint8Array | string> | AsyncIterable<Uint8Array | string>;

/**
 * The upstream's status, headers and body, the body still streaming from the daemon. Read it
 * (`read`, `text`, `json`, or `for await` over its chunks) or `close()` it (or declare it with
 * `await using`): an answer neither read to the end nor closed keeps its connection open. Read
 * again once read to its end, the body is empty; read after `close()`, it rejects.
 */
export interface UpstreamResponse extends AsyncIterable<Uint8Array> {
  readonly status: number;
  readonly statusText: string;
  /** The headers as the upstream sent them (names in their case, in order), less `TokenVault-Proxy`. */
  readonly headers: readonly (readonly [string, string])[];
  /** The token was refused once, refreshed, and the call sent again. */
  readonly refreshed: boolean;
  /** The first header named `name` (any case), or `null`. */
  header(name: string): string | null;
  /** The rest of the body, whole. */
  read(): Promise<Uint8Array>;
  /** The rest of the body as UTF-8 text. */
  text(): Promise<string>;
  /** The rest of the body parsed as JSON (a `SyntaxError` when it is not). */
  json(): Promise<unknown>;
  /** Ends the answer and its connection, read or not. */
  close(): void;
  /** Closes the answer (what `await using` calls). */
  [Symbol.asyncDispose](): Promise<void>;
}
