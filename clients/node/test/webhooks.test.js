// verifyWebhook against the Standard Webhooks specification's own example, the ways a delivery
// must be refused, the settings that would let any through, repeated headers, and the daemon's
// own deliveries.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { once } from "node:events";
import * as http from "node:http";
import { test } from "node:test";

import { Client, WebhookVerificationError, verifyWebhook } from "tokenvault";

import { Daemon, Provider, Receiver } from "./daemon.js";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const HEADERS = {
  "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330",
  "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const BODY = new TextEncoder().encode('{"test": 2432232314}');
const NOW = new Date((1614265330 + 10) * 1000);

const upper = (headers) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toUpperCase(), value]));

test("the specification's example is accepted", () => {
  verifyWebhook(SECRET, HEADERS, BODY, { now: NOW });
  verifyWebhook(SECRET, upper(HEADERS), BODY, { now: NOW });
  verifyWebhook(SECRET, new Headers(HEADERS), BODY, { now: NOW });
  verifyWebhook(SECRET, HEADERS, '{"test": 2432232314}', { now: NOW });
  const several = { ...HEADERS, "webhook-signature": "v1,bm90IGl0 v2,eA== " + HEADERS["webhook-signature"] };
  verifyWebhook(SECRET, several, BODY, { now: NOW });
  verifyWebhook(SECRET, { ...HEADERS, "webhook-signature": [HEADERS["webhook-signature"]] }, BODY, { now: NOW });
});

test("anything changed is refused", () => {
  const { "webhook-signature": _, ...unsigned } = HEADERS;
  const refused = [
    [SECRET, HEADERS, new TextEncoder().encode('{"test": 2432232315}')],
    ["whsec_" + "A".repeat(32), HEADERS, BODY],
    [SECRET, { ...HEADERS, "webhook-id": "msg_other" }, BODY],
    [SECRET, { ...HEADERS, "webhook-timestamp": "1614265331" }, BODY],
    [SECRET, { ...HEADERS, "webhook-signature": "v2," + HEADERS["webhook-signature"].slice(3) }, BODY],
    [SECRET, { ...HEADERS, "webhook-signature": HEADERS["webhook-signature"].slice(0, -2) }, BODY],
    [SECRET, unsigned, BODY],
    [SECRET, { ...HEADERS, "webhook-timestamp": "soon" }, BODY],
  ];
  for (const [secret, headers, body] of refused) {
    assert.throws(() => verifyWebhook(secret, headers, body, { now: NOW }), WebhookVerificationError, JSON.stringify(headers));
  }
  assert.throws(() => verifyWebhook("whsec_not*base64", HEADERS, BODY, { now: NOW }), TypeError);
});

test("a delivery too old or too new is refused", () => {
  for (const offset of [300, -300]) {
    verifyWebhook(SECRET, HEADERS, BODY, { now: new Date((1614265330 + offset) * 1000) }); // the boundary is in
  }
  for (const offset of [301, -301, 300.001, -300.001]) {
    const now = new Date((1614265330 + offset) * 1000);
    assert.throws(() => verifyWebhook(SECRET, HEADERS, BODY, { now }), WebhookVerificationError, String(offset));
  }
  verifyWebhook(SECRET, HEADERS, BODY, { toleranceSeconds: 0, now: new Date(1614265330 * 1000) });
  assert.throws(
    () => verifyWebhook(SECRET, HEADERS, BODY, { toleranceSeconds: 0, now: new Date(1614265331 * 1000) }),
    WebhookVerificationError,
  );
  verifyWebhook(SECRET, HEADERS, BODY, { toleranceSeconds: 3600, now: new Date((1614265330 + 3000) * 1000) });
  assert.throws(() => verifyWebhook(SECRET, HEADERS, BODY), /too far from the current time/);
});

