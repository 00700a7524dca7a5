import assert from "node:assert/strict";
import { createReadStream, readFileSync } from "node:fs";
import { test } from "node:test";
import { VoicedError } from "../dist/index.js";
import { client, fixtures, recordingFetch, rejection } from "./fixtures.mjs";

// The `captures` key's account is used by this file alone: it holds exactly the captures made here.
test("transcriptions from a file path, a stream and a Blob (btoa); captures.iterate pages through them all", async () => {
  const voiced = client("captures");
  const fromPath = await voiced.transcriptions.create({ audio: fixtures.wav });
  assert.match(fromPath.id, /^cap_/);
  assert.equal(fromPath.language, "en");
  assert.match(fromPath.text.toLowerCase(), /test/);
  assert.ok(fromPath.duration_ms > 1000, `${fromPath.duration_ms} ms`);

  const fromStream = await voiced.transcriptions.create({ audio: createReadStream(fixtures.wav) });
  const wav = readFileSync(fixtures.wav);
  // With Node's Buffer hidden the SDK encodes with btoa, as in browsers; the fetch puts it back.
  const buffer = globalThis.Buffer;
  const restoring = (url, init) => {
    globalThis.Buffer = buffer;
    return fetch(url, init);
  };
  let fromBlob;
  try {
    globalThis.Buffer = undefined;
    fromBlob = await client("captures", { fetch: restoring }).transcriptions.create({
      audio: new Blob([wav], { type: "audio/wav" }),
    });
  } finally {
    globalThis.Buffer = buffer;
  }
  // The same audio, however it was handed over, reads the same.
  assert.equal(fromStream.text, fromPath.text);
  assert.equal(fromBlob.text, fromPath.text);

  const log = [];
  const paging = client("captures", { fetch: recordingFetch(log) });
  const seen = [];
  for await (const capture of paging.captures.iterate({ pageSize: 2 })) seen.push(capture);
  assert.deepEqual(seen.map((c) => c.id).sort(), [fromPath.id, fromStream.id, fromBlob.id].sort());
  assert.ok(seen.every((c) => c.source === "api" && c.transcript_raw === fromPath.text));
  assert.deepEqual(
    log.map((entry) => entry.path + " " + entry.status),
    ["/v1/captures 200", "/v1/captures 200"],
    "three captures at two a page take two requests",
  );
});

test("transcription of bytes that are not audio is 400 naming audio", async () => {
  const err = await rejection(
    client().transcriptions.create({ audio: new TextEncoder().encode("certainly not a wav file") }),
  );
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 400);
  assert.equal(err.code, "invalid_request");
  assert.equal(err.param, "audio");
});

test("timestamps: words and segments in the answer, the capture read back, its captions", async () => {
  const voiced = client();
  const timed = await voiced.transcriptions.create({ audio: fixtures.wav, timestamps: "word" });
  assert.ok(timed.segments.length >= 1);
  assert.ok(timed.words.length >= 3);
  assert.equal(
    timed.words
      .map((w) => w.word)
      .join("")
      .trim(),
    timed.text,
  );
  for (const w of timed.words) assert.ok(w.start <= w.end, JSON.stringify(w));

  const capture = await voiced.captures.retrieve(timed.id);
  assert.equal(capture.timestamps, "word");
  assert.equal(capture.task, "transcribe");
  assert.deepEqual(capture.words, timed.words);

  const vtt = await voiced.captures.captions(timed.id);
  assert.match(vtt, /^WEBVTT\n\n00:00:0\d\.\d{3} --> /);
  const srt = await voiced.captures.captions(timed.id, { format: "srt" });
  assert.match(srt, /^1\n00:00:0\d,\d{3} --> /);

  const plain = await voiced.transcriptions.create({ audio: fixtures.wav });
  assert.equal(plain.segments, undefined);
  const err = await rejection(voiced.captures.captions(plain.id));
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 409);
  assert.equal(err.code, "timestamps_unavailable");
  const missing = await rejection(voiced.captures.retrieve("cap_missing"));
  assert.equal(missing.code, "not_found");
});

test("captures.delete removes a capture; the next read is not_found", async () => {
  const capture = await client().transcriptions.create({ audio: fixtures.wav });
  await client().captures.delete(capture.id);
  const err = await rejection(client().captures.retrieve(capture.id));
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 404);
  assert.equal(err.code, "not_found");
});
