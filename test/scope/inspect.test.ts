import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { inspectScopeDirectories, resolveManagedScope } from "../../src/index.js";
import { BINDING_FILE_NAME, scopeDigest } from "../../src/scope/index.js";
import { treeState, useSandboxes } from "./helpers.js";

const sandbox = useSandboxes();

describe("inspectScopeDirectories", () => {
  it("reports each v2 directory's state without writing", () => {
    const box = sandbox();
    const made = [];
    for (const name of ["a", "b", "c", "d", "e"]) {
      const cwd = path.join(box.root, name);
      fs.mkdirSync(cwd);
      const r = resolveManagedScope({ cwd, agentDir: box.agentDir, mode: "write" });
      if (r.kind !== "resolved") throw new Error(r.code);
      made.push(r.scope);
    }
    const [valid, missing, invalid, moved, unsafe] = made as [(typeof made)[0], (typeof made)[0], (typeof made)[0], (typeof made)[0], (typeof made)[0]];
    fs.unlinkSync(path.join(missing.directoryPath, BINDING_FILE_NAME));
    fs.appendFileSync(path.join(invalid.directoryPath, BINDING_FILE_NAME), " ");
    // A binding copied into another scope's directory: canonical, but not this name's identity.
    fs.copyFileSync(path.join(valid.directoryPath, BINDING_FILE_NAME), path.join(moved.directoryPath, BINDING_FILE_NAME));
    fs.chmodSync(unsafe.directoryPath, 0o755);
    fs.mkdirSync(path.join(valid.sessionsRoot, "--legacy--"));
    const before = treeState(box.agentDir);
    const reports = inspectScopeDirectories(valid.sessionsRoot);
    expect(treeState(box.agentDir)).toEqual(before);
    const byPath = new Map(reports.map((r) => [r.path, r]));
    expect(reports).toHaveLength(5);
    expect(byPath.get(valid.directoryPath)).toMatchObject({ state: "valid", binding: { canonicalPath: valid.canonicalCwd } });
    expect(byPath.get(missing.directoryPath)?.state).toBe("binding_missing");
    expect(byPath.get(invalid.directoryPath)).toMatchObject({ state: "binding_invalid", cause: "not_canonical" });
    expect(byPath.get(moved.directoryPath)?.state).toBe("digest_mismatch");
    expect(byPath.get(unsafe.directoryPath)).toMatchObject({ state: "unsafe_directory", cause: "mode_mismatch" });
    expect(valid.identityDigest).toBe(scopeDigest("posix", valid.canonicalCwd));
    expect(inspectScopeDirectories(path.join(box.root, "nowhere"))).toEqual([]);
  });
});
