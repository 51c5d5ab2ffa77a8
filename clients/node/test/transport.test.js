// What the client puts on the wire and makes of odd answers, against a stand-in daemon: the
// request line for ids and targets that need encoding, a body that is not JSON never quoted,
// `timeoutMs: 0` kept on the slow routes, a credential's grant read or null, a proxied answer read
// twice or after close, and the caller's own error when its body fails after the answer came.
import assert from "node:assert/strict";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { test } from "node:test";
import { inspect } from "node:util";

import { Client, ConnectionFailed, NotFound, UnexpectedResponse } from "tokenvault";

import { answer, chunk, chunkedHead, fakeDaemon, notFound, within } from "./fake.js";

const PROXIED = { "TokenVault-Proxy": "upstream" };

test("the request line carries ids percent-encoded and targets as written, less a fragment", async (t) => {
  const { socket, requests } = await fakeDaemon(t, notFound);
  const vault = new Client(socket);
  const sent = async (call) => {
    const before = requests.length;
    await assert.rejects(call(), NotFound);
    assert.equal(requests.length, before + 1);
    return requests.at(-1);
  };
  const ids = [
    ["a/b?x", "/v1/credentials/a/b%3Fx"],
    ["a/b#x", "/v1/credentials/a/b%23x"],
    ["a/%2e%2e", "/v1/credentials/a/%252e%252e"],
    ["a b/c&d", "/v1/credentials/a%20b/c%26d"],
    ["ns/é", "/v1/credentials/ns/%C3%A9"],
  ];
  for (const [id, path] of ids) {
    assert.equal((await sent(() => vault.show(id))).line, `GET ${path} HTTP/1.1`, id);
  }
  assert.equal(
    (await sent(() => vault.token("a/b?x", { minTtl: 60 }))).line,
    "GET /v1/credentials/a/b%3Fx/token?min_ttl=60 HTTP/1.1",
  );
  assert.equal(
    (await sent(() => vault.list({ namespace: "a&b=c#d", cursor: "x/y?" }))).line,
    "GET /v1/credentials?namespace=a%26b%3Dc%23d&cursor=x%2Fy%3F HTTP/1.1",
  );
  const targets = [
    ["a/b", "/x/y?q=a/b&r=%2F", "/v1/credentials/a/b/proxy/x/y?q=a/b&r=%2F"],
    ["a/b?x", "/x", "/v1/credentials/a/b%3Fx/proxy/x"],
    ["a/b", "/x#fragment", "/v1/credentials/a/b/proxy/x"],
    ["a/b", "/x?q=1#fragment?r", "/v1/credentials/a/b/proxy/x?q=1"],
    ["a/b", "/x/%2e%2e/y", "/v1/credentials/a/b/proxy/x/%2e%2e/y"],
    ["a/b", "/x/../y", "/v1/credentials/a/b/proxy/x/../y"], // the daemon decides, not the client
  ];
  for (const [id, target, path] of targets) {
    assert.equal((await sent(() => vault.call(id, "get", target))).line, `GET ${path} HTTP/1.1`, target);
  }
  const absolute = await sent(() => vault.call("a/b", "GET", "https://api.example/a/b?x#y"));
  assert.equal(absolute.line, "GET /v1/credentials/a/b/proxy HTTP/1.1");
  assert.equal(absolute.headers["tokenvault-upstream-url"], "https://api.example/a/b?x#y");
  // Nothing is sent for an id that is not one, or a target that is neither a path nor a URL.
  const before = requests.length;
  for (const id of ["a/..", "a/.", "../b", "a/b/c", "a", "/b"]) await assert.rejects(vault.show(id), TypeError, id);
  await assert.rejects(vault.call("a/b", "GET", "a/b?x"), TypeError);
  await assert.rejects(vault.call("a/..", "GET", "/x"), TypeError);
  assert.equal(requests.length, before);
});

test("a body that is not JSON is refused without quoting it", async (t) => {
  const secret = "at-SECRETS-4f9a1c";
  const { socket } = await fakeDaemon(t, (connection) =>
    answer(connection, 200, `${secret} is not JSON`, { "Content-Type": "application/json" }),
  );
  const vault = new Client(socket);
  for (const call of [() => vault.health(), () => vault.show("a/b"), () => vault.token("a/b")]) {
    await assert.rejects(call(), (error) => {
      assert.ok(error instanceof UnexpectedResponse, String(error));
      assert.equal(error.detail, "the body is not JSON");
      const shown = [error.message, String(error), inspect(error), JSON.stringify(error)].join("\n");
      assert.ok(!shown.includes("SECRETS"), shown);
      return true;
    });
  }
});

