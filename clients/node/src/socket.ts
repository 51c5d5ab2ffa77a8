/**
 * Which socket `new Client()` talks to when it is given none. A file of its own because the rule
 * is a security decision shared with the CLI and the Python, Go and Swift clients (a socket
 * planted in a directory another user can write would receive the tokens a script stores), and
 * because it is public (`defaultSocketPath`), with a `packaged` path the tests can point
 * elsewhere.
 */
import { existsSync, lstatSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";

/** The packaged daemon's socket (the Debian package, the systemd unit). */
export const PACKAGED_SOCKET = "/run/tokenvault/tokenvault.sock";

/** Where `make run` puts the socket, relative to the directory it was started in. */
export const LOCAL_SOCKET = join(".tokenvault", "run", "tokenvault.sock");

/**
 * `$TOKENVAULT_SOCKET` when set, else the packaged daemon's `/run/tokenvault/tokenvault.sock`
 * when it exists, else `./.tokenvault/run/tokenvault.sock` (what `make run` starts) when
 * `.tokenvault` and `.tokenvault/run` are directories of the caller's own that no one else can
 * write, else the packaged path.
 *
 * The current directory may be anyone's (`/tmp`, a shared checkout): a socket another user
 * planted there would receive the tokens a script stores. The same rule is in the CLI and the
 * Python, Go and Swift clients. `packaged` is there for the tests.
 */
export function defaultSocketPath(packaged: string = PACKAGED_SOCKET): string {
  const path = process.env.TOKENVAULT_SOCKET;
  if (path) return path;
  if (existsSync(packaged)) return packaged;
  if (ownUnsharedDirectory(".tokenvault") && ownUnsharedDirectory(join(".tokenvault", "run"))) {
    // Absolute: a later chdir must not make the client dial an unchecked directory's socket.
    return resolve(LOCAL_SOCKET);
  }
  return packaged;
}

/**
 * A directory (not a link to one) owned by this process's user, which neither its group nor
 * others may write.
 */
function ownUnsharedDirectory(path: string): boolean {
  let status;
  try {
    status = lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return false; // not searchable, a file on the way, ...
  }
  const user = process.geteuid?.();
  return (
    status !== undefined && status.isDirectory() && user !== undefined && status.uid === user && (status.mode & 0o022) === 0
  );
}
