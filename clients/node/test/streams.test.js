// watch and events against the real daemon: they follow a refresh and a deletion, end when the
// daemon stops, wait past the client's timeout, and close while a read waits.
import assert from "node:assert/strict";
import { test } from "node:test";

import * as tokenvault from "tokenvault";
import { Client } from "tokenvault";

import { refreshWhenAllowed, setUp, sleep } from "./daemon.js";
import { within } from "./fake.js";

async function drain(stream) {
  const items = [];
  for await (const item of stream) items.push(item);
  return items;
}

test("watch and events follow a refresh and a deletion", async (t) => {
  const { provider, vault } = await setUp(t, Client);
  await vault.put("payments/alice", "idp", provider.issue());
  await assert.rejects(vault.watch("payments/nobody"), (error) => error instanceof tokenvault.NotFound);
  const watch = await vault.watch("payments/alice");
  t.after(() => watch.close());
  const events = await vault.events();
  t.after(() => events.close());

  const first = await watch.next();
  assert.equal(first.value.id, "payments/alice");
  const refreshed = await refreshWhenAllowed(vault, "payments/alice");
  assert.equal((await watch.next()).value.generation, refreshed.generation);
  const event = (await events.next()).value;
  assert.deepEqual(
    [event.type, event.credentialId, event.generation, event.status],
    ["refreshed", "payments/alice", refreshed.generation, "active"],
  );

  await vault.delete("payments/alice");
  assert.deepEqual(await within(10_000, drain(watch), "the watch of a deleted credential"), []);
  assert.equal((await events.next()).value.type, "deleted");

  // Closed while a read waits: the read resolves as done, nothing is thrown.
  const waiting = events.next();
  await sleep(200);
  events.close();
  assert.deepEqual(await within(5000, waiting, "a closed stream"), { done: true, value: undefined });
  assert.deepEqual(await events.next(), { done: true, value: undefined });
});

test("streams end cleanly when the daemon stops", async (t) => {
  const { provider, daemon, vault } = await setUp(t, Client);
  await vault.put("payments/alice", "idp", provider.issue());
  const watch = await vault.watch("payments/alice");
  assert.equal((await watch.next()).value.id, "payments/alice");
  const events = await vault.events();
  const ended = Promise.all([drain(watch), drain(events)]);
  await sleep(300);
  await daemon.stop();
  assert.deepEqual(await within(15_000, ended, "streams of a daemon that stopped"), [[], []]);
});

test("a stream waits past the client's timeout, and leaving a loop closes it", async (t) => {
  const { provider, daemon, vault } = await setUp(t, Client);
  await vault.put("payments/alice", "idp", provider.issue());
  const quick = new Client(daemon.socket, { timeoutMs: 1000 });
  const watch = await quick.watch("payments/alice");
  t.after(() => watch.close());
  const first = (await watch.next()).value;
  // The next line comes 1.5 s later, while the read waits.
  const refreshed = sleep(1500).then(() => refreshWhenAllowed(vault, "payments/alice"));
  const second = (await within(10_000, watch.next(), "the line after the refresh")).value;
  assert.equal(second.generation, first.generation + 1);
  assert.equal((await refreshed).generation, second.generation);
  const later = refreshWhenAllowed(vault, "payments/alice");
  for await (const credential of watch) {
    assert.equal(credential.generation, second.generation + 1);
    break;
  }
  await later;
  assert.deepEqual(await watch.next(), { done: true, value: undefined }, "leaving the loop closed the stream");
});
