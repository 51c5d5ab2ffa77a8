// Calls through the daemon's proxy to the loopback provider's API: the caller never sees the
// token, bodies stream both ways, a redirect comes back as it is, a refused token is refreshed
// once, and the daemon's own refusals throw.
import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";

import * as tokenvault from "tokenvault";
import { Client } from "tokenvault";

import { setUp, sleep } from "./daemon.js";

test("calls through the proxy never see the token", async (t) => {
  const { provider, vault } = await setUp(t, Client);
  await vault.put("payments/alice", "idp", provider.issue());

  const answer = await vault.call("payments/alice", "GET", "/hello?x=1", {
    headers: { Authorization: "Bearer mine", Accept: "text/plain" },
  });
  assert.equal(answer.status, 200);
  assert.equal(answer.statusText, "OK");
  assert.equal(answer.header("content-type"), "text/plain");
  assert.equal(answer.header("TokenVault-Proxy"), null, "the daemon's marker is not the upstream's header");
  assert.equal(await answer.text(), "hello from the api\n");
  assert.equal(answer.refreshed, false);
  const call = provider.apiCalls.at(-1);
  assert.deepEqual([call.path, call.authorized, call.headers.accept], ["/api/hello?x=1", true, "text/plain"]);

  // An absolute URL inside the instance's bases goes in TokenVault-Upstream-URL.
  const absolute = await vault.call("payments/alice", "get", provider.url + "/api/absolute");
  const chunks = [];
  for await (const chunk of absolute) chunks.push(chunk);
  assert.equal(Buffer.concat(chunks).toString(), "hello from the api\n");
  assert.equal(provider.apiCalls.at(-1).path, "/api/absolute");

  const redirect = await vault.call("payments/alice", "GET", "/redirect");
  assert.deepEqual([redirect.status, redirect.header("location")], [302, "/v1/credentials/payments/alice/token"]);
  assert.equal((await redirect.read()).byteLength, 0);

  const usable = [];
  for await (const credential of vault.usableCredentials()) usable.push(credential);
  assert.deepEqual(usable, [
    { id: "payments/alice", provider: "idp", status: "active", apiBaseUrls: [provider.url + "/api"] },
  ]);
  const elsewhere = [];
  for await (const credential of vault.usableCredentials({ namespace: "people" })) elsewhere.push(credential);
  assert.deepEqual(elsewhere, []);

  let refused;
  await assert.rejects(vault.call("payments/alice", "GET", "https://elsewhere.example/"), (error) => {
    assert.ok(error instanceof tokenvault.Unprocessable);
    assert.equal(error.code, "upstream_not_allowed");
    refused = error;
    return true;
  });
  const shown = [inspect(answer), JSON.stringify(answer.headers), inspect(usable), String(refused), inspect(refused)];
  for (const token of provider.issued) assert.ok(!shown.join("\n").includes(token));
});

test("a body streams to the upstream and back", async (t) => {
  const { provider, vault } = await setUp(t, Client);
  await vault.put("payments/alice", "idp", provider.issue());
  const whole = await vault.call("payments/alice", "POST", "/echo", {
    headers: { "Content-Type": "application/json" },
    body: '{"amount":100}',
  });
  assert.equal(await whole.text(), '{"amount":100}');
  const bytes = await vault.call("payments/alice", "PUT", "/echo", { body: new Uint8Array([1, 2, 3]) });
  assert.deepEqual([...(await bytes.read())], [1, 2, 3]);
  async function* chunks() {
    for (let index = 0; index < 64; index++) {
      yield "x".repeat(1024);
      if (index % 16 === 0) await sleep(1);
    }
    yield new Uint8Array([10]);
  }
  const streamed = await vault.call("payments/alice", "POST", "/echo", { body: chunks() });
  assert.equal(await streamed.text(), "x".repeat(64 * 1024) + "\n");
  const empty = await vault.call("payments/alice", "POST", "/echo");
  assert.equal(await empty.text(), "");
  // Node frames only a POST's, PUT's or PATCH's chunks by itself; a caller's Content-Length
  // (here a wrong one) gives way to the chunked framing.
  const sent = [
    ["DELETE", {}],
    ["DELETE", { "content-length": "3" }],
    ["GET", { "Content-Length": "0" }],
    ["PATCH", { "Transfer-Encoding": "gzip" }],
  ];
  for (const [method, headers] of sent) {
    const parts = (function* () {
      yield "de";
      yield new Uint8Array([108, 101]);
      yield "te me ".repeat(1000);
    })();
    const answer = await vault.call("payments/alice", method, "/echo", { body: parts, headers });
    const why = `${method} ${JSON.stringify(headers)}`;
    assert.equal(answer.status, 200, why);
    assert.equal(await answer.text(), "dele" + "te me ".repeat(1000), why);
    assert.equal(provider.apiCalls.at(-1).method, method);
  }
  const closed = await vault.call("payments/alice", "GET", "/hello");
  closed.close(); // unread: the connection ends all the same
  await assert.rejects(
    vault.call("payments/alice", "POST", "/echo", {
      body: (async function* () {
        yield "a";
        throw new RangeError("the caller's body failed");
      })(),
    }),
    RangeError,
  );
});

test("a token the upstream refuses is refreshed once and the call sent again", async (t) => {
  const { provider, vault } = await setUp(t, Client);
  await vault.put("payments/alice", "idp", provider.issue());
  provider.expireAccess();
  // Within limits.on_demand_refresh_seconds (1 s here) of the put the daemon refreshes nothing
  // and relays the 401 as it came: called again until the refresh is allowed.
  const deadline = Date.now() + 15_000;
  let answer = await vault.call("payments/alice", "GET", "/hello");
  while (!answer.refreshed && answer.status === 401 && Date.now() < deadline) {
    await answer.read();
    await sleep(50);
    answer = await vault.call("payments/alice", "GET", "/hello");
  }
  assert.equal(answer.status, 200);
  assert.equal(answer.refreshed, true);
  assert.equal(await answer.text(), "hello from the api\n");
  const authorized = provider.apiCalls.map((call) => call.authorized);
  assert.deepEqual(authorized.slice(-2), [false, true], "refused, refreshed, sent again");
  assert.ok(authorized.slice(0, -1).every((ok) => !ok), JSON.stringify(authorized));
  assert.equal((await vault.show("payments/alice")).generation, 2);
});
