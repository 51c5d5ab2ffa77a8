// A strict TypeScript consumer of the installed package, compiled (never run) by
// scripts/test-node-client.sh with no @types at all: the declarations must stand on their own,
// and say what the methods take and give. Each @ts-expect-error is a mistake they must catch.
import {
  CODES,
  Client,
  Conflict,
  ConnectionFailed,
  NotFound,
  ProblemError,
  Token,
  TokenVaultError,
  WebhookVerificationError,
  defaultSocketPath,
  verifyWebhook,
} from "tokenvault";
import type {
  Credential,
  Deleted,
  Event,
  Exchanged,
  Grant,
  Health,
  Page,
  ProblemErrorClass,
  SignIn,
  SignInStatus,
  SignedIn,
  Stream,
  TokenExchangeOptions,
  UpstreamResponse,
  UsableCredential,
} from "tokenvault";

export async function everyMethod(vault: Client): Promise<string[]> {
  const seen: string[] = [];
  const health: Health = await vault.health();
  seen.push(health.status);
  const stored: { credential: Credential; created: boolean } = await vault.put("a/b", "idp", { access_token: "x" }, { env: "dev" });
  const generation: number = stored.credential.generation;
  const expiresAt: string | null = stored.credential.expiresAt;
  seen.push(String(generation), expiresAt ?? "", stored.credential.labels["env"] ?? "");
  await vault.put("a/b", "idp", '{"access_token":"x"}');
  await vault.put("a/b", "idp", new Uint8Array([123, 125]));
  const shown: Credential = await vault.show("a/b");
  const token: Token = await vault.token("a/b", { minTtl: 60 });
  seen.push(shown.id, token.authorization, token.accessToken, token.idToken ?? "", token.expiresAt ?? "");
  const grant: Grant | null = shown.grant;
  const audience: readonly string[] = grant?.audience ?? [];
  seen.push(grant?.type ?? "", grant?.subject ?? "", grant?.requestedTokenType ?? "", ...audience);
  const page: Page<Credential> = await vault.list({ namespace: "a", status: "active", limit: 10 });
  const nextCursor: string | null = page.nextCursor;
  if (nextCursor !== null) await vault.list({ cursor: nextCursor });
  for await (const credential of vault.listAll({ namespace: "a" })) seen.push(credential.id);
  const deleted: Deleted = await vault.delete("a/b", { force: true });
  const revoked: boolean | null = deleted.revoked;
  seen.push(String(revoked), deleted.credential?.status ?? "");
  const refreshed: Credential = await vault.refresh("a/b");
  seen.push(refreshed.lastError?.code ?? "", refreshed.pendingCommit?.nextAttemptAt ?? "");
  const exchanged: Exchanged = await vault.exchange("a/b", {
    provider: "idp",
    code: "c",
    codeVerifier: "v".repeat(43),
    redirectUri: "https://app.example/cb",
  });
  seen.push(exchanged.token.accessToken, String(exchanged.created));
  const options: TokenExchangeOptions = { audience: ["https://api.example"], scopes: ["read"] };
  const derived: Token = await vault.exchangeToken("a/b", options);
  const issuedTokenType: string | null = derived.issuedTokenType;
  const derivedScopes: readonly string[] | null = derived.scopes;
  seen.push(derived.accessToken, issuedTokenType ?? "", ...(derivedScopes ?? []));
  await vault.exchangeToken("a/b", {
    audience: "api.example",
    resource: "https://api.example/v1",
    requestedTokenType: "urn:ietf:params:oauth:token-type:access_token",
  });
  await vault.exchangeToken("a/b");
  const started: SignIn = await vault.startSignIn("a/b", { provider: "idp", mode: "device", scopes: ["openid"] });
  seen.push(started.userCode ?? "", String(started.interval ?? 5));
  const status: SignInStatus = await vault.signInStatus("a/b");
  seen.push(status.pending[0]?.nextPollAt ?? "", status.last?.outcome ?? "");
  const signedIn: SignedIn = await vault.finishSignIn("a/b", "https://app.example/cb?code=c&state=s");
  seen.push(signedIn.credential.id);
  const watch: Stream<Credential> = await vault.watch("a/b");
  for await (const change of watch) seen.push(change.status);
  watch.close();
  const disposed: Promise<void> = watch[Symbol.asyncDispose](); // what `await using` calls
  await disposed;
  const events: Stream<Event> = await vault.events();
  const event = await events.next();
  if (event.done !== true) seen.push(event.value.type, event.value.credentialId, String(event.value.generation));
  for await (const usable of vault.usableCredentials({ namespace: "a" })) {
    const bases: readonly string[] = usable.apiBaseUrls;
    seen.push(...bases);
  }
  async function* chunks(): AsyncGenerator<Uint8Array> {
    yield new Uint8Array(1);
  }
  const answer: UpstreamResponse = await vault.call("a/b", "POST", "/x", {
    headers: { Accept: "*/*" },
    body: chunks(),
    timeoutMs: 5000,
  });
  const body: Uint8Array = await answer.read();
  await answer[Symbol.asyncDispose]();
  seen.push(String(answer.status), answer.header("content-type") ?? "", String(body.byteLength), String(answer.refreshed));
  for await (const chunk of await vault.call("a/b", "GET", "https://api.example/x")) seen.push(String(chunk.byteLength));
  return seen;
}

