// What test/run.mjs set up (server, keys, voice, a wav file), and small helpers.
import { readFileSync } from "node:fs";
import { Voiced } from "../dist/index.js";

const file = process.env.VOICED_SDK_FIXTURES;
if (!file) throw new Error("run the tests through `npm test` (test/run.mjs), which starts the server");
export const fixtures = JSON.parse(readFileSync(file, "utf8"));

/** A client for one of the fixture keys (`main`, `readOnly`, `rateLimited`, `captures`, `unpaid`). */
export function client(key = "main", options = {}) {
  return new Voiced({ apiKey: fixtures.keys[key], baseURL: fixtures.baseURL, ...options });
}

/** Resolves with the rejection of `promise`; fails the test when it fulfils. */
export async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the call to fail, and it succeeded");
}

/** The container an audio file's first bytes announce. */
export function audioKind(bytes) {
  const ascii = (from, to) => String.fromCharCode(...bytes.subarray(from, to));
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WAVE") return "wav";
  if (ascii(0, 4) === "OggS") return "ogg";
  if (ascii(0, 3) === "ID3" || (bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0)) return "mp3";
  return "unknown";
}

/** A fetch that records each attempt (method, path, headers, status or error) and passes it on. */
export function recordingFetch(log, inner = fetch) {
  return async (url, init) => {
    const entry = { method: init.method, path: new URL(url).pathname, headers: { ...init.headers } };
    log.push(entry);
    try {
      const res = await inner(url, init);
      entry.status = res.status;
      return res;
    } catch (err) {
      entry.error = err;
      throw err;
    }
  };
}
