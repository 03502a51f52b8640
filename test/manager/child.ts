/**
 * Bundles a manager child entry (`test/manager/children/<name>.ts`) the way the storage
 * tests bundle theirs, so it runs the real library code under plain node.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "rolldown";

import type { BundledChild } from "../storage/child-bundle.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "..", "..");

/** Bundles `test/manager/children/<name>.ts` into the ignored `tmp/` directory. */
export async function bundleManagerChild(name: string): Promise<BundledChild> {
  const outDir = path.join(repoRoot, "tmp", "manager-tests");
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `${name}-${process.pid}-${Date.now().toString(36)}.mjs`);
  await build({
    input: path.join(here, "children", `${name}.ts`),
    output: { file, format: "esm" },
    platform: "node",
    external: ["#binding"],
    logLevel: "silent",
    write: true,
  });
  return { file, remove: () => fs.rmSync(file, { force: true }) };
}
