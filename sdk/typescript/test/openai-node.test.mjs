// OpenAI's own Node SDK and the Vercel AI SDK against voiced's transcription dialect
// (`/v1/audio/transcriptions`, `/v1/audio/translations`): only the base URL and the key change.
import assert from "node:assert/strict";
import { createReadStream, readFileSync } from "node:fs";
import { test } from "node:test";
import OpenAI from "openai";
import { experimental_transcribe as transcribe } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { fixtures } from "./fixtures.mjs";

const openai = new OpenAI({ baseURL: `${fixtures.baseURL}/v1`, apiKey: fixtures.keys.main, maxRetries: 0 });
const file = () => createReadStream(fixtures.wav);

test("OpenAI Node SDK: every response_format, both granularities", async () => {
  const json = await openai.audio.transcriptions.create({ model: "whisper-1", file: file() });
  assert.match(json.text.toLowerCase(), /test/);
  const text = await openai.audio.transcriptions.create({
    model: "whisper-1",
    file: file(),
    response_format: "text",
  });
  assert.equal(String(text).trim(), json.text);
  const srt = await openai.audio.transcriptions.create({
    model: "whisper-1",
    file: file(),
    response_format: "srt",
  });
  assert.match(String(srt), /^1\n00:00:0\d,\d{3} --> 00:00:\d\d,\d{3}\n/);
  const vtt = await openai.audio.transcriptions.create({
    model: "whisper-1",
    file: file(),
    response_format: "vtt",
  });
  assert.match(String(vtt), /^WEBVTT\n\n00:00:0\d\.\d{3} --> /);
  const verbose = await openai.audio.transcriptions.create({
    model: "whisper-1",
    file: file(),
    response_format: "verbose_json",
    timestamp_granularities: ["word", "segment"],
  });
  assert.equal(verbose.language, "en");
  assert.ok(verbose.segments.length >= 1 && verbose.words.length >= 3);
  assert.equal(
    verbose.words
      .map((w) => w.word)
      .join("")
      .trim(),
    verbose.text,
  );
  assert.ok(verbose.words.every((w, i, all) => w.start <= w.end && (i === 0 || all[i - 1].start <= w.start)));
});

test("OpenAI Node SDK: stream=true iterates deltas then done", async () => {
  const stream = await openai.audio.transcriptions.create({ model: "whisper-1", file: file(), stream: true });
  const events = [];
  for await (const event of stream) events.push(event);
  const done = events.at(-1);
  assert.equal(done.type, "transcript.text.done");
  const deltas = events.slice(0, -1);
  assert.ok(deltas.length >= 1 && deltas.every((e) => e.type === "transcript.text.delta"));
  assert.equal(
    deltas
      .map((e) => e.delta)
      .join("")
      .trim(),
    done.text,
  );
});

test("OpenAI Node SDK: translations, and refusals naming the field", async () => {
  const translated = await openai.audio.translations.create({ model: "whisper-1", file: file() });
  assert.match(translated.text.toLowerCase(), /test/);
  for (const [extra, param] of [
    [{ response_format: "diarized_json" }, "response_format"],
    [{ include: ["logprobs"] }, "include[]"],
    [{ chunking_strategy: "auto" }, "chunking_strategy"],
    [{ model: "gpt-5" }, "model"],
  ]) {
    await assert.rejects(
      openai.audio.transcriptions.create({ model: "whisper-1", file: file(), ...extra }),
      (err) => err instanceof OpenAI.BadRequestError && err.param === param && err.code === "invalid_request",
    );
  }
});

test("Vercel AI SDK: experimental_transcribe with the OpenAI provider", async () => {
  const provider = createOpenAI({ baseURL: `${fixtures.baseURL}/v1`, apiKey: fixtures.keys.main });
  const result = await transcribe({
    model: provider.transcription("whisper-1"),
    audio: readFileSync(fixtures.wav),
  });
  assert.match(result.text.toLowerCase(), /test/);
  assert.equal(result.language, "en");
  assert.ok(result.durationInSeconds > 1);
  assert.ok(result.segments.length >= 1);
  assert.ok(result.segments.every((s) => s.startSecond <= s.endSecond));
});
