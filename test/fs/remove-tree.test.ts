// SecureDir.removeTreeAsync: a staging tree removed by descriptor. Links in it (to files,
// to directories, dangling), FIFOs and nested directories go; what a link points to stays;
// a tree whose root is a link, or which holds a directory we do not own, is refused typed;
// budgets hold; and with a directory of the tree swapped for a link to an outside tree in a
// loop (renameat2 RENAME_EXCHANGE) while it is removed, nothing outside is ever deleted.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError } from "../../src/index.js";
import { buildTools, isRoot, type Tools } from "../helpers/processes.js";
import { RACE_TIMEOUT_MS, raceUntilProven } from "../helpers/swap-attack.js";
import { makeTempDir } from "../helpers/temp.js";

/** How long the swap race runs; GJC_RACE_MS for a long run. */
const RACE_MS = Number(process.env.GJC_RACE_MS ?? 2_000);
// Exchanges the race must see its attacker make.
const MIN_SWAPS = 1_000;
const LIMITS = { maxDepth: 8, maxEntries: 1_000 };

let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let store: SecureDir;
let outside: string;

beforeAll(() => {
  tools = buildTools();
});
beforeEach(() => {
  tmp = makeTempDir();
  store = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
  outside = path.join(tmp.path, "outside");
  fs.mkdirSync(path.join(outside, "deep"), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(outside, "marker"), "outside marker", { mode: 0o600 });
  fs.writeFileSync(path.join(outside, "deep", "marker"), "deep marker", { mode: 0o600 });
});
afterEach(() => {
  store.close();
  tmp.remove();
});

/** Inode, mode, times and bytes of every entry below `root`: any deletion or write shows. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (p: string, rel: string) => {
    const st = fs.lstatSync(p);
    out[rel] = `${st.ino}:${st.mode}:${st.nlink}:${st.mtimeMs}:${st.ctimeMs}:${st.isFile() ? fs.readFileSync(p, "hex") : ""}`;
    if (st.isDirectory()) for (const name of fs.readdirSync(p).sort()) walk(path.join(p, name), `${rel}/${name}`);
  };
  walk(root, "");
  return out;
}

/**
 * A staging tree `name` in the store: files, a nested directory, links out. Built under
 * another name and renamed into place, so a swap racing the planting cannot lead it outside.
 */
function plantTree(name: string): string {
  const root = path.join(store.path, name);
  const build = path.join(store.path, `.build-${name}`);
  plantAt(build);
  fs.renameSync(build, root);
  return root;
}

function plantAt(root: string): void {
  fs.mkdirSync(path.join(root, "d", "sub"), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(root, "d", "f"), "staged", { mode: 0o600 });
  fs.writeFileSync(path.join(root, "d", "sub", "g"), "staged", { mode: 0o600 });
  fs.symlinkSync(outside, path.join(root, "alt"));
  fs.symlinkSync(path.join(outside, "marker"), path.join(root, "d", "file-link"));
  fs.symlinkSync(path.join(tmp.path, "nothing-here"), path.join(root, "d", "dangling"));
}

async function codeOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
    return "ok";
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    return error.code;
  }
}

