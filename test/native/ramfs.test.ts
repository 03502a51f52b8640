// A real filesystem without POSIX ACL support: ramfs, mounted in a private mount namespace
// (as root: `unshare -m`; otherwise `unshare -Urm`). fgetxattr answers ENOTSUP there for
// real, so the gate's "unsupported" evidence is exercised without any injection.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { BINDING_LOADER, EVIDENCE_DECODER, hasCommand, isRoot, run, skipBecause } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
beforeAll(() => {
  tmp = makeTempDir();
});
afterAll(() => tmp.remove());

// Runs inside the namespace with the ramfs mounted at argv[1]; prints a JSON report.
const CHILD = `
const fs = require("node:fs");
const b = require(${JSON.stringify(BINDING_LOADER)});
${EVIDENCE_DECODER}
const mnt = process.argv[1];
const codeOr = (h, then) => (h.failed ? h.code : then(h));
const root = b.openRoot(mnt);
if (root.failed) { process.stdout.write(JSON.stringify({ root })); process.exit(0); }
const out = { root: verify(root) };
const dir = b.openDir(root, "d", { create: true });
out.createdDir = codeOr(dir, (h) => verify(h));
const file = b.openFile(root, "f", { write: true, create: "exclusive" });
out.createdFile = codeOr(file, (h) => verify(h));
out.atomic = b.writeFileAtomic(root, "state", "x", { noReplace: true }) ?? "ok";
fs.writeFileSync(mnt + "/wide", "x", { mode: 0o644 });
fs.chmodSync(mnt + "/wide", 0o644);
out.wideFile = codeOr(b.openFile(root, "wide"), () => "opened");
fs.mkdirSync(mnt + "/widedir", { mode: 0o755 });
fs.chmodSync(mnt + "/widedir", 0o755);
out.wideDir = codeOr(b.openDir(root, "widedir"), () => "opened");
fs.symlinkSync(mnt + "/f", mnt + "/link");
out.link = codeOr(b.openFile(root, "link"), () => "opened");
if (process.env.GJC_CAN_CHOWN === "1") {
  fs.writeFileSync(mnt + "/foreign", "x", { mode: 0o600 });
  fs.chownSync(mnt + "/foreign", 65534, 65534);
  out.foreign = codeOr(b.openFile(root, "foreign"), () => "opened");
}
process.stdout.write(JSON.stringify(out));
`;

describe("real ENOTSUP from ramfs", () => {
  it("passes as 'unsupported' only when type, owner and mode hold", (ctx) => {
    if (!hasCommand("unshare")) skipBecause(ctx, "unshare (util-linux) is not installed");
    const mnt = path.join(tmp.path, "mnt");
    fs.mkdirSync(mnt, { mode: 0o700 });
    const nsArgs = isRoot() ? ["-m", "--propagation", "private"] : ["-Urm", "--propagation", "private"];
    const script = 'mount -t ramfs -o mode=0700 ramfs "$1" && exec "$2" -e "$3" "$1"';
    const result = run("unshare", [...nsArgs, "sh", "-c", script, "sh", mnt, process.execPath, CHILD], {
      env: { ...process.env, GJC_CAN_CHOWN: isRoot() ? "1" : "0" },
    });
    if (result.status !== 0 && /unshare|mount/.test(result.stderr) && result.stdout === "") {
      skipBecause(ctx, `mount namespaces are unavailable here: ${result.stderr.trim()}`);
    }
    expect(result.status, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout) as Record<string, unknown>;
    if (!isRoot()) {
      // In a user namespace that maps only this uid, / and /tmp (the real root's) show the
      // overflow uid: neither root nor us, so the ancestor rule refuses the chain, as ssh's
      // StrictModes would. As root (the main run) the namespace keeps every owner.
      expect(out.root).toMatchObject({ failed: true, code: "insecure_ancestor" });
      skipBecause(ctx, "a single-uid user namespace shows / as the overflow uid: insecure_ancestor (checked above)");
    }
    const dirEvidence = { accessAcl: "unsupported", defaultAcl: "unsupported" };
    expect(out.root).toEqual(dirEvidence);
    expect(out.createdDir).toEqual(dirEvidence);
    expect(out.createdFile).toEqual({ accessAcl: "unsupported", defaultAcl: "not_applicable" });
    expect(out.atomic).toBe("ok");
    expect(out.wideFile).toBe("mode_mismatch");
    expect(out.wideDir).toBe("mode_mismatch");
    expect(out.link).toBe("symlink_refused");
    if (isRoot()) expect(out.foreign).toBe("owner_mismatch");
    // The mount lived only in the child's namespace.
    expect(fs.readdirSync(mnt)).toEqual([]);
  });
});
