// Which socket `new Client()` talks to when none is named: never one planted in a directory
// another user could write. The same cases as the Python and Go clients' tests.
import assert from "node:assert/strict";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { beforeEach, afterEach, test } from "node:test";

import { Client, defaultSocketPath } from "tokenvault";

let scratch;
let packaged;
let previous;
let environment;

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), "tv-node-"));
  packaged = join(scratch, "packaged.sock");
  const cwd = join(scratch, "cwd");
  mkdirSync(join(cwd, ".tokenvault", "run"), { recursive: true, mode: 0o755 });
  chmodSync(join(cwd, ".tokenvault"), 0o755); // whatever the umask
  chmodSync(join(cwd, ".tokenvault", "run"), 0o755);
  // A stand-in for the socket: the rule looks at the directories, not at what is in them.
  writeFileSync(join(cwd, ".tokenvault", "run", "tokenvault.sock"), "");
  previous = process.cwd();
  process.chdir(cwd);
  environment = process.env.TOKENVAULT_SOCKET;
  delete process.env.TOKENVAULT_SOCKET;
});

afterEach(() => {
  process.chdir(previous);
  if (environment === undefined) delete process.env.TOKENVAULT_SOCKET;
  else process.env.TOKENVAULT_SOCKET = environment;
  rmSync(scratch, { recursive: true, force: true });
});

const local = () => resolve(".tokenvault", "run", "tokenvault.sock");

test("the environment comes first", () => {
  process.env.TOKENVAULT_SOCKET = "/x/vault.sock";
  assert.equal(defaultSocketPath(packaged), "/x/vault.sock");
  assert.equal(new Client().socketPath, "/x/vault.sock");
});

test("a packaged daemon comes before the current directory", () => {
  assert.equal(defaultSocketPath(packaged), local());
  writeFileSync(packaged, "");
  assert.equal(defaultSocketPath(packaged), packaged);
});

test("the local socket is absolute: a later chdir does not move it", () => {
  const path = defaultSocketPath(packaged);
  process.chdir("..");
  assert.equal(path, join(scratch, "cwd", ".tokenvault", "run", "tokenvault.sock"));
});

test("a directory others may write is refused", () => {
  for (const directory of [".tokenvault", join(".tokenvault", "run")]) {
    for (const mode of [0o775, 0o757, 0o1777]) {
      chmodSync(directory, mode);
      assert.equal(defaultSocketPath(packaged), packaged, `${directory} at ${mode.toString(8)}`);
      chmodSync(directory, 0o755);
    }
  }
  assert.equal(defaultSocketPath(packaged), local());
});

test("a linked data directory is refused", () => {
  renameSync(".tokenvault", "elsewhere");
  symlinkSync("elsewhere", ".tokenvault");
  assert.equal(defaultSocketPath(packaged), packaged);
});

test("no data directory: the packaged path", () => {
  rmSync(".tokenvault", { recursive: true });
  assert.equal(defaultSocketPath(packaged), packaged);
  writeFileSync(".tokenvault", "a file, not a directory");
  assert.equal(defaultSocketPath(packaged), packaged);
});

test("another user's data directory is refused", { skip: process.geteuid() !== 0 && "changing a directory's owner needs root" }, () => {
  chownSync(".tokenvault", 65534, 65534);
  assert.equal(defaultSocketPath(packaged), packaged);
});
