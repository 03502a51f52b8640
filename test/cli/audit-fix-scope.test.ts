// `audit --fix` repairs only where it belongs: a home-like tree, the current directory, the home directory and `/` are
// refused with `not_agent_dir` and left exactly as they were (modes and ACLs); in a real agent directory only the
// store's layout is repaired, each old mode is printed and written to an owner-only undo script first, and running
// that script puts every mode back.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { AuditError, AuditReportSchema, auditAgentDir, SecureDir, SecureFsError } from "../../src/index.js";
import { ACL_TAG, aclHex, trySetAcl, type AclEntry } from "../helpers/acl.js";
import { buildTools, hasCommand, isRoot, run, skipBecause, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { at, BINDING_FILE_NAME, makeAgentDir, plant } from "./fixtures.js";
import { BUILD_HOOK_TIMEOUT_MS, builtCli, runCli } from "./helpers.js";

const UNPRIVILEGED = 65534;
let base: { path: string; remove(): void };
let tools: Tools;
let aclCapable = false;
let counter = 0;

function fresh(name: string): string {
  counter += 1;
  const dir = path.join(base.path, `${name}-${counter}`);
  fs.mkdirSync(dir);
  return dir;
}

/** Whether the owner-only open of `name` in `dir` is refused for a stored ACL. */
function hasAcl(dir: string, name: string, kind: "file" | "directory"): boolean {
  const parent = SecureDir.openRoot(dir, { owned: true });
  try {
    (kind === "file" ? parent.openFile(name) : parent.openDir(name)).close();
    return false;
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "acl_present") return true;
    throw error;
  } finally {
    parent.close();
  }
}

/** Every object below `root` (and `root`) with its mode, owner, and for the ACL-bearing ones whether the ACL is still there. */
function snapshot(root: string, withAcl: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    const full = rel === "." ? root : path.join(root, rel);
    const st = fs.lstatSync(full);
    out[rel] = `${(st.mode & 0o7777).toString(8)} ${st.uid}`;
    if (withAcl.includes(rel)) out[rel] += ` acl=${hasAcl(path.dirname(full), path.basename(full), st.isDirectory() ? "directory" : "file")}`;
    if (st.isDirectory()) for (const name of fs.readdirSync(full).sort()) walk(rel === "." ? name : `${rel}/${name}`);
  };
  walk(".");
  return out;
}

