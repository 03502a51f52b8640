// The ancestor rule of SecureDir.openRoot: every canonical directory above a managed root is
// owned by root or the effective user and not writable by group or others unless sticky,
// checked by descriptor on the chain that is opened. Also runs as uid 65534
// (test/fs/unprivileged.test.ts), where the foreign-owner cases skip themselves.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError } from "../../src/index.js";
import { codeOf } from "../helpers/errors.js";
import { buildTools, hasCommand, isRoot, skipBecause } from "../helpers/processes.js";
import { RACE_TIMEOUT_MS, raceUntilProven } from "../helpers/swap-attack.js";
import { makeTempDir } from "../helpers/temp.js";

const RACE_MS = Number(process.env.GJC_RACE_MS ?? 1_500);

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => {
  tmp = makeTempDir();
});
afterEach(() => {
  tmp.remove();
});

function refusal(fn: () => unknown): SecureFsError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SecureFsError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("openRoot: ancestors another user could replace are refused", () => {
  it("/tmp (root-owned, world-writable, sticky) is a safe ancestor", () => {
    // /tmp itself, not TMPDIR: the unprivileged run points TMPDIR at a directory of its own.
    expect(fs.statSync("/tmp").mode & 0o7777).toBe(0o1777);
    const own = fs.mkdtempSync("/tmp/gjc-sticky-");
    try {
      const dir = SecureDir.openRoot(path.join(own, "agent"), { create: true });
      expect(dir.verify().accessAcl).toMatch(/absent|unsupported/);
      dir.close();
    } finally {
      fs.rmSync(own, { recursive: true, force: true });
    }
  });

  it("a group-writable ancestor without the sticky bit is insecure_ancestor, named, and nothing is created", () => {
    const shared = path.join(tmp.path, "shared");
    fs.mkdirSync(path.join(shared, "deeper"), { recursive: true });
    fs.chmodSync(shared, 0o770);
    for (const options of [{}, { create: true }, { repair: true }]) {
      const error = refusal(() => SecureDir.openRoot(path.join(shared, "deeper", "agent"), options));
      expect(error.code).toBe("insecure_ancestor");
      expect(error.path).toBe(shared);
    }
    expect(fs.readdirSync(path.join(shared, "deeper"))).toEqual([]);
    // The same mode with the sticky bit is safe: others cannot rename what is ours.
    fs.chmodSync(shared, 0o1777);
    SecureDir.openRoot(path.join(shared, "deeper", "agent"), { create: true }).close();
  });

  it("a world-writable parent of the root itself is refused before the root is touched", () => {
    const open = path.join(tmp.path, "open");
    fs.mkdirSync(open, { mode: 0o700 });
    SecureDir.openRoot(path.join(open, "agent"), { create: true }).close();
    fs.chmodSync(open, 0o777);
    expect(codeOf(() => SecureDir.openRoot(path.join(open, "agent")))).toBe("insecure_ancestor");
    expect(codeOf(() => SecureDir.openRoot(path.join(open, "agent"), { repair: true }))).toBe("insecure_ancestor");
  });

  it("an ancestor owned by another user is refused even when nobody else can write it (root only)", (ctx) => {
    if (!isRoot()) skipBecause(ctx, "chown to another uid needs root");
    const theirs = path.join(tmp.path, "theirs");
    fs.mkdirSync(theirs, { mode: 0o755 });
    fs.mkdirSync(path.join(theirs, "agent"), { mode: 0o700 });
    fs.chownSync(theirs, 65534, 65534);
    const error = refusal(() => SecureDir.openRoot(path.join(theirs, "agent")));
    expect(error.code).toBe("insecure_ancestor");
    expect(error.path).toBe(theirs);
  });

  it("a link among the ancestors is canonicalised once, and the canonical chain is judged", () => {
    const real = path.join(tmp.path, "real");
    fs.mkdirSync(real, { mode: 0o700 });
    fs.symlinkSync(real, path.join(tmp.path, "alias"));
    const dir = SecureDir.openRoot(path.join(tmp.path, "alias", "agent"), { create: true });
    expect(dir.stat().ino).toBe(fs.statSync(path.join(real, "agent")).ino.toString());
    dir.close();
    // The link itself is safe (in a 0700 dir) but what it leads to is not.
    fs.chmodSync(real, 0o777);
    expect(refusal(() => SecureDir.openRoot(path.join(tmp.path, "alias", "agent"))).path).toBe(real);
  });

  it("the root itself as a link is refused, whatever its ancestors", () => {
    fs.mkdirSync(path.join(tmp.path, "target"), { mode: 0o700 });
    fs.symlinkSync(path.join(tmp.path, "target"), path.join(tmp.path, "agent"));
    expect(codeOf(() => SecureDir.openRoot(path.join(tmp.path, "agent")))).toBe("symlink_refused");
    expect(codeOf(() => SecureDir.openRoot(path.join(tmp.path, "agent"), { create: true }))).toBe("symlink_refused");
  });
});

