// README.md's example is examples/readme.mjs, verbatim, and it runs: from a directory whose
// .tokenvault/run/tokenvault.sock is the test daemon's socket, it prints what its comments say.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { Client } from "tokenvault";

import { setUp } from "./daemon.js";

const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "..");
const EXAMPLE = join(PACKAGE, "examples", "readme.mjs");

test("README.md's example is examples/readme.mjs", () => {
  const readme = readFileSync(join(PACKAGE, "README.md"), "utf8");
  const start = readme.indexOf("```js\n") + "```js\n".length;
  const block = readme.slice(start, readme.indexOf("```\n", start));
  assert.equal(block, readFileSync(EXAMPLE, "utf8"));
});

test("the project's README shows the example's first lines", () => {
  const readme = readFileSync(join(process.env.TOKENVAULT_REPOSITORY, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("From TypeScript or JavaScript"));
  const start = section.indexOf("```js\n") + "```js\n".length;
  const block = section.slice(start, section.indexOf("```\n", start));
  assert.ok(block.split("\n").length > 4, block);
  assert.ok(readFileSync(EXAMPLE, "utf8").startsWith(block), `README.md's lines are not the example's first:\n${block}`);
});

test("the example runs and prints what its comments say", async (t) => {
  const { daemon } = await setUp(t, Client);
  const directory = mkdtempSync(join(tmpdir(), "tv-node-"));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  mkdirSync(join(directory, ".tokenvault", "run"), { recursive: true, mode: 0o700 });
  symlinkSync(daemon.socket, join(directory, ".tokenvault", "run", "tokenvault.sock"));
  const { stdout } = await promisify(execFile)(process.execPath, [EXAMPLE], { cwd: directory });
  const promised = [...readFileSync(EXAMPLE, "utf8").matchAll(/\/\/ (?!or )(.+)$/gm)].map((match) => match[1]);
  assert.deepEqual(stdout.trim().split("\n"), promised);
  assert.deepEqual(promised, ["Bearer at-4", "payments/erin", "min_ttl_unreachable"]);
});