test("a credential's grant is read, and null when the daemon sends none", async (t) => {
  const metadata = (name, grant) => ({
    id: `payments/${name}`,
    namespace: "payments",
    name,
    provider: "idp",
    kind: "oauth2",
    status: "active",
    generation: 1,
    scopes: ["read"],
    labels: {},
    issued_at: "2026-01-01T00:00:00Z",
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    has_refresh_token: false,
    has_id_token: false,
    ...(grant === undefined ? {} : { grant }),
  });
  const documents = {
    exchanged: metadata("exchanged", {
      audience: ["https://api.example"],
      requested_token_type: "urn:ietf:params:oauth:token-type:jwt",
      resource: [],
      scopes: ["read"],
      subject: "payments/bob",
      type: "token_exchange",
    }),
    obtained: metadata("obtained", { audience: [], resource: ["https://api.example/v1"], scopes: [], type: "client_credentials" }),
    stored: metadata("stored"),
    cleared: metadata("cleared", null),
    untyped: metadata("untyped", { scopes: [] }),
  };
  const { socket } = await fakeDaemon(t, (connection, request) => {
    const name = request.line.split(" ")[1].split("/").at(-1);
    answer(connection, 200, JSON.stringify(documents[name]), { "Content-Type": "application/json" });
  });
  const vault = new Client(socket);
  assert.deepEqual((await vault.show("payments/exchanged")).grant, {
    type: "token_exchange",
    scopes: ["read"],
    audience: ["https://api.example"],
    resource: [],
    subject: "payments/bob",
    requestedTokenType: "urn:ietf:params:oauth:token-type:jwt",
  });
  const obtained = await vault.show("payments/obtained");
  assert.deepEqual(obtained.grant, {
    type: "client_credentials",
    scopes: [],
    audience: [],
    resource: ["https://api.example/v1"],
    subject: null,
    requestedTokenType: null,
  });
  assert.deepEqual(obtained.raw.grant, documents.obtained.grant);
  assert.equal((await vault.show("payments/stored")).grant, null);
  assert.equal((await vault.show("payments/cleared")).grant, null);
  await assert.rejects(vault.show("payments/untyped"), UnexpectedResponse);
});

test("timeoutMs 0 means no timeout on every route, the slow ones too", async (t) => {
  const { socket } = await fakeDaemon(t, notFound);
  // The socket timeout each request is made with, as node:http is asked for it.
  const http = createRequire(import.meta.url)("node:http");
  const request = http.request;
  const timeouts = [];
  http.request = (options, ...rest) => {
    timeouts.push(options.timeout);
    return request(options, ...rest);
  };
  syncBuiltinESMExports();
  t.after(() => {
    http.request = request;
    syncBuiltinESMExports();
  });
  const routes = (vault) => [
    () => vault.show("a/b"),
    () => vault.refresh("a/b"),
    () => vault.exchange("a/b", { provider: "p", code: "c", codeVerifier: "v", redirectUri: "https://a/cb" }),
    () => vault.startSignIn("a/b", { provider: "p", mode: "device" }),
    () => vault.finishSignIn("a/b", "https://a/cb?state=s"),
  ];
  const expected = [
    [0, [0, 0, 0, 0, 0]],
    [1000, [1000, 60_000, 60_000, 60_000, 60_000]],
    [90_000, [90_000, 90_000, 90_000, 90_000, 90_000]],
  ];
  for (const [timeoutMs, wanted] of expected) {
    timeouts.length = 0;
    for (const route of routes(new Client(socket, { timeoutMs }))) await assert.rejects(route(), NotFound);
    assert.deepEqual(timeouts, wanted, `timeoutMs ${timeoutMs}`);
  }
  timeouts.length = 0;
  await assert.rejects(new Client(socket, { timeoutMs: 0 }).call("a/b", "GET", "/x", { timeoutMs: 0 }), NotFound);
  assert.deepEqual(timeouts, [0]);
});

test("a proxied body read again is empty, and read after close() rejects", async (t) => {
  const { socket } = await fakeDaemon(t, (connection) => answer(connection, 200, '"hello"', PROXIED));
  const vault = new Client(socket);
  const twice = await vault.call("a/b", "GET", "/x");
  assert.equal(await within(5000, twice.text(), "the first text()"), '"hello"');
  assert.equal(await within(5000, twice.text(), "a second text()"), "");
  assert.equal((await within(5000, twice.read(), "a read() after text()")).byteLength, 0);
  const parsed = await vault.call("a/b", "GET", "/x");
  assert.equal(await within(5000, parsed.json(), "json()"), "hello");
  await assert.rejects(within(5000, parsed.json(), "json() again"), SyntaxError); // "" is no JSON
  const iterated = await vault.call("a/b", "GET", "/x");
  const chunks = [];
  for await (const piece of iterated) chunks.push(piece);
  assert.equal(Buffer.concat(chunks).toString(), '"hello"');
  assert.equal(await within(5000, iterated.text(), "text() after for await"), "");
  const closed = await vault.call("a/b", "GET", "/x");
  closed.close();
  await assert.rejects(within(5000, closed.read(), "read() after close()"), ConnectionFailed);
  await assert.rejects(within(5000, closed.text(), "text() after close()"), ConnectionFailed);
  const disposed = await vault.call("a/b", "GET", "/x");
  await disposed[Symbol.asyncDispose]();
  await assert.rejects(within(5000, disposed.read(), "read() after await using"), ConnectionFailed);
});

test("the caller's error wins when its body fails after the answer came", async (t) => {
  const { socket } = await fakeDaemon(t, (connection) => {
    chunkedHead(connection, PROXIED);
    chunk(connection, "the start of the answer"); // and the answer stays open
  });
  const vault = new Client(socket);
  const readers = [
    (answer) => answer.text(),
    async (answer) => {
      for await (const _ of answer);
    },
  ];
  for (const read of readers) {
    let fail;
    const failing = new Promise((resolve) => (fail = resolve));
    const body = (async function* () {
      yield "a";
      await failing;
      throw new RangeError("the caller's body failed");
    })();
    const answer = await vault.call("a/b", "DELETE", "/x", { body });
    const reading = read(answer);
    fail();
    await assert.rejects(within(5000, reading, "reading the answer"), RangeError);
    await assert.rejects(within(5000, answer.read(), "reading it again"), RangeError);
  }
});