test("a secret, time or tolerance that would let anything through is a TypeError", () => {
  // Signed with the empty key "whsec_" decodes to, which anyone can do.
  const forged = createHmac("sha256", Buffer.alloc(0))
    .update(`${HEADERS["webhook-id"]}.${HEADERS["webhook-timestamp"]}.`)
    .update(BODY)
    .digest("base64");
  const headers = { ...HEADERS, "webhook-signature": `v1,${forged}` };
  for (const secret of ["whsec_", ""]) {
    assert.throws(() => verifyWebhook(secret, headers, BODY, { now: NOW }), /the secret is empty/, JSON.stringify(secret));
    assert.throws(() => verifyWebhook(secret, {}, BODY, { now: NOW }), TypeError, "whatever the delivery");
  }
  const wrong = [
    { now: new Date("x") },
    { now: new Date(NaN) },
    { now: 1614265340 },
    { now: "2021-02-25T15:02:20Z" },
    { toleranceSeconds: NaN },
    { toleranceSeconds: Infinity },
    { toleranceSeconds: -1 },
    { toleranceSeconds: "300" },
    { toleranceSeconds: null },
  ];
  for (const options of wrong) {
    const shown = JSON.stringify(options, (_, value) => (Number.isNaN(value) ? "NaN" : value));
    assert.throws(() => verifyWebhook(SECRET, HEADERS, BODY, { now: NOW, ...options }), TypeError, shown);
    assert.throws(() => verifyWebhook(SECRET, {}, BODY, { now: NOW, ...options }), TypeError, shown);
  }
});

test("a header sent twice counts as its values joined by \", \"", async (t) => {
  const bogus = "v1,bm90IHRoZSBzaWduYXR1cmUgb2YgdGhpcyBkZWxpdmVyeQ==";
  const good = HEADERS["webhook-signature"];
  for (const signatures of [[good, bogus], [bogus, good]]) {
    verifyWebhook(SECRET, { ...HEADERS, "webhook-signature": signatures }, BODY, { now: NOW });
    verifyWebhook(SECRET, { ...HEADERS, "webhook-signature": signatures.join(", ") }, BODY, { now: NOW });
    const fetched = new Headers({ "webhook-id": HEADERS["webhook-id"], "webhook-timestamp": HEADERS["webhook-timestamp"] });
    for (const signature of signatures) fetched.append("webhook-signature", signature);
    assert.equal(fetched.get("webhook-signature"), signatures.join(", "));
    verifyWebhook(SECRET, fetched, BODY, { now: NOW });
  }
  assert.throws(
    () => verifyWebhook(SECRET, { ...HEADERS, "webhook-signature": [bogus, bogus] }, BODY, { now: NOW }),
    WebhookVerificationError,
  );
  // As a node:http server receives it: two webhook-signature lines become one value.
  const received = [];
  const server = http.createServer((request, response) => {
    received.push(request.headers);
    response.end();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => server.close());
  for (const signatures of [[good, bogus], [bogus, good]]) {
    const request = http.request({
      host: "127.0.0.1",
      port: server.address().port,
      method: "POST",
      headers: { ...HEADERS, "webhook-signature": signatures },
    });
    request.end(BODY);
    const [response] = await once(request, "response");
    response.resume();
    const headers = received.at(-1);
    assert.equal(headers["webhook-signature"], signatures.join(", "));
    verifyWebhook(SECRET, headers, BODY, { now: NOW });
  }
});

test("the daemon's delivery is accepted and a tampered one refused", async (t) => {
  const provider = await Provider.start();
  t.after(() => provider.close());
  const receiver = await Receiver.start();
  t.after(() => receiver.close());
  const daemon = await Daemon.start(provider, receiver);
  t.after(() => daemon.close());
  const vault = new Client(daemon.socket);
  await vault.put("payments/alice", "idp", provider.issue());
  await vault.delete("payments/alice");
  const { headers, body } = await receiver.waitFor("credential.deleted");
  verifyWebhook(daemon.webhookSecret, headers, body);
  const event = JSON.parse(body.toString());
  assert.equal(event.data.id, "payments/alice");
  for (const token of provider.issued) assert.ok(!body.includes(token));
  const tampered = Buffer.from(body.toString().replace("alice", "mallory"));
  assert.throws(() => verifyWebhook(daemon.webhookSecret, headers, tampered), WebhookVerificationError);
});