describe("removeTreeAsync", () => {
  it("removes the whole tree, links as links; what they point to stays", async () => {
    const root = plantTree("stage");
    execFileSync("mkfifo", [path.join(root, "d", "pipe")]);
    const before = snapshot(outside);
    await store.removeTreeAsync("stage", LIMITS);
    expect(fs.readdirSync(store.path)).toEqual([]);
    expect(snapshot(outside)).toEqual(before);
  });

  it("refuses a root that is a link, a file or missing, and touches nothing", async () => {
    fs.symlinkSync(outside, path.join(store.path, "link"));
    fs.writeFileSync(path.join(store.path, "file"), "x", { mode: 0o600 });
    const before = snapshot(outside);
    expect(await codeOf(store.removeTreeAsync("link", LIMITS))).toBe("symlink_refused");
    expect(await codeOf(store.removeTreeAsync("file", LIMITS))).toBe("not_directory");
    expect(await codeOf(store.removeTreeAsync("missing", LIMITS))).toBe("not_found");
    expect(await codeOf(store.removeTreeAsync("../x", LIMITS))).toBe("invalid_name");
    expect(await codeOf(store.removeTreeAsync("x", { maxDepth: -1, maxEntries: 1 }))).toBe("invalid_argument");
    // The addon checks the limits itself: a depth past 32 bits, a fraction, a missing limit.
    expect(await codeOf(store.removeTreeAsync("x", { maxDepth: 2 ** 32, maxEntries: 1 }))).toBe("invalid_argument");
    expect(await codeOf(store.removeTreeAsync("x", { maxDepth: 1, maxEntries: 1.5 }))).toBe("invalid_argument");
    expect(await codeOf(store.removeTreeAsync("x", { maxDepth: 1 } as never))).toBe("invalid_argument");
    expect(snapshot(outside)).toEqual(before);
    expect(fs.readdirSync(store.path).sort()).toEqual(["file", "link"]);
  });

  it("refuses to enter a directory that is not owner-only, leaving what is in it", async () => {
    const root = plantTree("stage");
    fs.chmodSync(path.join(root, "d", "sub"), 0o755);
    expect(await codeOf(store.removeTreeAsync("stage", LIMITS))).toBe("mode_mismatch");
    expect(fs.readFileSync(path.join(root, "d", "sub", "g"), "utf8")).toBe("staged");
  });

  it.runIf(isRoot())("refuses a directory another user owns (uid 65534)", async () => {
    const root = plantTree("stage");
    fs.chownSync(path.join(root, "d", "sub"), 65534, 65534);
    expect(await codeOf(store.removeTreeAsync("stage", LIMITS))).toBe("owner_mismatch");
    expect(fs.existsSync(path.join(root, "d", "sub", "g"))).toBe(true);
  });

  it("depth and entry budgets -> too_large", async () => {
    plantTree("stage");
    expect(await codeOf(store.removeTreeAsync("stage", { maxDepth: 1, maxEntries: 100 }))).toBe("too_large");
    plantTree("stage2");
    expect(await codeOf(store.removeTreeAsync("stage2", { maxDepth: 8, maxEntries: 3 }))).toBe("too_large");
    await store.removeTreeAsync("stage", LIMITS);
    await store.removeTreeAsync("stage2", LIMITS);
    expect(fs.readdirSync(store.path)).toEqual([]);
  });

  it(
    "a directory of the tree swapped for a link to an outside tree while it is removed: 0 escapes, every failure typed",
    async () => {
      const before = snapshot(outside);
      const tally = new Map<string, number>();
      const race = { attacker: [tools.swapRace, store.path, "stage/d", "stage/alt"], attackerTail: ["keep-going"], minMs: RACE_MS, minSwaps: MIN_SWAPS };
      const missing = (): string | undefined => (tally.has("ok") ? undefined : "a removal that succeeded");
      const { swaps } = await raceUntilProven({ ...race, missing }, async () => {
        if (!fs.existsSync(path.join(store.path, "stage"))) plantTree("stage");
        const code = await codeOf(store.removeTreeAsync("stage", LIMITS));
        tally.set(code, (tally.get(code) ?? 0) + 1);
      });
      console.log(`[race removeTree] ${swaps} swaps: ${JSON.stringify(Object.fromEntries(tally))}`);
      expect(swaps).toBeGreaterThanOrEqual(MIN_SWAPS);
      expect(tally.get("ok") ?? 0).toBeGreaterThan(0);
      // A failure is a removal that found a name changing under it, never anything untyped.
      for (const code of tally.keys()) expect(["ok", "identity_mismatch", "symlink_refused", "not_directory"]).toContain(code);
      expect(snapshot(outside)).toEqual(before);
    },
    RACE_TIMEOUT_MS,
  );
});