describe("openRoot: an ancestor swapped for a link while the chain is walked", () => {
  it(
    "opens only the inside directory or refuses with a typed code (swap loop)",
    async () => {
      // `a` is an ancestor; `l` links to an outside tree with the same shape. realpath may see
      // either; the descriptor walk then opens exactly the chain realpath named, or refuses when
      // that chain changed under it. Here the swapper is this user (the parent is 0700), so an
      // outside open is the documented canonicalisation; what must never happen is an open of
      // a chain that is neither, or an untyped failure.
      const tools = buildTools();
      const parent = path.join(tmp.path, "p");
      fs.mkdirSync(path.join(parent, "a", "agent"), { recursive: true, mode: 0o700 });
      const outside = path.join(tmp.path, "outside");
      fs.mkdirSync(path.join(outside, "agent"), { recursive: true, mode: 0o700 });
      fs.symlinkSync(outside, path.join(parent, "l"));
      for (const d of [parent, path.join(parent, "a"), path.join(parent, "a", "agent"), outside, path.join(outside, "agent")]) fs.chmodSync(d, 0o700);
      const inside = fs.statSync(path.join(parent, "a", "agent")).ino.toString();
      const other = fs.statSync(path.join(outside, "agent")).ino.toString();
      const seen = new Map<string, number>();
      const missing = (): string | undefined =>
        !seen.has("inside") ? "an open of the inside directory" : seen.size === 1 ? "an open the swap refused or redirected" : undefined;
      await raceUntilProven({ attacker: [tools.swapRace, parent, "a", "l"], minMs: RACE_MS, missing }, () => {
        let outcome: string;
        try {
          const dir = SecureDir.openRoot(path.join(parent, "a", "agent"));
          const ino = dir.stat().ino;
          dir.close();
          outcome = ino === inside ? "inside" : ino === other ? "outside-canonical" : `unexpected:${ino}`;
        } catch (error) {
          if (!(error instanceof SecureFsError)) throw error;
          outcome = error.code;
        }
        seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
      });
      const allowed = new Set(["inside", "outside-canonical", "symlink_refused", "not_directory", "not_found"]);
      expect([...seen.keys()].filter((k) => !allowed.has(k))).toEqual([]);
      expect(seen.get("inside") ?? 0).toBeGreaterThan(0);
    },
    RACE_TIMEOUT_MS,
  );

  it(
    "a parent owned by another user who swaps the agent dir: every open is refused (root only)",
    async (ctx) => {
      if (!isRoot()) skipBecause(ctx, "chown to another uid needs root");
      const tools = buildTools();
      const theirs = path.join(tmp.path, "theirs");
      fs.mkdirSync(path.join(theirs, "agent"), { recursive: true, mode: 0o700 });
      const outside = path.join(tmp.path, "outside");
      fs.mkdirSync(outside, { mode: 0o700 });
      fs.writeFileSync(path.join(outside, "marker"), "outside", { mode: 0o600 });
      fs.symlinkSync(outside, path.join(theirs, "swap"));
      fs.chmodSync(theirs, 0o755);
      fs.chownSync(theirs, 65534, 65534);
      // The attacker must reach their own directory (else it makes no swap at all).
      fs.chmodSync(tmp.path, 0o711);
      // The attacker runs as the parent's owner where setpriv exists.
      const swap = [tools.swapRace, theirs, "agent", "swap"];
      const attacker = hasCommand("setpriv") ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ...swap] : swap;
      const seen = new Map<string, number>();
      const missing = (): string | undefined => (seen.has("insecure_ancestor") ? undefined : "a refusal naming the insecure ancestor");
      await raceUntilProven({ attacker, minMs: RACE_MS, missing }, () => {
        const code = codeOf(() => SecureDir.openRoot(path.join(theirs, "agent"), { create: true }).close()) ?? "opened";
        seen.set(code, (seen.get(code) ?? 0) + 1);
      });
      expect([...seen.keys()]).toEqual(["insecure_ancestor"]);
      expect(fs.readdirSync(outside)).toEqual(["marker"]);
    },
    RACE_TIMEOUT_MS,
  );
});
