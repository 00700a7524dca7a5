import assert from "node:assert/strict";
import { test } from "node:test";
import { Voiced, VoicedError } from "../dist/index.js";
import { client, fixtures, recordingFetch, rejection } from "./fixtures.mjs";

/** Spends the `rateLimited` key's read-burst quota (300 a minute) until the server answers 429. */
async function burnReads() {
  const headers = { authorization: `Bearer ${fixtures.keys.rateLimited}` };
  for (let round = 0; round < 20; round++) {
    const statuses = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const res = await fetch(`${fixtures.baseURL}/v1/voices`, { headers });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    if (statuses.includes(429)) return;
  }
  throw new Error("no 429 after 1000 reads");
}

test("429: retried after Retry-After and then answered; without retries the error carries retryAfter", async () => {
  // Reads refill one every 0.2 s, so a token may come back between the burn and the call;
  // then burn again. What must hold: a 429 the SDK saw was followed by a successful retry.
  for (let tries = 0; ; tries++) {
    assert.ok(tries < 20, "could not catch the key with its quota spent");
    await burnReads();
    const err = await rejection(client("rateLimited", { maxRetries: 0 }).voices.list()).catch((e) => e);
    if (!(err instanceof VoicedError)) continue; // a refilled token answered: burn again
    assert.equal(err.status, 429);
    assert.equal(err.code, "rate_limit_exceeded");
    assert.ok(err.retryAfter >= 1, `Retry-After ${err.retryAfter}`);
    assert.equal(err.rateLimit.policy, "read-burst");
    assert.equal(err.rateLimit.remaining, 0);

    const log = [];
    const { data, response } = await client("rateLimited", { fetch: recordingFetch(log) })
      .voices.list()
      .withResponse();
    if (log[0].status !== 429) continue;
    assert.deepEqual(
      log.map((e) => e.status),
      [429, 200],
    );
    assert.equal(response.retries, 1);
    assert.ok(data.data.some((v) => v.name === fixtures.voice));
    return;
  }
});

test("503 is retried, keeping the POST's Idempotency-Key", async () => {
  const log = [];
  let failures = 1;
  // The first answer is a 503 problem document, as the server sends when its recogniser queue is full.
  const unavailableOnce = async (url, init) => {
    if (failures-- > 0) {
      const body = {
        type: "about:blank",
        title: "Service unavailable",
        status: 503,
        detail: "busy",
        instance: "/v1/speech",
        code: "service_unavailable",
      };
      return new Response(JSON.stringify(body), {
        status: 503,
        headers: { "content-type": "application/problem+json", "retry-after": "0" },
      });
    }
    return fetch(url, init);
  };
  const voiced = client("main", { fetch: recordingFetch(log, unavailableOnce) });
  const accepted = await voiced.speech.create({ text: "Retry me.", voice: fixtures.voice });
  assert.match(accepted.id, /^gen_/);
  assert.deepEqual(
    log.map((e) => e.status),
    [503, 202],
  );
  assert.equal(log[0].headers["idempotency-key"], log[1].headers["idempotency-key"]);
});

test("an unreachable server is a connection_error after maxRetries resends", async () => {
  // A port that was free a moment ago: nothing listens there.
  const { createServer } = await import("node:net");
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  const log = [];
  const voiced = new Voiced({
    apiKey: fixtures.keys.main,
    baseURL: `http://127.0.0.1:${port}`,
    maxRetries: 1,
    fetch: recordingFetch(log),
  });
  const err = await rejection(voiced.voices.list());
  assert.ok(err instanceof VoicedError);
  assert.equal(err.code, "connection_error");
  assert.equal(err.status, undefined);
  assert.equal(log.length, 2);
});

test("timeout: an attempt that takes too long fails with code timeout, each resend keeping the key", async () => {
  // A server that accepts the connection, reads the request and never answers. (Against voiced
  // itself a 1 ms timeout raced the server: the resend, carrying the first attempt's key, could be
  // answered 409 idempotency_key_in_use before the timer fired.)
  const { createServer } = await import("node:net");
  const sockets = new Set();
  const silent = createServer((socket) => {
    sockets.add(socket);
    socket.on("data", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  const port = await new Promise((resolve) =>
    silent.listen(0, "127.0.0.1", () => resolve(silent.address().port)),
  );
  try {
    const log = [];
    const voiced = new Voiced({
      apiKey: fixtures.keys.main,
      baseURL: `http://127.0.0.1:${port}`,
      timeout: 200,
      maxRetries: 1,
      fetch: recordingFetch(log),
    });
    const err = await rejection(
      voiced.audio.speech.create({ model: "kokoro", input: "Too slow.", voice: fixtures.voice }),
    );
    assert.ok(err instanceof VoicedError);
    assert.equal(err.code, "timeout");
    assert.equal(err.status, undefined);
    assert.equal(log.length, 2);
    assert.ok(
      log.every((e) => e.status === undefined && e.error !== undefined),
      "no attempt was answered",
    );
    assert.equal(log[0].headers["idempotency-key"], log[1].headers["idempotency-key"]);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

test("AbortSignal: an aborted call rejects with the signal's reason and is not retried", async () => {
  const log = [];
  const voiced = client("main", { fetch: recordingFetch(log) });
  const already = await rejection(voiced.voices.list({ signal: AbortSignal.abort() }));
  assert.equal(already.name, "AbortError");
  assert.equal(log.length, 0, "nothing was sent");

  const controller = new AbortController();
  const call = voiced.speech.createAndWait(
    { text: "This wait is cancelled.", voice: fixtures.voice },
    { signal: controller.signal, pollInterval: 50 },
  );
  // Abort once the generation was admitted and the SDK is polling it.
  const deadline = Date.now() + 30_000;
  while (!log.some((e) => e.path.startsWith("/v1/generations/"))) {
    assert.ok(Date.now() < deadline, "the SDK never polled");
    await new Promise((r) => setTimeout(r, 10));
  }
  const sent = log.length;
  controller.abort(new Error("user gave up"));
  const err = await rejection(call);
  assert.equal(err.message, "user gave up");
  assert.equal(log.length, sent, "nothing was sent after the abort");
  assert.ok(!log.some((e) => e.path.startsWith("/v1/audio/")), "the audio was never fetched");
});
