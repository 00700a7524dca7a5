import assert from "node:assert/strict";
import { test } from "node:test";
import { SpeechAudio, VoicedError } from "../dist/index.js";
import { audioKind, client, fixtures, recordingFetch, rejection } from "./fixtures.mjs";

test("speech.create admits a generation; generations.get and wait follow it to completion", async () => {
  const log = [];
  const voiced = client("main", { fetch: recordingFetch(log) });
  const { data: accepted, response } = await voiced.speech
    .create({ text: "Hi.", voice: fixtures.voice, seed: 7, format: "opus" })
    .withResponse();
  assert.match(accepted.id, /^gen_/);
  assert.equal(accepted.status, "generating");
  assert.equal(accepted.voice, fixtures.voice);
  assert.equal(response.status, 202);
  assert.equal(response.rateLimit.policy, "writes");
  assert.equal(response.rateLimit.quota, 600);
  // Every POST carries an Idempotency-Key the caller did not have to make.
  assert.match(log[0].headers["idempotency-key"], /^[0-9a-f-]{36}$/);
  assert.equal(response.idempotencyKey, log[0].headers["idempotency-key"]);

  const polled = await voiced.generations.get(accepted.id);
  assert.equal(polled.id, accepted.id);
  assert.equal(polled.seed, 7);
  assert.equal(polled.format, "opus");
  const done = await voiced.generations.wait(accepted.id, { pollInterval: 100 });
  assert.equal(done.status, "completed");
  assert.match(done.audio_url, /\/v1\/audio\/gen_.*\?sig=/);
  assert.ok(done.duration_ms > 0);
});

test("speech.createAndWait answers the generation and its audio bytes", async () => {
  const result = await client().speech.createAndWait(
    { text: "Hello from the TypeScript SDK.", voice: fixtures.voice, format: "wav" },
    { pollInterval: 100 },
  );
  assert.equal(result.generation.status, "completed");
  assert.equal(result.generation.format, "wav");
  assert.equal(result.contentType, "audio/wav");
  assert.ok(result.audio instanceof Uint8Array);
  assert.equal(audioKind(result.audio), "wav");
  // 16-bit mono PCM of about a second or more of speech: well over 10 kB.
  assert.ok(result.audio.byteLength > 10_000, `${result.audio.byteLength} bytes`);
});

test("audio.speech.create answers the audio and the generation id (OpenAI-compatible route)", async () => {
  const voiced = client();
  const speech = await voiced.audio.speech.create({
    model: "kokoro",
    input: "Hi there.",
    voice: fixtures.voice,
    response_format: "mp3",
  });
  assert.ok(speech instanceof SpeechAudio);
  assert.equal(speech.status, 200);
  assert.equal(speech.contentType, "audio/mpeg");
  assert.equal(audioKind(speech.bytes), "mp3");
  assert.ok(speech.bytes.byteLength > 2_000, `${speech.bytes.byteLength} bytes`);
  const copy = new Uint8Array(await speech.arrayBuffer());
  assert.deepEqual(copy, speech.bytes);
  assert.equal((await speech.blob()).size, speech.bytes.byteLength);
  assert.equal(speech.engine, "kokoro");
  assert.match(speech.generationId, /^gen_/);
  const generation = await voiced.generations.get(speech.generationId);
  assert.equal(generation.status, "completed");
  assert.equal(generation.format, "mp3");
});

test("audio.speech errors are parsed from the OpenAI envelope", async () => {
  const err = await rejection(client().audio.speech.create({ model: "tts-1", input: "Hi.", voice: "alloy" }));
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 400);
  assert.equal(err.code, "invalid_request");
  assert.equal(err.type, "invalid_request_error");
  assert.equal(err.param, "voice");
  assert.match(err.detail, /\S/);
});

test("400 on speech names the field: a negative seed", async () => {
  const err = await rejection(client().speech.create({ text: "Hi.", voice: fixtures.voice, seed: -1 }));
  assert.equal(err.code, "invalid_request");
  assert.equal(err.param, "seed");
});

