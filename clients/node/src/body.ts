/**
 * Bodies over node:http: an answer's read whole, a request's written from an iterable, and the
 * caller's own error when that iterable fails after the answer has arrived.
 */
import { Buffer } from "node:buffer";
import type * as http from "node:http";

/** What a caller's body iterable threw after its answer arrived, by answer. */
const bodyFailures = new WeakMap<http.IncomingMessage, { error: unknown }>();

/**
 * The caller's body iterable threw `error` after `response` arrived: reading the answer rejects
 * with that error from now on, unless the answer had already ended or failed (the first error
 * wins). Closes the answer.
 *
 * @internal
 */
export function failBody(response: http.IncomingMessage, error: unknown): void {
  if (response.destroyed || response.readableEnded) return;
  bodyFailures.set(response, { error });
  response.destroy();
}

/**
 * The caller's own error, when `failBody` recorded one for `response`.
 *
 * @internal
 */
export function bodyFailure(response: http.IncomingMessage): { error: unknown } | undefined {
  return bodyFailures.get(response);
}

/**
 * The body, whole, or its first `limit` bytes (the rest is not waited for). An answer already
 * read to its end resolves empty; one closed before its end, or whose connection breaks before
 * it, rejects.
 *
 * @internal
 */
export function readAll(response: http.IncomingMessage, limit = Infinity): Promise<Buffer> {
  if (response.readableEnded) return Promise.resolve(Buffer.concat([]));
  if (response.destroyed) {
    return Promise.reject(response.errored ?? new Error("the answer was closed before its end"));
  }
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let settled = false;
    const settle = (error: Error | null): void => {
      if (settled) return;
      settled = true;
      if (error) reject(error);
      else resolve(Buffer.concat(chunks));
    };
    response.on("data", (chunk) => {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
      chunks.push(bytes.subarray(0, Math.max(0, limit - size)));
      size += bytes.byteLength;
      if (size >= limit) settle(null);
    });
    response.on("end", () => settle(null));
    response.on("error", settle);
    response.on("close", () => settle(new Error("the connection closed before the answer's end")));
  });
}

/**
 * Writes a chunked body as the iterable yields it, waiting whenever the socket's buffer is full.
 *
 * @internal
 */
export async function writeAll(
  request: http.ClientRequest,
  body: Iterable<Uint8Array | string> | AsyncIterable<Uint8Array | string>,
): Promise<void> {
  for await (const chunk of body) {
    if (request.destroyed) return;
    if (!request.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          request.off("drain", done);
          request.off("close", done);
          resolve();
        };
        request.once("drain", done);
        request.once("close", done);
      });
    }
  }
  if (!request.destroyed) request.end();
}
