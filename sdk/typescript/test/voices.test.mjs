import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { VoicedError } from "../dist/index.js";
import { client, rejection } from "./fixtures.mjs";

test("voices.presets lists the installed engines' presets", async () => {
  const page = await client("readOnly").voices.presets();
  assert.equal(page.total, page.data.length);
  const heart = page.data.find((p) => p.engine === "kokoro" && p.preset === "af_heart");
  assert.ok(heart, "af_heart is offered");
  assert.equal(heart.language, "en-us");
  assert.match(heart.description, /female/);
});

test("voices.create adds a preset voice once; the same name again is conflict", async () => {
  const name = `sdk-${randomUUID()}`;
  const voice = await client().voices.create({ name, engine: "kokoro", preset: "bf_emma" });
  assert.match(voice.id, /^voice_/);
  assert.equal(voice.name, name);
  assert.equal(voice.language, "en-gb");
  assert.equal(voice.voice_type, "preset");
  assert.equal(voice.default_engine, "kokoro");
  const listed = await client().voices.list();
  assert.ok(listed.data.some((v) => v.id === voice.id));

  const err = await rejection(client().voices.create({ name, engine: "kokoro", preset: "af_heart" }));
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 409);
  assert.equal(err.code, "conflict");
  assert.equal(err.param, "name");
});

test("voices.create with the same idempotency key answers the first voice", async () => {
  const name = `sdk-${randomUUID()}`;
  const idempotencyKey = randomUUID();
  const params = { name, engine: "kokoro", preset: "af_heart", language: "en-us" };
  const first = await client().voices.create(params, { idempotencyKey });
  const { data: again, response } = await client().voices.create(params, { idempotencyKey }).withResponse();
  assert.deepEqual(again, first);
  assert.equal(response.headers.get("idempotent-replayed"), "true");
});

test("voices.create: an unknown preset is invalid_request naming preset", async () => {
  const err = await rejection(
    client().voices.create({ name: `sdk-${randomUUID()}`, engine: "kokoro", preset: "nova" }),
  );
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 400);
  assert.equal(err.code, "invalid_request");
  assert.equal(err.param, "preset");
});

test("pronunciations: create, list, refuse by member, delete", async () => {
  const text = `sdk${randomUUID().slice(0, 8)}`;
  const rule = await client().pronunciations.create({ text, phonemes: "ˈkoʊkəɹoʊ", language: "en" });
  assert.match(rule.id, /^pron_/);
  assert.equal(rule.phonemes, "ˈkoʊkəɹoʊ");
  assert.equal(rule.language, "en");
  assert.equal(rule.alias, undefined);
  const listed = await client("readOnly").pronunciations.list();
  assert.ok(listed.data.some((r) => r.id === rule.id));

  const err = await rejection(client().pronunciations.create({ text, phonemes: "k☃" }));
  assert.ok(err instanceof VoicedError);
  assert.equal(err.status, 400);
  assert.equal(err.code, "invalid_request");
  assert.equal(err.param, "phonemes");

  await client().pronunciations.delete(rule.id);
  const gone = await rejection(client().pronunciations.delete(rule.id));
  assert.equal(gone.status, 404);
  assert.equal(gone.code, "not_found");
});
