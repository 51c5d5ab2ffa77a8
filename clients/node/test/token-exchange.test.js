// exchangeToken against the real daemon and a real RFC 8693 server (scripts/authorization-server.py,
// Authlib): the credential is an access token that server issued to the client credentials grant,
// stored with provider `authlib`, and the daemon exchanges it there.
import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";

import * as tokenvault from "tokenvault";
import { Client } from "tokenvault";

import { Authlib, setUp } from "./daemon.js";

const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

/** Everything a person could be shown of a value: how console.log, JSON and templates print it. */
function shown(value) {
  return [inspect(value, { depth: 10 }), JSON.stringify(value), String(value), `${value}`].join("\n");
}

/**
 * An Authlib server, a daemon with instance `authlib`, and credential apps/reports holding an
 * access token with scopes "read write" from it; `null` (the test skipped, saying why) without
 * the Authlib virtual environment.
 */
async function setUpExchange(t) {
  const missing = Authlib.missing();
  if (missing !== null) {
    t.skip(`${missing}: the token exchange tests need a real RFC 8693 server`);
    return null;
  }
  const authlib = await Authlib.start();
  t.after(() => authlib.close());
  const { vault } = await setUp(t, Client, { authlib });
  const issued = await authlib.clientCredentials("read write");
  const stored = issued.access_token;
  const { created } = await vault.put("apps/reports", "authlib", {
    access_token: stored,
    token_type: "Bearer",
    expires_in: 3600,
  });
  assert.equal(created, true);
  return { authlib, vault, stored };
}

test("a derived token is exchanged once and answered again from the daemon's memory", async (t) => {
  const context = await setUpExchange(t);
  if (context === null) return;
  const { authlib, vault, stored } = context;

  const derived = await vault.exchangeToken("apps/reports", {
    audience: ["api.example", "reports.example"],
    scopes: ["read", "write"],
  });
  assert.ok(derived instanceof tokenvault.Token);
  assert.notEqual(derived.accessToken, stored, "a derived token, not the credential's own");
  assert.ok(derived.accessToken.length > 0);
  assert.equal(derived.issuedTokenType, ACCESS_TOKEN_TYPE);
  assert.equal(derived.tokenType, "Bearer");
  assert.deepEqual([...derived.scopes].sort(), ["read", "write"]);
  assert.ok(Date.parse(derived.expiresAt) > Date.now(), derived.expiresAt);
  assert.equal(derived.idToken, null);
  for (const secret of [derived.accessToken, stored]) assert.ok(!shown(derived).includes(secret), shown(derived));
  assert.ok(shown(derived).includes(ACCESS_TOKEN_TYPE), shown(derived));
  assert.deepEqual(JSON.parse(JSON.stringify(derived)).scopes.sort(), ["read", "write"]);

  // The same request with its lists in another order: the daemon's cached token, no new exchange.
  const again = await vault.exchangeToken("apps/reports", {
    audience: ["reports.example", "api.example"],
    scopes: ["write", "read"],
  });
  assert.equal(again.accessToken, derived.accessToken);
  const exchanges = await authlib.exchanges();
  assert.equal(exchanges.count, 1, JSON.stringify(exchanges));
  assert.deepEqual(exchanges.requests[0].audience.sort(), ["api.example", "reports.example"]);
  assert.deepEqual(exchanges.requests[0].scope.split(" ").sort(), ["read", "write"]);
  assert.equal(exchanges.requests[0].subject_token_type, ACCESS_TOKEN_TYPE);

  // An audience the server does not serve: its refusal, with the OAuth error, as the caller's 422.
  await assert.rejects(vault.exchangeToken("apps/reports", { audience: "evil.example" }), (error) => {
    assert.ok(error instanceof tokenvault.Unprocessable, String(error));
    assert.equal(error.code, "provider_rejected");
    assert.equal(error.status, 422);
    assert.match(error.detail, /invalid_target/);
    return true;
  });
  assert.equal((await authlib.exchanges()).count, 1);

  // Neither the exchange nor its refusal touched the credential.
  assert.equal((await vault.token("apps/reports")).accessToken, stored);
  const credential = await vault.show("apps/reports");
  assert.deepEqual([credential.status, credential.generation, credential.lastError], ["active", 1, null]);
});

test("a token exchange's request is checked and its problems keep their codes", async (t) => {
  const context = await setUpExchange(t);
  if (context === null) return;
  const { vault } = context;
  const single = await vault.exchangeToken("apps/reports", { audience: "api.example", scopes: ["read"] });
  assert.deepEqual([single.issuedTokenType, single.scopes], [ACCESS_TOKEN_TYPE, ["read"]]);
  assert.equal(Object.isFrozen(single.scopes), true);
  const cases = [
    // Neither an audience, a resource nor scopes: the derived token would be the credential's own.
    [{}, tokenvault.BadRequest, "invalid_field", "audience"],
    [
      { audience: "api.example", requestedTokenType: "urn:ietf:params:oauth:token-type:refresh_token" },
      tokenvault.BadRequest,
      "invalid_field",
      "requested_token_type",
    ],
    [{ audience: "" }, tokenvault.BadRequest, "invalid_field", "audience"],
    [{ scopes: ["admin"] }, tokenvault.Unprocessable, "provider_rejected", null],
  ];
  for (const [options, Class, code, field] of cases) {
    await assert.rejects(vault.exchangeToken("apps/reports", options), (error) => {
      assert.ok(error instanceof Class, `${error} is not a ${Class.name}`);
      assert.equal(error.code, code);
      assert.equal(error.field, field);
      return true;
    });
  }
  await assert.rejects(vault.exchangeToken("apps/nobody", { audience: "api.example" }), (error) => {
    assert.ok(error instanceof tokenvault.NotFound);
    assert.equal(error.code, "credential_not_found");
    return true;
  });
  await assert.rejects(vault.exchangeToken("no-slash"), TypeError);
});
