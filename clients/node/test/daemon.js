// The real daemon for the tests: the `tokenvault` binary `make test` built ($TOKENVAULT_BIN, by
// default .build/debug/tokenvault of the repository), on a fresh vault, with a loopback OAuth
// server that rotates refresh tokens and serves as the proxy's upstream. The same fixture as
// clients/python/tests/daemon.py and clients/go/daemon_test.go.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { accessSync, closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

// scripts/test-node-client.sh runs copies of the tests beside the installed package, so it
// names the checkout; run in place (clients/node/test) it is three levels up.
export const REPOSITORY =
  process.env.TOKENVAULT_REPOSITORY || resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const BINARY = process.env.TOKENVAULT_BIN || join(REPOSITORY, ".build", "debug", "tokenvault");

/** A loopback HTTP server on a free port; resolves once it listens. */
async function listen(handler) {
  const server = http.createServer(handler);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

async function readBody(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function answer(response, status, body, type = "application/json", headers = {}) {
  response.writeHead(status, { "Content-Type": type, "Content-Length": Buffer.byteLength(body), ...headers });
  response.end(body);
}

/**
 * A loopback authorization server and API: /token answers refresh, code and device grants with
 * fresh tokens (rotating the refresh token, refusing a spent one), /device approves a device
 * sign-in at once, /api/... answers 200 to the current access token and 401 to anything else,
 * and /api/echo sends back the body it got. Every token it issued is kept, so a test can search
 * the client's results for them.
 */
export class Provider {
  issued = [];
  access = null;
  refresh = null;
  apiCalls = [];

  static async start() {
    const provider = new Provider();
    const { server, url } = await listen((request, response) => {
      provider.#handle(request, response).catch((error) => answer(response, 500, String(error), "text/plain"));
    });
    provider.server = server;
    provider.url = url;
    return provider;
  }

  /** A token response the provider now honours, as an SDK would hand it to the app. */
  issue() {
    this.access = "at-" + randomBytes(16).toString("base64url");
    this.refresh = "rt-" + randomBytes(16).toString("base64url");
    this.issued.push(this.access, this.refresh);
    return { access_token: this.access, refresh_token: this.refresh, token_type: "Bearer", expires_in: 3600 };
  }

  /** The provider forgets the access token it issued last (the daemon still holds it). */
  expireAccess() {
    this.access = "at-forgotten-" + randomBytes(8).toString("hex");
  }

  async #handle(request, response) {
    const body = await readBody(request);
    const path = request.url;
    if (request.method === "POST" && path === "/device") {
      // RFC 8628 section 3.2, approved at once: the first poll gets tokens.
      const device = {
        device_code: "device-code-1",
        user_code: "WDJB-MJHT",
        verification_uri: this.url + "/verify",
        expires_in: 60,
        interval: 1,
      };
      return answer(response, 200, JSON.stringify(device));
    }
    if (request.method === "POST" && path === "/token") {
      const form = new URLSearchParams(body.toString());
      const grant = form.get("grant_type");
      if (grant === "refresh_token" && form.get("refresh_token") !== this.refresh) {
        return answer(response, 400, '{"error":"invalid_grant"}');
      }
      if (!["refresh_token", "authorization_code", "urn:ietf:params:oauth:grant-type:device_code"].includes(grant)) {
        return answer(response, 400, '{"error":"unsupported_grant_type"}');
      }
      return answer(response, 200, JSON.stringify(this.issue()));
    }
    if (!path.startsWith("/api/")) return answer(response, 404, "{}");
    if (path === "/api/redirect") {
      // Off the allowed bases, onto a route of the daemon itself: never to be followed.
      return answer(response, 302, "", "text/plain", { Location: "/v1/credentials/payments/alice/token" });
    }
    const authorized = request.headers.authorization === `Bearer ${this.access}`;
    this.apiCalls.push({ method: request.method, path, authorized, headers: request.headers });
    if (!authorized) {
      return answer(response, 401, '{"error":"invalid_token"}', "application/json", {
        "WWW-Authenticate": 'Bearer error="invalid_token"',
      });
    }
    if (path === "/api/echo") return answer(response, 200, body, "application/octet-stream");
    return answer(response, 200, "hello from the api\n", "text/plain");
  }

  close() {
    this.server.closeAllConnections();
    this.server.close();
  }
}

export const PYTHON = join(REPOSITORY, ".build", "test-venv", "bin", "python");

/**
 * scripts/authorization-server.py, an Authlib authorization server that is not ours, run with the
 * test virtual environment's Python (scripts/install-deps.sh --test) on a free loopback port: the
 * client credentials grant and RFC 8693 token exchange for `vault-client` / `vault-secret`,
 * audiences `api.example` and `reports.example` (others get `invalid_target`), and
 * `GET /test/exchanges`.
 */
export class Authlib {
  /** Why the server cannot run here, or `null` when it can. */
  static missing() {
    try {
      accessSync(PYTHON, constants.X_OK);
      return null;
    } catch {
      return `no Authlib virtual environment at ${PYTHON} (scripts/install-deps.sh --test makes it)`;
    }
  }

  static async start() {
    const authlib = new Authlib();
    const child = (authlib.process = spawn(
      PYTHON,
      [join(REPOSITORY, "scripts", "authorization-server.py"), "--port", "0"],
      { stdio: ["ignore", "pipe", "pipe"] },
    ));
    authlib.exited = once(child, "exit");
    // Both streams are read to their end, so the server's request log never fills a pipe.
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr = (stderr + chunk).slice(-8192)));
    let stdout = "";
    child.stdout.setEncoding("utf8");
    try {
      authlib.issuer = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("the Authlib server did not start in 30 s:\n" + stderr)), 30_000);
        child.stdout.on("data", (chunk) => {
          stdout += chunk;
          const end = stdout.indexOf("\n");
          if (end >= 0) {
            clearTimeout(timer);
            resolve(JSON.parse(stdout.slice(0, end)).issuer); // {"issuer": ...} once it listens
          }
        });
        child.on("exit", () => {
          clearTimeout(timer);
          reject(new Error("the Authlib server exited:\n" + stderr));
        });
      });
    } catch (error) {
      await authlib.close();
      throw error;
    }
    return authlib;
  }

  /** A token response from the server itself (client credentials, client_secret_basic): what a test stores. */
  async clientCredentials(scope) {
    const response = await fetch(this.issuer + "/token", {
      method: "POST",
      headers: { Authorization: "Basic " + Buffer.from("vault-client:vault-secret").toString("base64") },
      body: new URLSearchParams({ grant_type: "client_credentials", scope }),
    });
    if (response.status !== 200) throw new Error(`the token endpoint answered ${response.status}: ${await response.text()}`);
    return response.json();
  }

  /** `GET /test/exchanges`: `count` and the `requests` that got a token. */
  async exchanges() {
    return (await fetch(this.issuer + "/test/exchanges")).json();
  }

  async close() {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGTERM");
      const killer = setTimeout(() => this.process.kill("SIGKILL"), 10_000);
      await this.exited;
      clearTimeout(killer);
    }
  }
}

