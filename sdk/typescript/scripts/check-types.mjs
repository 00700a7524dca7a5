// Fails when src/generated/openapi.ts is not what openapi-typescript makes of the committed
// openapi/openapi.json: regenerates into a temporary file and compares the bytes.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const document = join(root, "..", "..", "openapi", "openapi.json");
const committed = join(root, "src", "generated", "openapi.ts");
const dir = mkdtempSync(join(tmpdir(), "voiced-sdk-types-"));
const fresh = join(dir, "openapi.ts");
try {
  execFileSync(join(root, "node_modules", ".bin", "openapi-typescript"), [document, "--output", fresh], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (!readFileSync(fresh).equals(readFileSync(committed))) {
    console.error(
      "src/generated/openapi.ts differs from what openapi/openapi.json generates; run `npm run gen:types` and commit it.",
    );
    process.exitCode = 1;
  } else {
    console.log("check:types: src/generated/openapi.ts matches openapi/openapi.json");
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
