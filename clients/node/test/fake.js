// A stand-in for the daemon on a Unix socket, for what the real one never does: it records each
// request's head as it arrived and answers with whatever bytes the test writes, when it writes
// them (lines split anywhere, a connection reset mid-answer, a body that is not JSON).
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Listens on a fresh socket; `respond(connection, request)` is called with each connection once
 * its request's head has arrived (`request.line`, `request.headers` with lower-cased names).
 * Everything is closed after the test.
 */
export async function fakeDaemon(t, respond) {
  const directory = mkdtempSync(join(tmpdir(), "tv-node-"));
  const socket = join(directory, "fake.sock");
  const requests = [];
  const connections = new Set();
  const server = net.createServer((connection) => {
    connections.add(connection);
    connection.on("close", () => connections.delete(connection));
    connection.on("error", () => {});
    let head = Buffer.alloc(0);
    const receive = (data) => {
      head = Buffer.concat([head, data]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      connection.off("data", receive);
      connection.resume(); // a body the test does not read is drained, not left to fill buffers
      const [line, ...fields] = head.subarray(0, end).toString("latin1").split("\r\n");
      const headers = {};
      for (const field of fields) {
        const colon = field.indexOf(":");
        headers[field.slice(0, colon).trim().toLowerCase()] = field.slice(colon + 1).trim();
      }
      const request = { line, headers };
      requests.push(request);
      respond(connection, request);
    };
    connection.on("data", receive);
  });
  server.listen(socket);
  await once(server, "listening");
  t.after(() => {
    for (const connection of connections) connection.destroy();
    server.close();
    rmSync(directory, { recursive: true, force: true });
  });
  return { socket, requests };
}

/** A whole answer with a body of known length, the connection closed after it. */
export function answer(connection, status, body, headers = {}) {
  const bytes = Buffer.from(body);
  const fields = { "Content-Length": bytes.byteLength, Connection: "close", ...headers };
  const head = [`HTTP/1.1 ${status} X`, ...Object.entries(fields).map(([name, value]) => `${name}: ${value}`)];
  connection.end(Buffer.concat([Buffer.from(head.join("\r\n") + "\r\n\r\n", "latin1"), bytes]));
}

/** The daemon's problem for a credential that does not exist. */
export function notFound(connection) {
  answer(connection, 404, '{"status":404,"code":"credential_not_found","title":"Not Found"}', {
    "Content-Type": "application/problem+json",
  });
}

/** The head of a chunked answer (200 unless told); write its body with `chunk`, end it with `lastChunk`. */
export function chunkedHead(connection, headers = {}, status = 200) {
  const fields = { "Transfer-Encoding": "chunked", ...headers };
  const head = [`HTTP/1.1 ${status} OK`, ...Object.entries(fields).map(([name, value]) => `${name}: ${value}`)];
  connection.write(head.join("\r\n") + "\r\n\r\n");
}

/** One chunk of a chunked body: text or bytes. */
export function chunk(connection, data) {
  const bytes = Buffer.from(data);
  connection.write(Buffer.concat([Buffer.from(`${bytes.byteLength.toString(16)}\r\n`), bytes, Buffer.from("\r\n")]));
}

export function lastChunk(connection) {
  connection.end("0\r\n\r\n");
}

/** Resolves to what `promise` gave, or rejects after `milliseconds`: a test fails instead of hanging. */
export function within(milliseconds, promise, why) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${why}: nothing within ${milliseconds} ms`)), milliseconds);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
