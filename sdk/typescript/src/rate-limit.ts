// The rate-limit headers of the IETF httpapi ratelimit-headers draft, as structured-field
// lists: `RateLimit-Policy: "writes";q=600;w=3600, "read-burst";q=300;w=60` and
// `RateLimit: "read-burst";r=299;t=1`.

/** One policy of `RateLimit-Policy`. */
export interface RateLimitPolicy {
  /** Policy name, e.g. `writes` or `read-burst`. */
  name: string;
  /** Requests the policy allows per window (`q`). */
  quota?: number;
  /** Window length in seconds (`w`). */
  window?: number;
}

/** The rate-limit state a response reported. */
export interface RateLimitInfo {
  /** The policy this request counted against (from `RateLimit`). */
  policy: string;
  /** Requests left in that policy (`r`). */
  remaining: number;
  /** Seconds until that policy's quota is full again (`t`). */
  reset: number;
  /** That policy's quota and window, when `RateLimit-Policy` names it. */
  quota?: number;
  window?: number;
  /** Every policy of the credential (`RateLimit-Policy`). */
  policies: RateLimitPolicy[];
}

interface Item {
  name: string;
  params: Map<string, string>;
}

/** Parses a structured-field list of (quoted or bare) names with `;key=value` parameters. */
function parseList(value: string): Item[] {
  const items: Item[] = [];
  let i = 0;
  const skipSpace = () => {
    while (i < value.length && (value[i] === " " || value[i] === "\t")) i++;
  };
  const bare = () => {
    const start = i;
    while (i < value.length && !";,= \t".includes(value[i]!)) i++;
    return value.slice(start, i);
  };
  const quoted = () => {
    let out = "";
    i++; // opening quote
    while (i < value.length && value[i] !== '"') {
      if (value[i] === "\\") i++;
      out += value[i] ?? "";
      i++;
    }
    i++; // closing quote
    return out;
  };
  while (i < value.length) {
    skipSpace();
    const name = value[i] === '"' ? quoted() : bare();
    const params = new Map<string, string>();
    skipSpace();
    while (value[i] === ";") {
      i++;
      skipSpace();
      const key = bare().toLowerCase();
      let v = "";
      if (value[i] === "=") {
        i++;
        v = value[i] === '"' ? quoted() : bare();
      }
      params.set(key, v);
      skipSpace();
    }
    if (name) items.push({ name, params });
    // Anything unexpected up to the next member is skipped rather than failing the call.
    while (i < value.length && value[i] !== ",") i++;
    i++;
  }
  return items;
}

function int(v: string | undefined): number | undefined {
  if (v === undefined || !/^-?\d+$/.test(v)) return undefined;
  return Number(v);
}

/**
 * Reads `RateLimit` and `RateLimit-Policy` from response headers; `undefined` when the response
 * carries no `RateLimit` (a 401, or a request made with an OAuth access token).
 */
export function parseRateLimit(headers: Headers): RateLimitInfo | undefined {
  const current = headers.get("ratelimit");
  if (!current) return undefined;
  const policies = parseList(headers.get("ratelimit-policy") ?? "").map((p) => ({
    name: p.name,
    quota: int(p.params.get("q")),
    window: int(p.params.get("w")),
  }));
  const item = parseList(current)[0];
  if (!item) return undefined;
  const remaining = int(item.params.get("r"));
  const reset = int(item.params.get("t"));
  if (remaining === undefined || reset === undefined) return undefined;
  const policy = policies.find((p) => p.name === item.name);
  return {
    policy: item.name,
    remaining,
    reset,
    quota: policy?.quota,
    window: policy?.window,
    policies,
  };
}