/** A loopback webhook endpoint: keeps each delivery's headers and body as they arrived. */
export class Receiver {
  deliveries = [];
  #arrived = [];

  static async start() {
    const receiver = new Receiver();
    const { server, url } = await listen(async (request, response) => {
      const body = await readBody(request);
      receiver.deliveries.push({ headers: request.headers, body });
      for (const wake of receiver.#arrived.splice(0)) wake();
      response.writeHead(204);
      response.end();
    });
    receiver.server = server;
    receiver.url = url + "/hook";
    return receiver;
  }

  /** The first delivery whose body's `type` is `type`, within `timeoutMs`. */
  async waitFor(type, timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.deliveries.find((delivery) => JSON.parse(delivery.body.toString()).type === type);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${type} delivery within ${timeoutMs} ms`);
      await new Promise((wake) => {
        const timer = setTimeout(wake, left);
        this.#arrived.push(() => {
          clearTimeout(timer);
          wake();
        });
      });
    }
  }

  close() {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/**
 * `tokenvault serve` on a fresh vault in a temporary directory, with provider instances `oauth2`
 * (no endpoints, as `make run` has) and `idp` (the loopback provider), and, given a receiver, a
 * webhook endpoint `receiver` whose secret is `webhookSecret`, and, given an `Authlib`, instance
 * `authlib` (its endpoints discovered from its issuer).
 */
export class Daemon {
  static async start(provider, receiver = null, authlib = null) {
    try {
      accessSync(BINARY, constants.X_OK);
    } catch {
      throw new Error(`no tokenvault binary at ${BINARY}: run \`swift build\` (or \`make test\`), or set TOKENVAULT_BIN`);
    }
    const daemon = new Daemon();
    const directory = (daemon.directory = mkdtempSync(join(tmpdir(), "tv-node-")));
    const data = join(directory, "data");
    daemon.socket = join(directory, "tv.sock");
    const secret = join(directory, "client.secret");
    writeFileSync(secret, "vault-secret", { mode: 0o600 });
    execFileSync(BINARY, ["init", "--data-dir", data], { stdio: "pipe" });
    const config = {
      providers: {
        oauth2: { kind: "oauth2" },
        idp: {
          kind: "oauth2",
          token_endpoint: provider.url + "/token",
          client_id: "vault-client",
          client_secret_file: secret,
          api_base_urls: [provider.url + "/api"],
          authorization_endpoint: provider.url + "/authorize",
          device_authorization_endpoint: provider.url + "/device",
          redirect_uris: ["https://app.example/cb"],
        },
      },
      limits: { on_demand_refresh_seconds: 1 },
    };
    if (authlib) {
      config.providers.authlib = {
        kind: "oauth2",
        issuer: authlib.issuer,
        client_id: "vault-client",
        client_secret_file: secret,
      };
    }
    daemon.webhookSecret = "";
    if (receiver) {
      const secretFile = join(directory, "hook.whsec");
      execFileSync(BINARY, ["webhooks", "secret", secretFile], { stdio: "pipe" });
      daemon.webhookSecret = readFileSync(secretFile, "utf8").trim();
      config.webhooks = { endpoints: { receiver: { url: receiver.url, secret_file: secretFile } } };
    }
    const configPath = join(directory, "config.json");
    writeFileSync(configPath, JSON.stringify(config));
    daemon.log = join(directory, "daemon.log");
    const log = openSync(daemon.log, "w");
    daemon.process = spawn(BINARY, ["serve", "--data-dir", data, "--socket", daemon.socket], {
      env: { ...process.env, TOKENVAULT_CONFIG: configPath, TOKENVAULT_LOG_LEVEL: "warning" },
      stdio: ["ignore", log, log],
    });
    closeSync(log);
    daemon.exited = once(daemon.process, "exit");
    const deadline = Date.now() + 30_000;
    // Connected, not only created: the socket file exists a moment before the daemon listens.
    while (!(await accepts(daemon.socket))) {
      if (daemon.process.exitCode !== null || daemon.process.signalCode !== null || Date.now() > deadline) {
        await daemon.close();
        throw new Error("the daemon did not start:\n" + readFileSync(daemon.log, "utf8"));
      }
      await new Promise((wake) => setTimeout(wake, 50));
    }
    return daemon;
  }

  /** SIGTERM, and waits for the daemon to end (SIGKILL after 30 s). */
  async stop() {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGTERM");
      const killer = setTimeout(() => this.process.kill("SIGKILL"), 30_000);
      await this.exited;
      clearTimeout(killer);
    }
  }

  async close() {
    await this.stop();
    rmSync(this.directory, { recursive: true, force: true });
  }
}

function accepts(socket) {
  return new Promise((resolve) => {
    const probe = net.connect(socket);
    probe.on("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.on("error", () => resolve(false));
  });
}

/** A provider, a daemon and a client of it for one test, all closed after it. */
export async function setUp(t, Client, { receiver = null, authlib = null } = {}) {
  const provider = await Provider.start();
  t.after(() => provider.close());
  const daemon = await Daemon.start(provider, receiver, authlib);
  t.after(() => daemon.close());
  return { provider, daemon, vault: new Client(daemon.socket) };
}

export const sleep = (milliseconds) => new Promise((wake) => setTimeout(wake, milliseconds));

/**
 * `vault.refresh(id)`, tried again while the daemon refuses it as too soon (`429 rate_limited`:
 * `limits.on_demand_refresh_seconds`, 1 s here, since the credential's last refresh or store),
 * instead of sleeping for a second and hoping.
 */
export async function refreshWhenAllowed(vault, id, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await vault.refresh(id);
    } catch (error) {
      if (error?.code !== "rate_limited" || Date.now() > deadline) throw error;
      await sleep(50);
    }
  }
}
