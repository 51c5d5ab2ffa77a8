/** A `Stream` read from an NDJSON answer of the daemon (`watch`, `events`). */
import { Buffer } from "node:buffer";
import type * as http from "node:http";

import { Document, Malformed } from "./document.js";
import { ConnectionFailed, UnexpectedResponse } from "./errors.js";
import type { Stream } from "./stream.js";

/** The longest line a stream takes, in bytes: the daemon's lines are a few kilobytes. */
const MAX_LINE_BYTES = 16 << 20;
const NEWLINE = 0x0a;

/**
 * Splits the answer into lines as its chunks arrive and decodes one per `next()`. The connection
 * is paused while received-but-unread lines wait, so a slow reader holds the daemon back instead
 * of filling memory.
 *
 * Lines are split on the byte `\n`, which never occurs inside a UTF-8 character, and decoded
 * whole, so a character split across chunks is read as one. Blank lines (the daemon's
 * keep-alives) are skipped, a `\r` before the `\n` is whitespace to JSON, and a last line without
 * its `\n` is decoded when the answer ends properly, as the Python client's `readline()` gives
 * it. A line longer than 16 MiB, or one that is not what the API promises, throws
 * `UnexpectedResponse`; a connection that breaks before the answer's end throws
 * `ConnectionFailed`, never a quiet end.
 *
 * @internal
 */
export class NdjsonStream<T> implements Stream<T> {
  readonly #response: http.IncomingMessage;
  readonly #build: (document: Document) => T;
  readonly #socketPath: string;
  /** Whole lines received and not yet read; the connection is paused while there are any. */
  readonly #lines: string[] = [];
  /** The pieces of the line being received, and their size in bytes. */
  #pieces: Uint8Array[] = [];
  #size = 0;
  #ended = false;
  #closed = false;
  /** What the daemon sent wrong (thrown as it is, once the lines before it are read). */
  #refusal: UnexpectedResponse | null = null;
  /** The connection's failure (thrown as `ConnectionFailed`). */
  #error: Error | null = null;
  #waiting: (() => void)[] = [];
  declare readonly [Symbol.asyncDispose]: () => Promise<void>;

  constructor(response: http.IncomingMessage, build: (document: Document) => T, socketPath: string) {
    this.#response = response;
    this.#build = build;
    this.#socketPath = socketPath;
    response.on("data", (chunk) => {
      this.#receive(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk);
      if (this.#lines.length > 0) response.pause();
      this.#wake();
    });
    response.on("end", () => {
      if (this.#refusal === null) this.#endLine();
      this.#ended = true;
      this.#wake();
    });
    response.on("error", (error) => {
      this.#error ??= error;
      this.#wake();
    });
    response.on("close", () => {
      if (!this.#ended) this.#error ??= new Error("the stream broke off");
      this.#wake();
    });
  }

  async next(): Promise<IteratorResult<T, undefined>> {
    for (;;) {
      if (this.#closed) return { done: true, value: undefined };
      const line = this.#lines.shift();
      if (line !== undefined) {
        try {
          return { done: false, value: this.#build(new Document(JSON.parse(line))) };
        } catch (error) {
          this.close();
          if (error instanceof SyntaxError || error instanceof Malformed) {
            throw new UnexpectedResponse(200, "a stream line is not what the API promises");
          }
          throw error;
        }
      }
      if (this.#refusal !== null) {
        const refusal = this.#refusal;
        this.close();
        throw refusal;
      }
      if (this.#ended) {
        this.close();
        return { done: true, value: undefined };
      }
      if (this.#error !== null) {
        const error = this.#error;
        this.close();
        throw new ConnectionFailed(this.#socketPath, error);
      }
      this.#response.resume();
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  async return(): Promise<IteratorResult<T, undefined>> {
    this.close();
    return { done: true, value: undefined };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#response.destroy();
    this.#wake();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Adds a chunk: each `\n` in it ends a line; only the chunk is searched, never what came before. */
  #receive(chunk: Uint8Array): void {
    if (this.#refusal !== null) return;
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      const piece = chunk.subarray(start, end < 0 ? chunk.byteLength : end);
      if (this.#size + piece.byteLength > MAX_LINE_BYTES) {
        this.#refusal = new UnexpectedResponse(200, `a stream line is longer than ${MAX_LINE_BYTES} bytes`);
        this.#pieces = [];
        this.#response.destroy();
        return;
      }
      if (piece.byteLength > 0) {
        this.#pieces.push(piece);
        this.#size += piece.byteLength;
      }
      if (end < 0) return;
      this.#endLine();
      start = end + 1;
    }
  }

  /** The line received so far is whole: queued unless blank. */
  #endLine(): void {
    if (this.#pieces.length === 0) return;
    const line = Buffer.concat(this.#pieces).toString("utf8");
    this.#pieces = [];
    this.#size = 0;
    // The daemon may write an empty line as a keep-alive: not an item.
    if (line.trim() !== "") this.#lines.push(line);
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const resolve of waiting) resolve();
  }
}

// `await using stream = await vault.watch(…)` closes it; an early Node 20 may have no such symbol.
if (typeof Symbol.asyncDispose === "symbol") {
  Object.defineProperty(NdjsonStream.prototype, Symbol.asyncDispose, {
    async value(this: NdjsonStream<unknown>): Promise<void> {
      this.close();
    },
    writable: true,
    configurable: true,
  });
}
