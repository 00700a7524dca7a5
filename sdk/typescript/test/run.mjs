// Test setup for the whole suite: one real `voiced serve` (embedded PostgreSQL in a temporary
// data dir, real models) with accounts, keys and voices made by `voiced admin`, then
// `node --test` over test/*.test.mjs, then the server is stopped.
//
//   VOICED_BIN  the voiced binary (default ~/.cache/voiced/target/debug/voiced)
//
// The tests read what was set up from the JSON file named by VOICED_SDK_FIXTURES.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const bin = process.env.VOICED_BIN || join(homedir(), ".cache", "voiced", "target", "debug", "voiced");
const work = mkdtempSync(join(tmpdir(), "voiced-sdk-ts-"));
chmodSync(work, 0o755); // as root the embedded cluster runs as `postgres` and must reach it

const port = await new Promise((resolve, reject) => {
  const probe = createServer();
  probe.once("error", reject);
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const baseURL = `http://127.0.0.1:${port}`;
const serverEnv = {
  ...process.env,
  VOICED_DATA_DIR: join(work, "data"),
  VOICED_BIND: `127.0.0.1:${port}`,
  VOICED_PUBLIC_BASE_URL: baseURL,
  VOICED_LOG: "warn",
  // test/webhooks.test.mjs points an endpoint at a loopback receiver.
  VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES: "true",
};
delete serverEnv.VOICED_DATABASE_URL;
delete serverEnv.DATABASE_URL;

function admin(...args) {
  const out = execFileSync(bin, ["admin", "--json", ...args], { env: serverEnv, encoding: "utf8" });
  return JSON.parse(out);
}
function account(email, plan) {
  return admin("account", "create", "--email", email, "--plan", plan).id;
}
function key(accountId, scopes) {
  return admin("key", "create", "--account", accountId, "--scopes", scopes).key;
}

/** Accounts, keys and a voice made with `voiced admin` (before serve: it owns the cluster then). */
function setUp() {
  const wav = join(work, "hello.wav");
  execFileSync("espeak-ng", ["-w", wav, "Hello, this is a test of the transcription endpoint."]);
  const main = account("sdk-ts@example.com", "pro");
  const voice = "SDK Voice";
  const voiceArgs = "voice create --engine kokoro --preset jf_alpha --language en".split(" ");
  admin(...voiceArgs, "--account", main, "--name", voice);
  const captures = account("sdk-ts-captures@example.com", "pro");
  const unpaid = account("sdk-ts-unpaid@example.com", "none");
  const both = "voice:read,voice:generate";
  return {
    baseURL,
    voice,
    // For `voiced admin` while the server runs (test/webhooks.test.mjs).
    bin,
    dataDir: serverEnv.VOICED_DATA_DIR,
    mainAccount: main,
    keys: {
      main: key(main, both),
      readOnly: key(main, "voice:read"),
      rateLimited: key(main, both), // burnt by the 429 test, used by nothing else
      captures: key(captures, both), // the only key of an account whose captures the iterator counts
      unpaid: key(unpaid, both),
    },
    wav,
    work,
  };
}

let fixtures;
try {
  fixtures = setUp();
} catch (err) {
  rmSync(work, { recursive: true, force: true });
  throw err;
}
const fixturesFile = join(work, "fixtures.json");
writeFileSync(fixturesFile, JSON.stringify(fixtures));

const server = spawn(bin, ["serve"], { env: serverEnv, stdio: ["ignore", "inherit", "inherit"] });
const exited = new Promise((resolve) => server.once("exit", (code, signal) => resolve(signal ?? code)));
let stopping = false;

async function stop() {
  if (stopping) return;
  stopping = true;
  server.kill("SIGTERM"); // graceful: serve stops its embedded PostgreSQL on the way out
  const timer = setTimeout(() => server.kill("SIGKILL"), 30_000);
  await exited;
  clearTimeout(timer);
  rmSync(work, { recursive: true, force: true });
}

let status = 1;
try {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const state = await Promise.race([exited.then((how) => ({ how })), ready()]);
    if (state?.how !== undefined) throw new Error(`voiced serve exited during start-up (${state.how})`);
    if (state === true) break;
    if (Date.now() > deadline) throw new Error("voiced serve was not ready within 180 s");
    await new Promise((r) => setTimeout(r, 200));
  }

  const files = readdirSync(here)
    .filter((f) => f.endsWith(".test.mjs"))
    .sort()
    .map((f) => join(here, f));
  const only = process.argv.slice(2);
  const testEnv = { ...process.env, VOICED_SDK_FIXTURES: fixturesFile };
  delete testEnv.VOICED_API_KEY;
  delete testEnv.VOICED_BASE_URL;
  const runner = spawn(
    process.execPath,
    // A test that hangs fails after 3 minutes instead of holding CI up.
    ["--test", "--test-concurrency=2", "--test-timeout=180000", ...(only.length ? only : files)],
    { env: testEnv, stdio: "inherit" },
  );
  status = await new Promise((resolve) => runner.once("exit", (code) => resolve(code ?? 1)));
} catch (err) {
  console.error(err);
} finally {
  await stop();
}
process.exit(status);

async function ready() {
  try {
    const res = await fetch(`${baseURL}/readyz`);
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}
