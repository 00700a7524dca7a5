// webhooks.verify: the Standard Webhooks specification's test vector, a cross-check against the
// `standardwebhooks` package (npm, an independent implementation), the refusals, and a real
// delivery of the test server to a loopback receiver, registered with `voiced admin webhook`.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { test } from "node:test";
import { Webhook } from "standardwebhooks";
import { WebhookVerificationError, webhooks } from "../dist/index.js";
import { client, fixtures, rejection } from "./fixtures.mjs";

const specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const specHeaders = {
  "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330",
  "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const specBody = '{"test": 2432232314}';
const specTime = new Date(1614265330 * 1000);

test("webhooks.verify accepts the specification's example and returns the payload", async () => {
  const payload = await webhooks.verify(specBody, specHeaders, specSecret, { now: specTime });
  assert.deepEqual(payload, { test: 2432232314 });
  const fromBytes = await webhooks.verify(
    new TextEncoder().encode(specBody),
    new Headers(specHeaders),
    specSecret,
    {
      now: specTime,
    },
  );
  assert.deepEqual(fromBytes, { test: 2432232314 });
});

test("webhooks.verify refuses altered bodies, wrong secrets, old or future timestamps and missing headers", async () => {
  const refused = async (body, headers, secret = specSecret, now = specTime) => {
    const err = await rejection(webhooks.verify(body, headers, secret, { now }));
    assert.ok(err instanceof WebhookVerificationError, String(err));
    return err.message;
  };
  assert.match(await refused('{"test": 2432232315}', specHeaders), /signature/);
  assert.match(await refused(specBody, specHeaders, "whsec_" + btoa("another secret")), /signature/);
  assert.match(
    await refused(specBody, specHeaders, specSecret, new Date((1614265330 + 301) * 1000)),
    /too old/,
  );
  assert.match(
    await refused(specBody, specHeaders, specSecret, new Date((1614265330 - 301) * 1000)),
    /too new/,
  );
  assert.match(await refused(specBody, { ...specHeaders, "webhook-signature": undefined }), /missing/);
  assert.match(await refused(specBody, { ...specHeaders, "webhook-signature": "v2,abc" }), /signature/);
});

test("webhooks.verify agrees with the standardwebhooks package, rotations included", async () => {
  const secret = "whsec_" + btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
  const previous = "whsec_" + btoa("the previous secret, 32 bytes ok");
  const now = new Date();
  const id = "msg_cross_check";
  const body = JSON.stringify({ type: "generation.completed", data: { id: "gen_1" } });
  const signature = new Webhook(secret).sign(id, now, body);
  const old = new Webhook(previous).sign(id, now, body);
  const headers = {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": `${old} ${signature}`,
  };
  assert.deepEqual(await webhooks.verify(body, headers, secret), JSON.parse(body));
  assert.deepEqual(await webhooks.verify(body, headers, previous), JSON.parse(body));
  // And the package accepts what the SDK accepts.
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
});

test("a delivery signed by voiced verifies with the endpoint's secret", async () => {
  const received = [];
  let arrived;
  const done = new Promise((resolve) => (arrived = resolve));
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
      arrived();
    });
  });
  await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  try {
    const env = {
      ...process.env,
      VOICED_DATA_DIR: fixtures.dataDir,
      VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES: "true",
      VOICED_LOG: "warn",
    };
    delete env.VOICED_DATABASE_URL;
    const { port } = receiver.address();
    const endpoint = JSON.parse(
      execFileSync(
        fixtures.bin,
        [
          "admin",
          "--json",
          "webhook",
          "create",
          "--account",
          fixtures.mainAccount,
          "--url",
          `http://127.0.0.1:${port}/hooks`,
          "--events",
          "generation.completed",
        ],
        { env, encoding: "utf8" },
      ),
    );
    assert.match(endpoint.secret, /^whsec_/);
    const voiced = client();
    const accepted = await voiced.speech.create({ text: "Webhook check.", voice: fixtures.voice });
    await voiced.generations.wait(accepted.id, { pollInterval: 100 });
    const mine = () =>
      received.find((r) => {
        try {
          return JSON.parse(r.body).data.id === accepted.id;
        } catch {
          return false;
        }
      });
    while (!mine()) await done.then(() => new Promise((r) => setTimeout(r, 50)));
    const delivery = mine();
    const event = await webhooks.verify(delivery.body, delivery.headers, endpoint.secret);
    assert.equal(event.type, "generation.completed");
    assert.equal(event.data.id, accepted.id);
    assert.equal(event.data.status, "completed");
    assert.match(delivery.headers["webhook-id"], /^msg_/);
    const tampered = rejection(
      webhooks.verify(delivery.body.replace("completed", "failed"), delivery.headers, endpoint.secret),
    );
    assert.ok((await tampered) instanceof WebhookVerificationError);
    execFileSync(
      fixtures.bin,
      ["admin", "webhook", "delete", endpoint.id, "--account", fixtures.mainAccount],
      { env },
    );
  } finally {
    receiver.close();
  }
});
