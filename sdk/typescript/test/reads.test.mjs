import assert from "node:assert/strict";
import { test } from "node:test";
import { Voiced, VoicedError } from "../dist/index.js";
import { client, fixtures, rejection } from "./fixtures.mjs";

test("voices.list answers the account's voices with the rate-limit state", async () => {
  const { data, response } = await client().voices.list().withResponse();
  assert.equal(data.total, data.data.length);
  const voice = data.data.find((v) => v.name === fixtures.voice);
  assert.ok(voice, "the fixture voice is listed");
  assert.match(voice.id, /^voice_/);
  assert.equal(voice.default_engine, "kokoro");
  assert.equal(response.status, 200);
  assert.match(response.requestId, /\S/);
  assert.equal(response.rateLimit.policy, "read-burst");
  assert.equal(response.rateLimit.quota, 300);
  assert.equal(response.rateLimit.window, 60);
  assert.ok(response.rateLimit.remaining >= 0 && response.rateLimit.remaining < 300);
  assert.deepEqual(
    response.rateLimit.policies.map((p) => [p.name, p.quota, p.window]),
    [
      ["writes", 600, 3600],
      ["read-burst", 300, 60],
    ],
  );
});

test("captures.list passes limit and offset", async () => {
  const page = await client().captures.list({ limit: 3, offset: 0 });
  assert.equal(page.limit, 3);
  assert.equal(page.offset, 0);
  assert.ok(Array.isArray(page.data) && page.data.length <= 3);
  assert.equal(typeof page.total, "number");
});

test("401: an unknown key is invalid_api_key, not retried", async () => {
  const attempts = [];
  const voiced = new Voiced({
    apiKey: "vk_not-a-key-of-this-server",
    baseURL: fixtures.baseURL,
    fetch: async (url, init) => {
      attempts.push(init.headers.authorization);
      return fetch(url, init);
    },
  });
  const err = await rejection(voiced.voices.list());
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 401);
  assert.equal(err.code, "invalid_api_key");
  assert.match(err.detail, /\S/);
  assert.match(err.requestId, /\S/);
  assert.equal(err.rateLimit, undefined, "no key, no rate-limit state");
  assert.deepEqual(attempts, ["Bearer vk_not-a-key-of-this-server"]);
});

test("403 insufficient_scope names the scope a read-only key lacks", async () => {
  const err = await rejection(client("readOnly").speech.create({ text: "Hi.", voice: fixtures.voice }));
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 403);
  assert.equal(err.code, "insufficient_scope");
  assert.equal(err.requiredScope, "voice:generate");
  assert.equal(err.instance, "/v1/speech");
  // The same key reads fine.
  assert.ok((await client("readOnly").voices.list()).total >= 1);
});

test("403 pro_plan_required carries the billing settings URL", async () => {
  const err = await rejection(client("unpaid").voices.list());
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 403);
  assert.equal(err.code, "pro_plan_required");
  assert.match(err.settingsUrl, /^https?:\/\//);
  assert.equal(err.rateLimit.policy, "read-burst");
});

test("404 not_found for a generation that does not exist", async () => {
  const err = await rejection(client().generations.get("gen_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f"));
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 404);
  assert.equal(err.code, "not_found");
  assert.equal(err.param, undefined);
});

test("400 invalid_request names the parameter at fault", async () => {
  const err = await rejection(client().captures.list({ limit: 0 }));
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 400);
  assert.equal(err.code, "invalid_request");
  assert.equal(err.param, "limit");
  assert.match(err.message, /^400 invalid_request: /);
  const tooLong = await rejection(client().generations.get("g".repeat(201)));
  assert.equal(tooLong.param, "generationId");
});

test("the client reads VOICED_API_KEY and VOICED_BASE_URL, and refuses to start without a key", async () => {
  const saved = { key: process.env.VOICED_API_KEY, base: process.env.VOICED_BASE_URL };
  try {
    delete process.env.VOICED_API_KEY;
    assert.throws(() => new Voiced({ baseURL: fixtures.baseURL }), /VOICED_API_KEY/);
    process.env.VOICED_API_KEY = fixtures.keys.main;
    process.env.VOICED_BASE_URL = `${fixtures.baseURL}/v1/`; // an OpenAI-style base works too
    const voiced = new Voiced();
    assert.equal(voiced.baseURL, fixtures.baseURL);
    assert.ok((await voiced.voices.list()).data.some((v) => v.name === fixtures.voice));
  } finally {
    for (const [name, value] of [
      ["VOICED_API_KEY", saved.key],
      ["VOICED_BASE_URL", saved.base],
    ]) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});