export function errors(error: unknown): string {
  if (error instanceof Conflict && error.code === "needs_reauth") return "sign in again";
  if (error instanceof ProblemError) {
    const field: string | null = error.field;
    const status: number = error.status;
    return `${error.code} ${field ?? ""} ${status} ${error.instance ?? ""} ${error.permission ?? ""}`;
  }
  if (error instanceof ConnectionFailed) return error.socketPath;
  if (error instanceof WebhookVerificationError) return error.message;
  const Class: ProblemErrorClass | undefined = CODES["credential_not_found"];
  return String(Class === NotFound) + String(error instanceof TokenVaultError) + String(Class?.statusCode);
}

export function webhooks(secret: string, headers: Record<string, string | string[] | undefined>, body: Uint8Array): void {
  verifyWebhook(secret, headers, body);
  verifyWebhook(secret, { get: (name: string) => headers[name]?.toString() ?? null }, "{}", {
    toleranceSeconds: 60,
    now: new Date(),
  });
}

export async function mistakes(vault: Client, token: Token): Promise<void> {
  // @ts-expect-error minTtl is a number of seconds
  await vault.token("a/b", { minTtl: "60" });
  // @ts-expect-error a watch yields Credentials, not Events
  const wrong: Stream<Event> = await vault.watch("a/b");
  // @ts-expect-error the sign-in modes are url, parameters and device
  await vault.startSignIn("a/b", { provider: "idp", mode: "popup" });
  // @ts-expect-error the exchange needs its PKCE verifier
  await vault.exchange("a/b", { provider: "idp", code: "c", redirectUri: "https://app.example/cb" });
  // @ts-expect-error the subject is always the stored access token: no subjectTokenType to choose
  await vault.exchangeToken("a/b", { audience: "api.example", subjectTokenType: "refresh_token" });
  // @ts-expect-error scopes are a list
  await vault.exchangeToken("a/b", { scopes: "read" });
  // @ts-expect-error a derived token's scopes are read-only
  token.scopes?.push("admin");
  // @ts-expect-error a credential's grant is read-only
  (await vault.show("a/b")).grant?.scopes.push("admin");
  // @ts-expect-error a token is read-only
  token.accessToken = "x";
  // @ts-expect-error a body is text, bytes or chunks
  await vault.call("a/b", "POST", "/x", { body: 42 });
  // @ts-expect-error now is a Date
  verifyWebhook("whsec_", {}, "", { now: 1614265330 });
  // @ts-expect-error the implementations are not part of the package's surface
  const internal: unknown = (await import("tokenvault")).Transport;
  void wrong;
  void internal;
  void defaultSocketPath();
}
