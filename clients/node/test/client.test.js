// The client against the real daemon (see daemon.js): every route, problems mapped to their
// classes with code and field, and no token in anything the client shows that is not a token read.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { inspect } from "node:util";

import * as tokenvault from "tokenvault";
import { Client } from "tokenvault";

import { refreshWhenAllowed, setUp, sleep } from "./daemon.js";

async function put(vault, provider, id = "payments/alice") {
  const { credential, created } = await vault.put(id, "idp", provider.issue(), { env: "dev" });
  assert.equal(created, true);
  return credential;
}

/** Everything a person could be shown of a value: how console.log, JSON and templates print it. */
function shown(value) {
  return [inspect(value, { depth: 10 }), JSON.stringify(value), String(value), `${value}`].join("\n");
}

test("health answers ok", async (t) => {
  const { vault } = await setUp(t, Client);
  const health = await vault.health();
  assert.equal(health.status, "ok");
  assert.equal(typeof health.version, "string");
});

test("store, read, list, refresh and delete", async (t) => {
  const { provider, vault } = await setUp(t, Client);
  const stored = await put(vault, provider);
  assert.deepEqual(
    [stored.id, stored.namespace, stored.name, stored.provider, stored.status, stored.labels],
    ["payments/alice", "payments", "alice", "idp", "active", { env: "dev" }],
  );
  assert.equal(stored.hasRefreshToken, true);
  assert.equal(stored.raw.has_refresh_token, true, "raw is the document as sent");
  assert.ok(!Object.keys(stored).includes("raw"), "raw stays out of console.log and JSON");

  const token = await vault.token("payments/alice", { minTtl: 60 });
  assert.equal(token.accessToken, provider.access);
  assert.equal(token.authorization, `Bearer ${provider.access}`);
  assert.ok(!shown(token).includes(provider.access), shown(token));
  assert.equal((await vault.show("payments/alice")).generation, stored.generation);
  const replaced = await vault.put("payments/alice", "idp", '{"access_token":"x","expires_in":600}');
  assert.equal(replaced.created, false);
  const bytes = await vault.put("payments/alice", "idp", new TextEncoder().encode(JSON.stringify(provider.issue())));
  assert.equal(bytes.created, false);

  await put(vault, provider, "payments/bob");
  const page = await vault.list({ namespace: "payments", limit: 1 });
  assert.deepEqual(page.items.map((c) => c.id), ["payments/alice"]);
  assert.notEqual(page.nextCursor, null);
  const next = await vault.list({ namespace: "payments", limit: 1, cursor: page.nextCursor });
  assert.deepEqual(next.items.map((c) => c.id), ["payments/bob"]);
  const all = [];
  for await (const credential of vault.listAll()) all.push(credential.id);
  assert.deepEqual(all, ["payments/alice", "payments/bob"]);
  const active = [];
  for await (const credential of vault.listAll({ namespace: "payments", status: "needs_reauth" })) active.push(credential);
  assert.deepEqual(active, []);

  const refreshed = await refreshWhenAllowed(vault, "payments/bob");
  assert.ok(refreshed.generation > 1);
  assert.equal((await vault.token("payments/bob")).accessToken, provider.access);

  const deleted = await vault.delete("payments/bob");
  assert.deepEqual(deleted, { revocationPending: false, revoked: false, credential: null }, "idp revokes nothing");
  await assert.rejects(vault.show("payments/bob"), (error) => {
    assert.ok(error instanceof tokenvault.NotFound);
    assert.equal(error.code, "credential_not_found");
    return true;
  });
  const forced = await vault.delete("payments/alice", { force: true });
  assert.equal(forced.revocationPending, false);
});

test("a sign-in is started and finished once", async (t) => {
  const { vault } = await setUp(t, Client);
  const started = await vault.startSignIn("people/erin", {
    provider: "idp",
    redirectUri: "https://app.example/cb",
    scopes: ["profile"],
    labels: { via: "node" },
  });
  assert.equal(started.pushed, false);
  assert.equal(typeof started.expiresAt, "string");
  const url = new URL(started.authorizationUrl);
  assert.equal(url.pathname, "/authorize");
  assert.equal(url.searchParams.get("code_challenge_method"), "S256");
  assert.equal(url.searchParams.get("state").length, 43);
  const callback = "https://app.example/cb?code=one-time&state=" + encodeURIComponent(url.searchParams.get("state"));
  const signedIn = await vault.finishSignIn("people/erin", callback);
  assert.equal(signedIn.created, true);
  assert.equal(signedIn.credential.id, "people/erin");
  assert.deepEqual(signedIn.credential.labels, { via: "node" });
  await assert.rejects(vault.finishSignIn("people/erin", callback), (error) => {
    assert.ok(error instanceof tokenvault.NotFound);
    assert.equal(error.code, "authorization_unknown");
    return true;
  });
  const parameters = await vault.startSignIn("people/erin", {
    provider: "idp",
    redirectUri: "https://app.example/cb",
    mode: "parameters",
  });
  assert.equal(parameters.authorizationUrl, null);
  assert.equal(parameters.parameters.client_id, "vault-client");
});

