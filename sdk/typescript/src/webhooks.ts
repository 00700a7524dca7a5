// Verifying webhook deliveries (docs/webhooks.md): the Standard Webhooks scheme
// (https://www.standardwebhooks.com/). `webhook-signature` holds space-separated `v1,<base64>`
// entries (two during a secret rotation); each is HMAC-SHA256 under the secret's bytes of
// `{webhook-id}.{webhook-timestamp}.{body}`. Web Crypto only, so it runs wherever the SDK does
// (Node >= 20, Deno, Bun, browsers, edge runtimes); the comparison is `crypto.subtle.verify`'s,
// which does not stop at the first differing byte.

/** A delivery that is not from voiced, was altered, or is too old or too new. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

/** Headers as a `Headers` object (fetch, Deno, Bun) or a plain object (Node's `req.headers`). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface WebhookVerifyOptions {
  /** Seconds a delivery's timestamp may be away from now (default 300: five minutes). */
  toleranceSeconds?: number;
  /** The time to check the timestamp against (default: now). */
  now?: Date;
}

const SECRET_PREFIX = "whsec_";
const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return undefined;
  }
}

/**
 * Checks a delivery's signature and timestamp and returns its parsed payload
 * (`{type, timestamp, data}`). `payload` must be the raw body as received (a string or its
 * bytes), before any JSON parsing. Throws {@link WebhookVerificationError} when the headers are
 * missing, the timestamp is more than `toleranceSeconds` away, or no `v1` signature matches.
 */
async function verify(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: WebhookVerifyOptions = {},
): Promise<unknown> {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  }
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(seconds)) {
    throw new WebhookVerificationError("invalid webhook-timestamp");
  }
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (seconds < now - tolerance) throw new WebhookVerificationError("message timestamp too old");
  if (seconds > now + tolerance) throw new WebhookVerificationError("message timestamp too new");

  const keyBytes = base64Bytes(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
  );
  if (!keyBytes || keyBytes.length === 0) throw new TypeError("the secret is not whsec_ followed by base64");
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
  const body = typeof payload === "string" ? encoder.encode(payload) : payload;
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix, 0);
  signed.set(body, prefix.length);

  for (const entry of signatures.split(" ")) {
    const [version, encoded] = entry.split(",", 2);
    if (version !== "v1" || !encoded) continue;
    const signature = base64Bytes(encoded);
    if (signature && (await crypto.subtle.verify("HMAC", key, signature, signed))) {
      const text = typeof payload === "string" ? payload : new TextDecoder().decode(payload);
      return JSON.parse(text);
    }
  }
  throw new WebhookVerificationError("no matching signature found");
}

/** Webhook helpers: `webhooks.verify(payload, headers, secret)`. */
export const webhooks = { verify };
