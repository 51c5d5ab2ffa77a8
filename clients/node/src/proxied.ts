/** The `UpstreamResponse` of a call made through the daemon's proxy. */
import { Buffer } from "node:buffer";
import type * as http from "node:http";

import { bodyFailure, readAll } from "./body.js";
import { ConnectionFailed } from "./errors.js";
import type { UpstreamResponse } from "./upstream.js";

/**
 * The upstream's answer as the daemon relays it, its body read from the connection on demand.
 *
 * @internal
 */
export class ProxiedResponse implements UpstreamResponse {
  readonly #response: http.IncomingMessage;
  readonly #socketPath: string;
  readonly status: number;
  readonly statusText: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly refreshed: boolean;
  declare readonly [Symbol.asyncDispose]: () => Promise<void>;

  constructor(response: http.IncomingMessage, refreshed: boolean, socketPath: string) {
    this.#response = response;
    this.#socketPath = socketPath;
    this.status = response.statusCode ?? 0;
    this.statusText = response.statusMessage ?? "";
    const headers: [string, string][] = [];
    const raw = response.rawHeaders;
    for (let index = 0; index + 1 < raw.length; index += 2) {
      const name = raw[index] as string;
      if (name.toLowerCase() !== "tokenvault-proxy") headers.push([name, raw[index + 1] as string]);
    }
    this.headers = headers;
    this.refreshed = refreshed;
  }

  header(name: string): string | null {
    const lowered = name.toLowerCase();
    return this.headers.find(([key]) => key.toLowerCase() === lowered)?.[1] ?? null;
  }

  async read(): Promise<Uint8Array> {
    try {
      return await readAll(this.#response);
    } catch (error) {
      throw this.#failure(error);
    }
  }

  async text(): Promise<string> {
    return Buffer.from(await this.read()).toString("utf8");
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  /** The body's chunks as they arrive. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array, void, undefined> {
    try {
      for await (const chunk of this.#response) yield chunk;
    } catch (error) {
      throw this.#failure(error);
    }
  }

  close(): void {
    this.#response.destroy();
  }

  /** The caller's own body error when that is what ended the answer, else the connection's. */
  #failure(error: unknown): unknown {
    const own = bodyFailure(this.#response);
    return own === undefined ? new ConnectionFailed(this.#socketPath, error) : own.error;
  }
}

// `await using answer = await vault.call(…)` closes it; an early Node 20 may have no such symbol.
if (typeof Symbol.asyncDispose === "symbol") {
  Object.defineProperty(ProxiedResponse.prototype, Symbol.asyncDispose, {
    async value(this: ProxiedResponse): Promise<void> {
      this.close();
    },
    writable: true,
    configurable: true,
  });
}