test("a device sign-in is polled by the daemon", async (t) => {
  const { vault } = await setUp(t, Client);
  const started = await vault.startSignIn("people/faye", { provider: "idp", scopes: ["profile"], mode: "device" });
  assert.deepEqual([started.userCode, started.interval, started.authorizationUrl], ["WDJB-MJHT", 1, null]);
  assert.ok(started.verificationUri.endsWith("/verify"));
  const deadline = Date.now() + 30_000;
  let status = await vault.signInStatus("people/faye");
  while (status.pending.length > 0 && Date.now() < deadline) {
    assert.equal(status.pending[0].provider, "idp");
    await sleep(200);
    status = await vault.signInStatus("people/faye");
  }
  assert.equal(status.last?.outcome, "authorized", JSON.stringify(status));
  assert.equal((await vault.show("people/faye")).hasRefreshToken, true);
});

test("exchange redeems a code", async (t) => {
  const { provider, vault } = await setUp(t, Client);
  const exchanged = await vault.exchange("payments/carol", {
    provider: "idp",
    code: "one-time",
    codeVerifier: "v".repeat(43),
    redirectUri: "https://app.example/cb",
    labels: { via: "node" },
  });
  assert.equal(exchanged.created, true);
  assert.equal(exchanged.token.accessToken, provider.access);
  assert.equal(exchanged.credential.hasRefreshToken, true);
  assert.deepEqual(exchanged.credential.labels, { via: "node" });
  for (const token of [provider.access, provider.refresh]) assert.ok(!shown(exchanged).includes(token));
});

test("problems carry their class, code and field", async (t) => {
  const { provider, vault } = await setUp(t, Client);
  await put(vault, provider);
  const cases = [
    [() => vault.show("payments/nobody"), tokenvault.NotFound, "credential_not_found", null],
    [() => vault.put("payments/x", "no-such-provider", { access_token: "a" }), tokenvault.Unprocessable, "unknown_provider", null],
    [() => vault.put("payments/x", "idp", '{"access_token": }'), tokenvault.BadRequest, "invalid_payload", null],
    [() => vault.put("payments/x", "idp", { access_token: 7 }), tokenvault.BadRequest, "invalid_field", "token.access_token"],
    [() => vault.list({ limit: 100000 }), tokenvault.BadRequest, "invalid_field", "limit"],
    [() => vault.token("payments/alice", { minTtl: 86400 }), tokenvault.Conflict, null, null],
    [() => vault.show("payments/.hidden"), tokenvault.BadRequest, "invalid_credential_id", null],
  ];
  for (const [call, Class, code, field] of cases) {
    await assert.rejects(call(), (error) => {
      assert.ok(error instanceof Class, `${error} is not a ${Class.name}`);
      assert.ok(error instanceof tokenvault.ProblemError && error instanceof tokenvault.TokenVaultError);
      assert.equal(error.name, Class.name);
      if (code !== null) assert.equal(error.code, code);
      assert.equal(error.status, Class.statusCode);
      assert.equal(error.field, field);
      assert.ok(error.instance.startsWith("urn:tokenvault:request:"), error.instance);
      assert.equal(tokenvault.CODES[error.code], Class);
      return true;
    });
  }
  await assert.rejects(vault.show("no-slash"), TypeError);
  await assert.rejects(vault.put("payments/x", "idp", "not json"), TypeError);
  await assert.rejects(vault.call("payments/alice", "GET", "relative"), TypeError);
  await assert.rejects(new Client(vault.socketPath + ".absent").health(), (error) => {
    assert.ok(error instanceof tokenvault.ConnectionFailed);
    assert.equal(error.socketPath, vault.socketPath + ".absent");
    assert.equal(error.cause.code, "ENOENT");
    return true;
  });
});

test("a timeout gives up on a daemon that does not answer", async (t) => {
  // A socket that accepts and never answers: the client's timeout is what ends the wait.
  const directory = mkdtempSync(join(tmpdir(), "tv-node-"));
  const path = join(directory, "silent.sock");
  const held = [];
  const server = net.createServer((socket) => held.push(socket)).listen(path);
  t.after(() => {
    held.forEach((socket) => socket.destroy());
    server.close();
    rmSync(directory, { recursive: true, force: true });
  });
  const started = Date.now();
  await assert.rejects(new Client(path, { timeoutMs: 300 }).health(), tokenvault.ConnectionFailed);
  assert.ok(Date.now() - started < 5000);
});
