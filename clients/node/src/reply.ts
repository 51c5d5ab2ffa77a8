/** A whole answer of the daemon, read by `Transport.send`, and its decoding into a result. */
import { Buffer } from "node:buffer";

import { Document, Malformed } from "./document.js";
import { UnexpectedResponse } from "./errors.js";

/**
 * A whole answer: status, headers (lower-cased names) and body.
 *
 * @internal
 */
export class Reply {
  constructor(
    readonly status: number,
    readonly headers: Readonly<Record<string, string | string[] | undefined>>,
    readonly body: Uint8Array,
  ) {}

  header(name: string): string | null {
    const value = this.headers[name.toLowerCase()];
    return (Array.isArray(value) ? value[0] : value) ?? null;
  }

  /**
   * The body as `build` makes it of the JSON; a document without what the API promises is an
   * `UnexpectedResponse`, not a `TypeError` somewhere later.
   */
  decode<T>(build: (document: Document) => T): T {
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(this.body).toString("utf8"));
    } catch {
      // Fixed text: JSON.parse's message quotes the body's start, which may be a token.
      throw new UnexpectedResponse(this.status, "the body is not JSON");
    }
    try {
      return build(new Document(value));
    } catch (error) {
      if (error instanceof Malformed) throw new UnexpectedResponse(this.status, error.message);
      throw error;
    }
  }
}