/** A home directory as people have them: shell start-up files, keys, documents, 755/644, and ACLs on the keys. */
function homeLike(extra: (dir: string) => void = () => {}): { dir: string; acl: string[] } {
  const dir = fresh("home");
  fs.writeFileSync(path.join(dir, ".bashrc"), "alias ll='ls -l'\n", { mode: 0o644 });
  fs.writeFileSync(path.join(dir, ".profile"), "umask 022\n", { mode: 0o644 });
  fs.mkdirSync(path.join(dir, ".ssh"), { mode: 0o700 });
  fs.writeFileSync(path.join(dir, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n", { mode: 0o600 });
  fs.writeFileSync(path.join(dir, ".ssh", "authorized_keys"), "ssh-ed25519 AAAA user@host\n", { mode: 0o644 });
  fs.mkdirSync(path.join(dir, "Documents", "taxes"), { recursive: true, mode: 0o755 });
  fs.writeFileSync(path.join(dir, "Documents", "taxes", "2025.pdf"), "%PDF-1.7\n", { mode: 0o644 });
  extra(dir);
  for (const [rel, mode] of [
    [".", 0o755],
    ["Documents", 0o755],
    ["Documents/taxes", 0o755],
    [".bashrc", 0o644],
    [".ssh/authorized_keys", 0o644],
  ] as const) {
    fs.chmodSync(path.join(dir, rel), mode);
  }
  const acl: string[] = [];
  if (aclCapable) {
    // Another user may read the key and enter .ssh: a fix would strip both ACLs.
    expect(trySetAcl(tools.setXattr, path.join(dir, ".ssh", "id_ed25519"))).toBe(true);
    expect(trySetAcl(tools.setXattr, path.join(dir, ".ssh"), 7)).toBe(true);
    acl.push(".ssh/id_ed25519", ".ssh");
  }
  return { dir, acl };
}

beforeAll(() => {
  builtCli();
  base = makeTempDir("gjc-audit-fix-scope-");
  tools = buildTools();
  fs.writeFileSync(path.join(base.path, "acl-probe"), "");
  aclCapable = trySetAcl(tools.setXattr, path.join(base.path, "acl-probe"));
}, BUILD_HOOK_TIMEOUT_MS);

afterAll(() => base.remove());

describe("audit --fix refuses what is not an agent directory", () => {
  it("a home-like tree: not_agent_dir naming what it found, exit 2, every mode and ACL as it was", () => {
    const { dir, acl } = homeLike();
    const before = snapshot(dir, acl);
    if (aclCapable) expect(before[".ssh/id_ed25519"]).toMatch(/acl=true$/);
    const result = runCli(["--agent-dir", dir, "audit", "--fix"]);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      `gjc-session: not_agent_dir: refusing to repair ${dir}: it looks like a home directory (found .bashrc, .profile, .ssh, Documents); --fix acts only on an agent directory (sessions/, history.db)\n`,
    );
    expect(snapshot(dir, acl)).toEqual(before);
    // The API refuses the same way, before it changes anything.
    expect(() => auditAgentDir(dir, { fix: true })).toThrow(AuditError);
    expect(() => auditAgentDir(dir, { fix: true })).toThrow(expect.objectContaining({ code: "not_agent_dir" }));
    expect(snapshot(dir, acl)).toEqual(before);
  });

  it("a home-like tree that also holds sessions/ and history.db is still refused", () => {
    const { dir, acl } = homeLike((home) => {
      fs.mkdirSync(path.join(home, "sessions", "v2-notreally"), { recursive: true, mode: 0o755 });
      fs.writeFileSync(path.join(home, "history.db"), "", { mode: 0o644 });
    });
    const before = snapshot(dir, acl);
    const result = runCli(["--agent-dir", dir, "audit", "--fix", "--json"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^gjc-session: not_agent_dir: refusing to repair .*: it looks like a home directory \(found \.bashrc/);
    expect(snapshot(dir, acl)).toEqual(before);
  });

  it("`.`: the current directory, a project, is named as such and left alone", () => {
    const dir = fresh("project");
    fs.mkdirSync(path.join(dir, "src"), { mode: 0o755 });
    fs.writeFileSync(path.join(dir, "package.json"), "{}\n", { mode: 0o644 });
    fs.writeFileSync(path.join(dir, "src", "index.ts"), "export {};\n", { mode: 0o644 });
    fs.chmodSync(dir, 0o755);
    const before = snapshot(dir);
    const result = runCli(["--agent-dir", ".", "audit", "--fix"], { cwd: dir });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`not_agent_dir: refusing to repair ${dir}: the current directory is not an agent directory (found package.json, src/)`);
    expect(snapshot(dir)).toEqual(before);
  });

  it("an empty directory holds nothing of the layout", () => {
    const dir = fresh("empty");
    fs.chmodSync(dir, 0o755);
    expect(() => auditAgentDir(dir, { fix: true })).toThrow(
      expect.objectContaining({ code: "not_agent_dir", message: expect.stringContaining("it is empty") }),
    );
    expect(fs.statSync(dir).mode & 0o7777).toBe(0o755);
  });

  it("`~`: the home directory is refused even when it has an agent directory's layout", () => {
    const f = makeAgentDir(fresh("home-agent"));
    fs.chmodSync(at(f, "blobs"), 0o755);
    const result = runCli(["--agent-dir", f.agentDir, "audit", "--fix"], { env: { HOME: f.agentDir } });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(`not_agent_dir: refusing to repair ${f.agentDir}: it is your home directory`);
    expect(fs.statSync(at(f, "blobs")).mode & 0o7777).toBe(0o755);
  });

  it("`/`: the filesystem root is refused (run as an unprivileged uid, so a regression could not change it)", (ctx) => {
    if (isRoot() && !hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
    const wrapper = isRoot() ? ["setpriv", `--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"] : undefined;
    const result = runCli(["--agent-dir", "/", "audit", "--fix"], { wrapper, env: { HOME: "/nonexistent" } });
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      "gjc-session: not_agent_dir: refusing to repair /: it is the filesystem root; --fix acts only on an agent directory (sessions/, history.db)\n",
    );
  });

  it("without --fix the audit still reports on any directory (it changes nothing)", () => {
    const { dir } = homeLike();
    const result = runCli(["--agent-dir", dir, "audit", "--json"]);
    expect(result.status).toBe(1);
    expect(AuditReportSchema.parse(JSON.parse(result.stdout)).objects.map((o) => o.path)).toContain(".");
  });
});

describe("audit --fix in an agent directory", () => {
  it("repairs the layout only, records each old mode first, and the undo script restores them", () => {
    const f = makeAgentDir(fresh("agent"));
    const binding = `${f.scopeRel}/${BINDING_FILE_NAME}`;
    plant(f, "notes/todo.txt", "not the store's\n", 0o644);
    fs.chmodSync(at(f, "notes"), 0o755);
    const loose: [string, number][] = [
      [".", 0o755],
      ["blobs", 0o755],
      [f.sessionRel, 0o644],
      [f.blobRel, 0o400],
    ];
    for (const [rel, mode] of loose) fs.chmodSync(rel === "." ? f.agentDir : at(f, rel), mode);
    if (aclCapable) expect(trySetAcl(tools.setXattr, at(f, binding))).toBe(true);
    const before = snapshot(f.agentDir);

    const result = runCli(["--agent-dir", f.agentDir, "audit", "--fix", "--json"]);
    expect(result.stderr).toBe("");
    const report = AuditReportSchema.parse(JSON.parse(result.stdout));
    const repaired = Object.fromEntries((report.repairs ?? []).filter((r) => r.outcome === "repaired").map((r) => [r.path, r.previousMode]));
    expect(repaired).toEqual({ ".": "0755", blobs: "0755", [f.sessionRel]: "0644", [f.blobRel]: "0400", ...(aclCapable ? { [binding]: "0600" } : {}) });
    if (aclCapable) expect(report.repairs?.find((r) => r.path === binding)?.aclRemoved).toBe(true);
    // Outside the layout: not looked at (neither reported nor refused), unchanged.
    expect([...report.objects.map((o) => o.path), ...(report.repairs ?? []).map((r) => r.path)].filter((p) => p.startsWith("notes"))).toEqual([]);
    expect(fs.statSync(at(f, "notes")).mode & 0o7777).toBe(0o755);
    expect(fs.statSync(at(f, "notes/todo.txt")).mode & 0o7777).toBe(0o644);
    for (const [rel] of loose)
      expect(fs.statSync(rel === "." ? f.agentDir : at(f, rel)).mode & 0o7777, rel).toBe(rel === "." || rel === "blobs" ? 0o700 : 0o600);

    // The undo script: owner-only, in the agent dir, and `sh` puts every mode back.
    const undo = report.undoFile as string;
    expect(path.dirname(undo)).toBe(f.agentDir);
    const st = fs.statSync(undo);
    expect([st.mode & 0o7777, st.uid]).toEqual([0o600, process.geteuid?.()]);
    const script = fs.readFileSync(undo, "utf8");
    expect(script).toContain(`chmod 0755 -- '${f.agentDir}'\n`);
    if (aclCapable) expect(script).toContain(`chmod 0600 -- '${at(f, binding)}'\nsetfacl --set u::rw-,u:0:r--,g::---,m::---,o::--- -- '${at(f, binding)}'\n`);
    const restored = run("sh", [undo]);
    expect(restored.status, restored.stderr).toBe(0);
    const after = snapshot(f.agentDir);
    delete after[path.basename(undo)];
    expect(after).toEqual(before);
  });

  it("an ACL the fix removes is recorded entry by entry (access and default), and the undo script puts it back", (ctx) => {
    if (!aclCapable) skipBecause(ctx, "this file system stores no ACLs");
    if (!hasCommand("getfacl") || !hasCommand("setfacl")) skipBecause(ctx, "getfacl/setfacl (the acl package) are not installed");
    const f = makeAgentDir(fresh("agent"));
    const T = ACL_TAG;
    // A collaborator was granted the agent dir and the blobs (a default ACL, inherited by new blobs), and one session file.
    const grants: [string, string, AclEntry[]][] = [
      [
        ".",
        "system.posix_acl_access",
        [
          [T.USER_OBJ, 7],
          [T.USER, 5, UNPRIVILEGED],
          [T.GROUP_OBJ, 0],
          [T.MASK, 5],
          [T.OTHER, 0],
        ],
      ],
      [
        "blobs",
        "system.posix_acl_default",
        [
          [T.USER_OBJ, 7],
          [T.GROUP_OBJ, 0],
          [T.GROUP, 5, UNPRIVILEGED],
          [T.MASK, 5],
          [T.OTHER, 0],
        ],
      ],
      [
        f.sessionRel,
        "system.posix_acl_access",
        [
          [T.USER_OBJ, 6],
          [T.USER, 4, UNPRIVILEGED],
          [T.GROUP_OBJ, 0],
          [T.MASK, 4],
          [T.OTHER, 0],
        ],
      ],
    ];
    const targets = grants.map(([rel]) => (rel === "." ? f.agentDir : at(f, rel)));
    for (const [i, [, name, entries]] of grants.entries()) expect(run(tools.setXattr, [targets[i] as string, name, aclHex(entries)]).status).toBe(0);
    const acls = (): string[] => targets.map((target) => run("getfacl", ["-n", "-p", target]).stdout);
    const before = acls();
    expect(before.join("")).toContain(`user:${UNPRIVILEGED}:r-x`);
    const modes = snapshot(f.agentDir);

    const result = runCli(["--agent-dir", f.agentDir, "audit", "--fix", "--json"]);
    expect(result.stderr).toBe("");
    const report = AuditReportSchema.parse(JSON.parse(result.stdout));
    for (const [rel] of grants)
      expect(
        report.repairs?.find((r) => r.path === rel),
        rel,
      ).toMatchObject({ outcome: "repaired", aclRemoved: true });
    expect(acls().join("")).not.toContain(`:${UNPRIVILEGED}:`);
    const script = fs.readFileSync(report.undoFile as string, "utf8");
    expect(script).toContain(`setfacl --set u::rwx,u:${UNPRIVILEGED}:r-x,g::---,m::r-x,o::--- -- '${f.agentDir}'\n`);
    expect(script).toContain(`setfacl -d --set u::rwx,g::---,g:${UNPRIVILEGED}:r-x,m::r-x,o::--- -- '${at(f, "blobs")}'\n`);

    const restored = run("sh", [report.undoFile as string]);
    expect(restored.status, restored.stderr).toBe(0);
    expect(acls()).toEqual(before);
    const after = snapshot(f.agentDir);
    delete after[path.basename(report.undoFile as string)];
    expect(after).toEqual(modes);
  });

  it("prints each repair with the mode it had, and where the undo script is", () => {
    const f = makeAgentDir(fresh("agent"));
    fs.chmodSync(at(f, f.sessionRel), 0o640);
    const result = runCli(["--agent-dir", f.agentDir, "audit", "--fix"]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`repaired  ${f.sessionRel.replace(/[.]/g, "\\.")}  mode_mismatch  was 0640\\n`));
    expect(result.stdout).toMatch(/old modes saved in .*\/\.gjc-audit-undo-[0-9TZ-]+\.sh: `sh` it to put them back/);
    // A clean agent dir needs no repair and gets no undo script.
    const again = runCli(["--agent-dir", f.agentDir, "audit", "--fix", "--json"]);
    expect(again.status).toBe(0);
    expect(AuditReportSchema.parse(JSON.parse(again.stdout)).undoFile).toBeUndefined();
  });
});

describe("audit --fix as an unprivileged uid", () => {
  it("refuses its own home-like tree and repairs, records and restores its own agent directory", (ctx) => {
    if (!isRoot()) skipBecause(ctx, "needs root to hand a tree to another uid");
    if (!hasCommand("setpriv")) skipBecause(ctx, "setpriv (util-linux) is not installed");
    // Under the system temp dir: the test's own base is root's, and not searchable by the other uid.
    const owner = fs.mkdtempSync(path.join(os.tmpdir(), "gjc-audit-fix-unpriv-"));
    ctx.onTestFinished(() => fs.rmSync(owner, { recursive: true, force: true }));
    const { dir: home } = homeLike();
    fs.renameSync(home, path.join(owner, "home"));
    const f = makeAgentDir(owner, "u");
    fs.chmodSync(at(f, "blobs"), 0o755);
    fs.chmodSync(at(f, f.sessionRel), 0o644);
    const chownTree = (p: string): void => {
      fs.lchownSync(p, UNPRIVILEGED, UNPRIVILEGED);
      if (fs.lstatSync(p).isDirectory()) for (const name of fs.readdirSync(p)) chownTree(path.join(p, name));
    };
    chownTree(owner);
    fs.chmodSync(owner, 0o755);
    const wrapper = ["setpriv", `--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, "--clear-groups"];
    const homeBefore = snapshot(path.join(owner, "home"));
    const refused = runCli(["--agent-dir", path.join(owner, "home"), "audit", "--fix"], { wrapper, env: { HOME: "/nonexistent" } });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("not_agent_dir: refusing to repair");
    expect(snapshot(path.join(owner, "home"))).toEqual(homeBefore);

    const before = snapshot(f.agentDir);
    const fixed = runCli(["--agent-dir", f.agentDir, "audit", "--fix", "--json"], { wrapper, env: { HOME: "/nonexistent" } });
    expect(fixed.stderr).toBe("");
    const report = AuditReportSchema.parse(JSON.parse(fixed.stdout));
    expect(fs.statSync(at(f, "blobs")).mode & 0o7777).toBe(0o700);
    const undo = report.undoFile as string;
    expect(fs.statSync(undo).uid).toBe(UNPRIVILEGED);
    const restored = run(wrapper[0] as string, [...wrapper.slice(1), "sh", undo]);
    expect(restored.status, restored.stderr).toBe(0);
    const after = snapshot(f.agentDir);
    delete after[path.basename(undo)];
    expect(after).toEqual(before);
  });
});
