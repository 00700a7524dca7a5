// The SDK under Deno and Bun, through their own fetch. Runs for each runtime found on PATH
// (`deno`, `bun`) and is skipped, saying so, for one that is not installed.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { fixtures } from "./fixtures.mjs";

const smoke = join(dirname(fileURLToPath(import.meta.url)), "smoke.mjs");
const onPath = (name) =>
  (process.env.PATH ?? "")
    .split(delimiter)
    .map((dir) => join(dir, name))
    .find((p) => existsSync(p));
const args = [fixtures.baseURL, fixtures.keys.main, fixtures.voice, fixtures.wav];
const runtimes = {
  deno: (bin) => [bin, ["run", "--quiet", "--allow-net", "--allow-read", "--allow-env", smoke, ...args]],
  bun: (bin) => [bin, ["run", smoke, ...args]],
};

for (const [name, command] of Object.entries(runtimes)) {
  const bin = onPath(name);
  test(`the SDK works under ${name}`, { skip: bin ? false : `${name} is not on PATH` }, () => {
    const [file, argv] = command(bin);
    const out = JSON.parse(execFileSync(file, argv, { encoding: "utf8" }));
    assert.equal(out.hasVoice, true);
    assert.equal(out.policy, "read-burst");
    assert.match(out.text.toLowerCase(), /test/);
    assert.deepEqual(out.error, { code: "invalid_request", param: "limit", status: 400 });
  });
}
