/**
 * What `watch` and `events` return. An interface, implemented in ndjson.ts, so that the
 * declarations users compile against name no Node.js type (they need no `@types/node`).
 */

declare global {
  /**
   * `Symbol.asyncDispose`, which Node 20 has but ES2022's declarations lack (TypeScript 5.2's
   * `esnext.disposable` and `@types/node` declare it the same way): what `await using` calls.
   */
  interface SymbolConstructor {
    readonly asyncDispose: unique symbol;
  }
}

/**
 * The daemon's lines, decoded one at a time as they arrive: `for await (const item of stream)`.
 * The request was made when the stream was opened, so nothing that happened after that is
 * missed. Iteration ends when the daemon ends the stream (the credential was deleted, the daemon
 * stopped); `close()` ends it early, also while a `next()` waits (which then resolves as done),
 * and leaving a `for await` loop early closes it, as does leaving the block of an
 * `await using` declaration.
 */
export interface Stream<T> extends AsyncIterableIterator<T> {
  /** The next item, or `done` once the stream has ended or was closed. */
  next(): Promise<IteratorResult<T, undefined>>;
  /** Closes the stream (what leaving a `for await` loop early calls). */
  return(): Promise<IteratorResult<T, undefined>>;
  /** Ends the stream and its connection. */
  close(): void;
  /** Closes the stream (what `await using` calls). */
  [Symbol.asyncDispose](): Promise<void>;
  [Symbol.asyncIterator](): Stream<T>;
}
