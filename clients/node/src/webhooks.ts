/**
 * Verifies a webhook delivery signed the way Standard Webhooks specifies: HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<raw body>` with the endpoint's secret (`whsec_` + base64),
 * sent as one or more space-separated `v1,<base64>` entries in `webhook-signature`.
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";

/** The delivery is not authentic, or too old or too new to be trusted. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

/**
 * A delivery's headers: Node's `request.headers` (names lower-cased), any object of names (matched
 * in any case), or anything with `get(name)` such as fetch's `Headers`.
 */
export type WebhookHeaders =
  | Readonly<Record<string, string | readonly string[] | undefined>>
  | { get(name: string): string | null | undefined };

export interface VerifyWebhookOptions {
  /** How far the delivery's timestamp may be from `now`, in seconds (default 300; finite, 0 or more). */
  toleranceSeconds?: number;
  /** The time to check against (default: the clock; a valid `Date`). */
  now?: Date;
}

/**
 * Returns when `body` with these `headers` was signed with `secret` within the tolerance of
 * `now`; throws `WebhookVerificationError` otherwise. Throws `TypeError`, whatever the delivery,
 * for a secret that is not `whsec_` + base64 of a key of at least one byte, a `now` that is not a
 * valid `Date`, or a tolerance that is not a finite number of seconds, 0 or more: each would
 * otherwise let forged or stale deliveries through. Pass the body exactly as received, before
 * any JSON parsing: bytes, or the text as it came. A header sent more than once counts as its
 * values joined by ", " (as Node's `request.headers` and fetch's `Headers` give them), so any
 * of the signatures may match.
 */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: Uint8Array | string,
  options: VerifyWebhookOptions = {},
): void {
  const { now = new Date(), toleranceSeconds = 300 } = options;
  if (!(now instanceof Date) || !Number.isFinite(now.getTime())) {
    throw new TypeError("now is not a valid Date");
  }
  if (typeof toleranceSeconds !== "number" || !Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) {
    throw new TypeError("toleranceSeconds is not a finite number of seconds, 0 or more");
  }
  const encoded = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  // Buffer.from(…, "base64") skips what is not base64; the Python and Go clients refuse it.
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) {
    throw new TypeError("the secret is not whsec_ followed by base64");
  }
  const key = Buffer.from(encoded, "base64");
  // An empty key is a key anyone has: every signature made with it would verify.
  if (key.byteLength === 0) throw new TypeError("the secret is empty: whsec_ must be followed by a key");
  const read = reader(headers);
  const id = read("webhook-id");
  const timestamp = read("webhook-timestamp");
  const signatures = read("webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError("webhook-id, webhook-timestamp and webhook-signature are all required");
  }
  if (!/^[+-]?[0-9]+$/.test(timestamp.trim())) {
    throw new WebhookVerificationError("webhook-timestamp is not a number of seconds");
  }
  if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > toleranceSeconds) {
    throw new WebhookVerificationError("webhook-timestamp is too far from the current time");
  }
  const expected = createHmac("sha256", key)
    .update(`${id}.${timestamp}.`)
    .update(typeof body === "string" ? Buffer.from(body, "utf8") : body)
    .digest()
    .toString("base64");
  const wanted = Buffer.from(expected);
  for (const entry of signatures.split(" ")) {
    // A header sent twice arrives as "v1,a, v1,b": base64 has no comma to lose.
    const trimmed = entry.endsWith(",") ? entry.slice(0, -1) : entry;
    const comma = trimmed.indexOf(",");
    if (comma < 0 || trimmed.slice(0, comma) !== "v1") continue;
    const signature = Buffer.from(trimmed.slice(comma + 1));
    // timingSafeEqual needs equal lengths; the length of a SHA-256 signature is no secret.
    if (signature.length === wanted.length && timingSafeEqual(signature, wanted)) return;
  }
  throw new WebhookVerificationError("no signature matches");
}

/** A header's value by its name in any case (values sent more than once joined by ", "), or undefined. */
function reader(headers: WebhookHeaders): (name: string) => string | undefined {
  if (typeof headers.get === "function") {
    const get = headers.get.bind(headers) as (name: string) => unknown;
    return (name) => {
      const value = get(name);
      return typeof value === "string" ? value : undefined;
    };
  }
  const lowered = new Map<string, string | readonly string[] | undefined>();
  for (const [name, value] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    lowered.set(name.toLowerCase(), value);
  }
  return (name) => {
    const value = lowered.get(name);
    return typeof value === "string" ? value : value?.join(", ");
  };
}
