/** HTTP/1.1 over the daemon's Unix socket: the one place this package sends a request. */
import { Buffer } from "node:buffer";
import * as http from "node:http";

import { failBody, readAll, writeAll } from "./body.js";
import type { Document } from "./document.js";
import { ConnectionFailed, ProblemError } from "./errors.js";
import { NdjsonStream } from "./ndjson.js";
import { Reply } from "./reply.js";
import type { Stream } from "./stream.js";
import type { Body } from "./upstream.js";

/**
 * Query parameters in order; a `null` or `undefined` value leaves the parameter out.
 *
 * @internal
 */
export type Query = readonly (readonly [string, string | null | undefined])[];

/** The headers that frame a body: the client sets them, never the caller. */
const FRAMING = ["content-length", "transfer-encoding"];

/** @internal */
export interface OpenOptions {
  body?: Body | undefined;
  headers?: Readonly<Record<string, string>>;
  /** Overrides the client's timeout for this request. */
  timeoutMs?: number | undefined;
}

/** @internal */
export interface SendOptions {
  query?: Query;
  /** A value sent as JSON. */
  json?: unknown;
  /** A body already encoded as JSON. */
  raw?: Uint8Array;
  /** The statuses that are an answer; any other throws the daemon's problem. */
  expect?: readonly number[];
  timeoutMs?: number;
}

/**
 * Sends requests to the daemon, one connection per request (a Unix socket connects in
 * microseconds; nothing is kept between calls, so nothing can go stale and a client can be
 * shared freely). The timeout is the socket's idle limit: the connect, the answer's head, and
 * each wait for more of its body (0: no limit).
 *
 * @internal
 */
export class Transport {
  constructor(
    readonly socketPath: string,
    readonly timeoutMs: number,
  ) {}

  /**
   * Sends the request and resolves to the answer with its body unread (the caller reads or
   * destroys it). An unreachable socket or a broken connection rejects with `ConnectionFailed`.
   */
  open(method: string, target: string, options: OpenOptions = {}): Promise<http.IncomingMessage> {
    const { body } = options;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const whole = typeof body === "string" ? Buffer.from(body, "utf8") : body instanceof Uint8Array ? body : undefined;
    // The body's framing is the client's to say: a caller's Content-Length or Transfer-Encoding
    // could only contradict it.
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (!FRAMING.includes(name.toLowerCase())) headers[name] = value;
    }
    if (whole !== undefined) {
      headers["Content-Length"] = String(whole.byteLength);
    } else if (body !== undefined) {
      // Node chunks only POST, PUT and PATCH by itself: a DELETE's chunks would go unframed.
      headers["Transfer-Encoding"] = "chunked";
    } else if (["POST", "PUT", "PATCH"].includes(method)) {
      headers["Content-Length"] = "0"; // as http.client and net/http send: no chunked empty body
    }
    return new Promise((resolve, reject) => {
      // Throws a TypeError for a header with a line break or NUL, as it should: nothing is sent.
      const request = http.request({
        socketPath: this.socketPath,
        method,
        path: target,
        headers,
        agent: false,
        timeout: timeoutMs,
      });
      let response: http.IncomingMessage | undefined;
      request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on("error", (error) => reject(new ConnectionFailed(this.socketPath, error)));
      request.on("response", (answer) => {
        response = answer;
        resolve(answer);
      });
      if (body === undefined || typeof body === "string" || body instanceof Uint8Array) {
        request.end(whole);
      } else {
        writeAll(request, body).catch((error: unknown) => {
          // The caller's iterable failed: its own error, not a connection's, whether the answer
          // has come (then reading it rejects with the error) or not.
          if (response === undefined) reject(error);
          else failBody(response, error);
          request.destroy();
        });
      }
    });
  }

  /** A request whose answer is read whole; a status outside `expect` throws the daemon's problem. */
  async send(method: string, path: string, options: SendOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = { Accept: "application/json" };
    let body = options.raw;
    if (options.json !== undefined) body = Buffer.from(JSON.stringify(options.json), "utf8");
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await this.open(method, target(path, options.query ?? []), {
      body,
      headers,
      timeoutMs: options.timeoutMs,
    });
    let data: Uint8Array;
    try {
      data = await readAll(response);
    } catch (error) {
      throw new ConnectionFailed(this.socketPath, error);
    }
    const status = response.statusCode ?? 0;
    if (!(options.expect ?? [200]).includes(status)) {
      throw ProblemError.fromReply(status, contentType(response), data);
    }
    return new Reply(status, response.headers, data);
  }

  /**
   * An NDJSON answer as a `Stream`, its request sent now. A stream waits as long as the daemon
   * is quiet: the timeout covers the connect and the answer's head only.
   */
  async stream<T>(path: string, build: (document: Document) => T): Promise<Stream<T>> {
    const response = await this.open("GET", path, { headers: { Accept: "application/x-ndjson" } });
    if (response.statusCode !== 200) throw await this.refuse(response);
    response.socket.setTimeout(0);
    return new NdjsonStream(response, build, this.socketPath);
  }

  /** The daemon's problem in an answer that is not the one asked for (read up to 1 MiB), the answer closed. */
  async refuse(response: http.IncomingMessage): Promise<ProblemError> {
    const status = response.statusCode ?? 0;
    try {
      return ProblemError.fromReply(status, contentType(response), await readAll(response, 1 << 20));
    } catch (error) {
      return new ProblemError(status, `http_${status}`, { detail: `the answer broke off: ${(error as Error).message}` });
    } finally {
      response.destroy();
    }
  }
}

/**
 * `/v1/credentials/{namespace}/{name}{suffix}`, each part percent-encoded.
 *
 * @internal
 */
export function credentialPath(credentialId: string, suffix = ""): string {
  const parts = credentialId.split("/");
  if (parts.length !== 2 || parts.some((part) => part === "" || part === "." || part === "..")) {
    throw new TypeError(`${JSON.stringify(credentialId)} is not a credential id (namespace/name)`);
  }
  return `/v1/credentials/${encodeURIComponent(parts[0] as string)}/${encodeURIComponent(parts[1] as string)}${suffix}`;
}

/**
 * The path with its query string.
 *
 * @internal
 */
export function target(path: string, query: Query): string {
  const pairs = query
    .filter((pair): pair is readonly [string, string] => pair[1] !== undefined && pair[1] !== null)
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
  return pairs.length > 0 ? `${path}?${pairs.join("&")}` : path;
}

function contentType(response: http.IncomingMessage): string {
  const value = response.headers["content-type"];
  return typeof value === "string" ? value : "";
}
