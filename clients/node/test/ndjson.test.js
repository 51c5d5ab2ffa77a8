// How a stream reads the daemon's NDJSON, against a stand-in daemon that splits its answer
// where the real one seldom does: lines and UTF-8 characters across chunks, keep-alive blank
// lines, `\r\n`, a last line without its `\n` (decoded, as the Python client's readline() gives
// it), a line that is not what the API promises, one too long, and a connection reset mid-line.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, ConnectionFailed, UnexpectedResponse } from "tokenvault";

import { sleep } from "./daemon.js";
import { chunk, chunkedHead, fakeDaemon, lastChunk, within } from "./fake.js";

const NDJSON = { "Content-Type": "application/x-ndjson" };

/** An event line of the daemon, without its `\n`. */
function line(generation, id = "payments/alice") {
  const event = { type: "refreshed", credential_id: id, at: "2025-01-01T00:00:00Z", status: "active", generation };
  return JSON.stringify(event);
}

/** A stand-in daemon that answers every request with `write(connection)`'s chunks, 20 ms apart. */
async function streaming(t, parts, end = lastChunk) {
  const { socket } = await fakeDaemon(t, async (connection) => {
    chunkedHead(connection, NDJSON);
    for (const part of parts) {
      chunk(connection, part);
      await sleep(20); // each chunk a read of its own
    }
    end(connection);
  });
  return new Client(socket);
}

async function drain(stream) {
  const items = [];
  for await (const item of stream) items.push(item);
  return items;
}

test("lines and characters split across chunks, blank lines, CRLF and a last line without its newline", async (t) => {
  const first = Buffer.from(line(1, "payments/josé") + "\r\n");
  const cut = first.indexOf(Buffer.from("é")) + 1; // between é's two bytes
  const second = line(2);
  const vault = await streaming(t, [
    "\n",
    first.subarray(0, cut),
    Buffer.concat([first.subarray(cut), Buffer.from("\n \r\n" + second.slice(0, 10))]),
    second.slice(10) + "\n\n" + line(3).slice(0, 5),
    line(3).slice(5), // the answer ends without a last \n: the line is read all the same
  ]);
  const items = await within(10_000, drain(await vault.events()), "the stream");
  assert.deepEqual(
    items.map((event) => [event.credentialId, event.generation]),
    [
      ["payments/josé", 1],
      ["payments/alice", 2],
      ["payments/alice", 3],
    ],
  );
});

test("a line that is not what the API promises is an UnexpectedResponse, and the stream ends", async (t) => {
  for (const wrong of ["not json", '{"type": 7}', "[1, 2]"]) {
    const vault = await streaming(t, [line(1) + "\n" + wrong + "\n" + line(2) + "\n"]);
    const stream = await vault.events();
    assert.equal((await within(5000, stream.next(), "the first line")).value.generation, 1);
    await assert.rejects(within(5000, stream.next(), wrong), (error) => {
      assert.ok(error instanceof UnexpectedResponse, String(error));
      assert.ok(!error.message.includes(wrong), "the line is not quoted");
      return true;
    });
    assert.deepEqual(await stream.next(), { done: true, value: undefined });
  }
});

test("a line longer than 16 MiB is refused, after the lines before it", async (t) => {
  const { socket } = await fakeDaemon(t, (connection) => {
    chunkedHead(connection, NDJSON);
    chunk(connection, line(1) + "\n");
    chunk(connection, Buffer.alloc((16 << 20) + 1, "x")); // and the connection stays open
  });
  const stream = await new Client(socket).events();
  assert.equal((await within(5000, stream.next(), "the first line")).value.generation, 1);
  await assert.rejects(within(20_000, stream.next(), "a line without end"), (error) => {
    assert.ok(error instanceof UnexpectedResponse, String(error));
    assert.match(error.message, /longer than 16777216 bytes/);
    return true;
  });
  assert.deepEqual(await stream.next(), { done: true, value: undefined });
});

test("a connection that breaks mid-stream is a ConnectionFailed, not an end", async (t) => {
  // A Unix socket has no TCP reset: the daemon's end of it closes mid-line, the answer unfinished.
  const vault = await streaming(t, [line(1) + "\n", line(2).slice(0, 12)], (connection) => connection.destroy());
  const stream = await vault.events();
  assert.equal((await within(5000, stream.next(), "the first line")).value.generation, 1);
  await assert.rejects(within(5000, stream.next(), "the reset"), ConnectionFailed);
  assert.deepEqual(await stream.next(), { done: true, value: undefined });
});

test("await using closes a stream", async (t) => {
  assert.equal(typeof Symbol.asyncDispose, "symbol", "Node 20 has Symbol.asyncDispose");
  const { socket } = await fakeDaemon(t, (connection) => {
    chunkedHead(connection, NDJSON);
    chunk(connection, line(1) + "\n"); // and nothing more: the connection stays open
  });
  const stream = await new Client(socket).events();
  assert.equal((await stream.next()).value.generation, 1);
  const waiting = stream.next();
  await stream[Symbol.asyncDispose]();
  assert.deepEqual(await within(5000, waiting, "a disposed stream"), { done: true, value: undefined });
});
