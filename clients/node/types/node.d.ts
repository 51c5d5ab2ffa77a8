// The few Node.js APIs the client uses, declared by hand because Debian packages no `@types/node`
// for Node 20 (its nodejs 18 package carries one for 18; this machine's node 20 does not) and no
// npm registry is reachable. Only the members src/ calls, written to match Node 20's
// documentation; the tests exercise every one of them against the real runtime.
//
// This file is an input of the build only. Nothing here reaches dist/*.d.ts: the client's public
// types use ECMAScript types alone (Uint8Array, AsyncIterable, Record), and the declarations that
// name these are @internal, left out by stripInternal, so a consumer compiles against them with
// or without @types/node (scripts/test-node-client.sh checks both).

declare module "node:buffer" {
  type Encoding = "utf8" | "base64";
  class Buffer extends Uint8Array {
    static from(text: string, encoding?: Encoding): Buffer;
    static from(bytes: Uint8Array): Buffer;
    static concat(list: readonly Uint8Array[]): Buffer;
    toString(encoding?: Encoding): string;
  }
}

declare module "node:crypto" {
  import { Buffer } from "node:buffer";
  interface Hmac {
    update(data: string | Uint8Array): Hmac;
    digest(): Buffer;
  }
  function createHmac(algorithm: "sha256", key: Uint8Array): Hmac;
  function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
}

declare module "node:fs" {
  interface Stats {
    isDirectory(): boolean;
    uid: number;
    mode: number;
  }
  function lstatSync(path: string, options: { throwIfNoEntry: false }): Stats | undefined;
  function existsSync(path: string): boolean;
}

declare module "node:path" {
  function resolve(...paths: string[]): string;
  function join(...paths: string[]): string;
}

declare module "node:process" {
  interface Process {
    env: Record<string, string | undefined>;
    /** Absent on Windows. */
    geteuid?: () => number;
  }
  const process: Process;
  export default process;
}

declare module "node:http" {
  import { Buffer } from "node:buffer";

  type IncomingHttpHeaders = Record<string, string | string[] | undefined>;

  interface Socket {
    /** 0 turns the idle timeout off. */
    setTimeout(milliseconds: number): Socket;
  }

  interface RequestOptions {
    socketPath?: string;
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    /** false: a connection of its own, closed after the answer. */
    agent?: false;
    /** Socket idle timeout in milliseconds: emits "timeout", which the caller must act on. */
    timeout?: number;
  }

  class IncomingMessage {
    statusCode?: number;
    statusMessage?: string;
    /** Lower-cased names; repeated ones joined or kept in an array. */
    headers: IncomingHttpHeaders;
    /** Names as sent, alternating with their values. */
    rawHeaders: string[];
    socket: Socket;
    /** "end" was emitted: the body was read to its end. */
    readonly readableEnded: boolean;
    /** destroy() was called (by the reader, or when the connection failed). */
    readonly destroyed: boolean;
    /** The error it was destroyed with, if any. */
    readonly errored: Error | null;
    pause(): this;
    resume(): this;
    destroy(): this;
    on(event: "data", listener: (chunk: Buffer | string) => void): this;
    on(event: "end" | "close", listener: () => void): this;
    on(event: "error", listener: (error: Error) => void): this;
    [Symbol.asyncIterator](): AsyncIterableIterator<Buffer>;
  }

  class ClientRequest {
    destroyed: boolean;
    write(chunk: string | Uint8Array): boolean;
    end(chunk?: string | Uint8Array): this;
    destroy(error?: Error): this;
    on(event: "response", listener: (response: IncomingMessage) => void): this;
    on(event: "error", listener: (error: Error) => void): this;
    on(event: "timeout", listener: () => void): this;
    once(event: "drain" | "close", listener: () => void): this;
    off(event: "drain" | "close", listener: () => void): this;
  }

  function request(options: RequestOptions): ClientRequest;
}
