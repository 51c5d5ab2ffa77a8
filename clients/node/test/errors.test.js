// Problems parsed from the daemon's answers, without a daemon: classes, fields, what is quoted,
// and every code docs/openapi.yaml documents mapped to the class of its status.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import * as tokenvault from "tokenvault";

import { REPOSITORY } from "./daemon.js";

const bytes = (text) => new TextEncoder().encode(text);

test("a problem document becomes its code's class", () => {
  const error = tokenvault.ProblemError.fromReply(
    400,
    "application/problem+json",
    bytes('{"status":400,"code":"invalid_field","field":"limit","detail":"too big","instance":"urn:tokenvault:request:x"}'),
  );
  assert.ok(error instanceof tokenvault.BadRequest);
  assert.deepEqual([error.code, error.field, error.instance, error.status], ["invalid_field", "limit", "urn:tokenvault:request:x", 400]);
  assert.equal(error.message, "too big (400 invalid_field, field limit, urn:tokenvault:request:x)");
  const forbidden = tokenvault.ProblemError.fromReply(403, "application/problem+json", bytes('{"code":"forbidden","title":"Forbidden","permission":"token:read"}'));
  assert.ok(forbidden instanceof tokenvault.Forbidden);
  assert.equal(forbidden.message, "Forbidden (403 forbidden, needs token:read)");
  // A code is always its class, whatever status came with it.
  assert.ok(tokenvault.ProblemError.fromReply(500, "application/json", bytes('{"code":"needs_reauth"}')) instanceof tokenvault.Conflict);
});

test("an answer without a document is quoted only from an error status", () => {
  const failed = tokenvault.ProblemError.fromReply(502, "text/html", bytes("<html>bad gateway</html>"));
  assert.ok(failed instanceof tokenvault.BadGateway);
  assert.equal(failed.code, "http_502");
  assert.ok(failed.message.includes("bad gateway"));
  // A 200 that is not what was asked for may carry a token: never quoted.
  const success = tokenvault.ProblemError.fromReply(200, "application/json", bytes('{"access_token":"secret-token"}'));
  assert.ok(!`${success.message} ${success.detail}`.includes("secret-token"));
  const unknown = tokenvault.ProblemError.fromReply(418, "application/problem+json", bytes('{"code":"new_code","status":418}'));
  assert.equal(unknown.constructor, tokenvault.ProblemError);
  assert.equal(unknown.code, "new_code");
  const known = tokenvault.ProblemError.fromReply(429, "application/problem+json", bytes('{"code":"brand_new"}'));
  assert.ok(known instanceof tokenvault.TooManyRequests, "an unknown code takes its status's class");
});

test("every code the API documents is mapped to the class of its status", () => {
  const text = readFileSync(join(REPOSITORY, "docs", "openapi.yaml"), "utf8");
  const table = text.slice(text.indexOf("Codes in use:"), text.indexOf("Never sent by the API"));
  const documented = new Map();
  for (const [, status, codes] of table.matchAll(/^\s*\| (\d{3}) \| (.*) \|$/gm)) {
    for (const [, code] of codes.matchAll(/`([a-z_]+)`/g)) documented.set(code, Number(status));
  }
  assert.ok(documented.size > 40, `${documented.size} codes documented`);
  assert.deepEqual([...documented.keys()].sort(), Object.keys(tokenvault.CODES).sort());
  for (const [code, status] of documented) {
    assert.equal(tokenvault.CODES[code].statusCode, status, code);
    assert.equal(tokenvault.errorClass(0, code), tokenvault.CODES[code]);
  }
  assert.equal(tokenvault.errorClass(404, "toString"), tokenvault.NotFound, "only the table's own codes");
});

test("errors are what they say they are", () => {
  const connection = new tokenvault.ConnectionFailed("/run/x.sock", Object.assign(new Error("connect ENOENT"), { code: "ENOENT" }));
  assert.ok(connection instanceof tokenvault.TokenVaultError && connection instanceof Error);
  assert.equal(connection.name, "ConnectionFailed");
  assert.equal(connection.message, "cannot talk to the daemon on /run/x.sock: connect ENOENT");
  const unexpected = new tokenvault.UnexpectedResponse(200, "not JSON");
  assert.deepEqual([unexpected.name, unexpected.status, unexpected.message], ["UnexpectedResponse", 200, "unexpected answer (200): not JSON"]);
  const conflict = new tokenvault.Conflict(409, "needs_reauth", { detail: "sign in again" });
  assert.equal(String(conflict), "Conflict: sign in again (409 needs_reauth)");
  assert.deepEqual([conflict.field, conflict.permission, conflict.title], [null, null, null]);
});
