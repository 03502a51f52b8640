/**
 * Bundles a manager child entry (`test/manager/children/<name>.ts`) the way the storage
 * tests bundle theirs, so it runs the real library code under plain node.
 *
 * Unlike the storage bundles, the addon is pinned: a copy of the compiled addon taken at
 * bundle time is what every child loads. The crash test starts hundreds of children, and a
 * concurrent `node-gyp rebuild` elsewhere in the tree briefly removes `build/Release`; a
 * child started in that window would fail for a reason that has nothing to do with the test.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { bundleChild, type BundledChild } from "../storage/child-bundle.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "..", "..");
const ADDON = path.join(repoRoot, "build", "Release", "gjc_session_store.node");

/** Copies the compiled addon, waiting out a rebuild in progress (up to two minutes). */
async function pinAddon(outDir: string, stem: string): Promise<string> {
  const copy = path.join(outDir, `${stem}.node`);
  for (let waited = 0; ; waited += 500) {
    try {
      fs.copyFileSync(ADDON, copy);
      return copy;
    } catch (error) {
      if (waited >= 120_000) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** Bundles `<childrenDir>/<name>.ts` (default `test/manager/children`) into the ignored `tmp/` directory, with the addon pinned. */
export async function bundleManagerChild(name: string, childrenDir: string = path.join(here, "children")): Promise<BundledChild> {
  const outDir = path.join(repoRoot, "tmp", "manager-tests");
  fs.mkdirSync(outDir, { recursive: true });
  const stem = `${name}-${process.pid}-${Date.now().toString(36)}`;
  const shim = path.join(outDir, `${stem}.binding.cjs`);
  const addon = await pinAddon(outDir, stem);
  const unpin = (): void => {
    for (const made of [shim, addon]) fs.rmSync(made, { force: true });
  };
  try {
    fs.writeFileSync(shim, `module.exports = require(${JSON.stringify(addon)});\n`);
    const child = await bundleChild(name, childrenDir, { outDir, binding: shim });
    return {
      file: child.file,
      remove() {
        child.remove();
        unpin();
      },
    };
  } catch (error) {
    unpin();
    throw error;
  }
}
