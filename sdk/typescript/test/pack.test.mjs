import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { fixtures } from "./fixtures.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

test("npm pack makes a package that installs in a scratch project, type-checks and works", () => {
  const scratch = join(fixtures.work, "scratch");
  mkdirSync(scratch);
  const npm = (args, cwd) =>
    execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  // dist/ is built by the time the tests run (scripts/sdk-ts-test.sh, or `npm run build`).
  const packed = JSON.parse(npm(["pack", "--json", "--ignore-scripts", "--pack-destination", scratch], root));
  const files = packed[0].files.map((f) => f.path).sort();
  assert.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts"), files.join(" "));
  assert.ok(files.includes("LICENSE") && files.includes("README.md"));
  assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("test/")), files.join(" "));

  writeFileSync(
    join(scratch, "package.json"),
    JSON.stringify({ name: "scratch", private: true, type: "module" }),
  );
  // No dependencies: installing the tarball needs no registry.
  npm(["install", "--offline", "--no-audit", "--no-fund", join(scratch, packed[0].filename)], scratch);
  assert.deepEqual(
    readdirSync(join(scratch, "node_modules")).filter((f) => !f.startsWith(".")),
    ["@voiced"],
  );

  writeFileSync(
    join(scratch, "list.mjs"),
    `import { Voiced } from "@voiced/sdk";
const voiced = new Voiced(); // VOICED_API_KEY and VOICED_BASE_URL
const { data } = await voiced.voices.list();
console.log(JSON.stringify(data.map((v) => v.name)));
`,
  );
  const out = execFileSync(process.execPath, ["list.mjs"], {
    cwd: scratch,
    encoding: "utf8",
    env: { ...process.env, VOICED_API_KEY: fixtures.keys.main, VOICED_BASE_URL: fixtures.baseURL },
  });
  assert.ok(JSON.parse(out).includes(fixtures.voice), out);

  // The declarations resolve from the package and let a strict TypeScript caller branch on codes.
  writeFileSync(
    join(scratch, "typed.ts"),
    `import { Voiced, VoicedError, type Generation, type VoicedErrorCode } from "@voiced/sdk";
const voiced = new Voiced({ apiKey: "vk_x", baseURL: "http://127.0.0.1:1", maxRetries: 0 });
export async function status(id: string): Promise<Generation["status"] | VoicedErrorCode> {
  try {
    return (await voiced.generations.get(id)).status;
  } catch (err) {
    if (err instanceof VoicedError && err.code === "insufficient_scope") return err.requiredScope ?? err.code;
    if (err instanceof VoicedError) return err.code;
    throw err;
  }
}
`,
  );
  writeFileSync(
    join(scratch, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: "nodenext",
        moduleResolution: "nodenext",
        target: "es2022",
        lib: ["es2022", "dom"],
        types: [],
      },
      files: ["typed.ts"],
    }),
  );
  const tsc = spawnSync(join(root, "node_modules", ".bin", "tsc"), ["-p", "."], {
    cwd: scratch,
    encoding: "utf8",
  });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
});