test("a network failure after the server admitted a POST is retried with the same key: one generation", async () => {
  const log = [];
  let dropped;
  // Lets the first POST reach the server and answer, then loses the answer on the way back.
  const flaky = async (url, init) => {
    if (init.method === "POST" && dropped === undefined) {
      const res = await fetch(url, init);
      dropped = await res.json();
      throw new TypeError("fetch failed (connection reset after the server answered)");
    }
    return fetch(url, init);
  };
  const voiced = client("main", { fetch: recordingFetch(log, flaky) });
  const { data, response } = await voiced.speech
    .create({ text: "Only once.", voice: fixtures.voice })
    .withResponse();
  assert.equal(log.length, 2);
  assert.ok(log[0].error, "the first attempt failed on the client side");
  assert.equal(log[1].headers["idempotency-key"], log[0].headers["idempotency-key"]);
  assert.equal(response.retries, 1);
  assert.equal(response.idempotentReplayed, true);
  assert.equal(data.id, dropped.id, "the retry answers the generation the lost answer named");
});

test("a caller's Idempotency-Key replays the first answer; with another body it is refused", async () => {
  const voiced = client();
  const idempotencyKey = `sdk-test-${crypto.randomUUID()}`;
  const params = { text: "Replay me.", voice: fixtures.voice, seed: 3 };
  const first = await voiced.speech.create(params, { idempotencyKey }).withResponse();
  const again = await voiced.speech.create(params, { idempotencyKey }).withResponse();
  assert.equal(again.data.id, first.data.id);
  assert.equal(first.response.idempotentReplayed, false);
  assert.equal(again.response.idempotentReplayed, true);
  const err = await rejection(voiced.speech.create({ ...params, seed: 4 }, { idempotencyKey }));
  assert.equal(err.status, 422);
  assert.equal(err.code, "idempotency_key_reused");
  const other = await voiced.speech.create(params);
  assert.notEqual(other.id, first.data.id, "without the key the same body generates anew");
});

test("generations.list pages and filters the history; generations.cancel stops one", async () => {
  const voiced = client();
  const done = await voiced.speech.createAndWait(
    { text: "Listed.", voice: fixtures.voice },
    { pollInterval: 100 },
  );
  const page = await voiced.generations.list({ limit: 200, status: "completed", voice: fixtures.voice });
  assert.ok(page.data.some((g) => g.id === done.generation.id));
  assert.ok(page.data.every((g) => g.status === "completed"));
  assert.equal(page.limit, 200);
  assert.ok(page.total >= page.data.length);
  const cancelled = await rejection(voiced.generations.cancel(done.generation.id));
  assert.ok(cancelled instanceof VoicedError);
  assert.equal(cancelled.code, "generation_finished");
  assert.equal(cancelled.status, 409);
  const missing = await rejection(voiced.generations.cancel("gen_missing"));
  assert.equal(missing.code, "not_found");
  const bad = await rejection(voiced.generations.list({ status: "done" }));
  assert.equal(bad.code, "invalid_request");
  assert.equal(bad.param, "status");
});

test("speech with timestamps: word carries the words; generations.captions renders them", async () => {
  const text = "Good morning, Ada.";
  const result = await client().speech.createAndWait({
    text,
    voice: fixtures.voice,
    seed: 7,
    format: "wav",
    timestamps: "word",
  });
  const words = result.generation.words ?? [];
  assert.deepEqual(
    words.map((w) => w.text),
    ["Good", "morning", "Ada"],
  );
  for (const w of words) {
    assert.ok(w.start < w.end, JSON.stringify(w));
    assert.equal(text.slice(w.source_start, w.source_end).replace(/[,.]/g, ""), w.text);
  }
  const vtt = await client().generations.captions(result.generation.id);
  assert.match(vtt, /^WEBVTT\n\n00:00:00\.\d{3} --> /);
  assert.match(vtt, /Good morning Ada/);
});

test("generations.deleteAudio removes the audio and keeps the generation", async () => {
  const result = await client().speech.createAndWait({ text: "Forget this.", voice: fixtures.voice });
  await client().generations.deleteAudio(result.generation.id);
  const after = await client().generations.get(result.generation.id);
  assert.equal(after.status, "completed");
  assert.equal(after.has_audio, false);
  assert.equal(after.audio_url, undefined);
  await client().generations.deleteAudio(result.generation.id);
});
