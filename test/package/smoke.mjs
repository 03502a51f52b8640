// A user's first steps with the installed package, as plain JavaScript so any runtime (Node
// 20-26, Bun, Bun's musl builds, an arm64 Node under qemu) runs it without a TypeScript loader:
//   node smoke.mjs [--history] [--module <specifier>] [--expect-libc glibc|musl]
// --expect-libc (Linux) also checks, in the process's own mappings, that it runs on that libc
// and loaded that libc's prebuild (and, with --history, its SQLite extension) and no other.
// Each step is one check; the last line is "smoke: N passed, N failed" and the exit status is
// non-zero when a check failed. The agent directory is a fresh owner-only temp directory.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const args = process.argv.slice(2);
const withHistory = args.includes("--history");
const moduleAt = args.indexOf("--module");
const specifier = moduleAt >= 0 ? args[moduleAt + 1] : "gjc-session-store";
const libcAt = args.indexOf("--expect-libc");
const expectLibc = libcAt >= 0 ? args[libcAt + 1] : undefined;

const results = [];
async function check(name, fn) {
  try {
    await fn();
    results.push({ name, ok: true });
  } catch (error) {
    results.push({ name, ok: false, detail: error instanceof Error ? `${error.code ?? error.name}: ${error.message}` : String(error) });
  }
}
function assert(condition, message) {
  if (!condition) throw new Error(message);
}

const runtime = typeof globalThis.Bun === "object" ? `bun ${globalThis.Bun.version}` : `node ${process.version}`;
const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "gjc-smoke-")));
fs.chmodSync(base, 0o700);
const agentDir = path.join(base, "agent");
const workspace = path.join(base, "workspace");
fs.mkdirSync(workspace, { mode: 0o700 });

let api;
let file;
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
const assistant = (text) => ({ role: "assistant", provider: "p", model: "m", content: [{ type: "text", text }], timestamp: Date.now() });

await check("import", async () => {
  api = await import(specifier);
  assert(typeof api.SessionManager === "function", "no SessionManager export");
});
await check("managed scope", () => {
  const scope = api.resolveManagedScopeOrThrow({ cwd: workspace, agentDir, mode: "write" });
  assert(scope.directoryName.startsWith("v2-"), `unexpected scope ${scope.directoryName}`);
  assert((fs.statSync(scope.sessionsRoot).mode & 0o777) === 0o700, "sessions root is not 0700");
});
await check("secure directory, a link refused", () => {
  const root = api.SecureDir.openRoot(path.join(base, "store"), { create: true });
  try {
    root.writeFileAtomic("notes.txt", "kept");
    fs.writeFileSync(path.join(base, "elsewhere"), "not ours");
    fs.symlinkSync(path.join(base, "elsewhere"), path.join(base, "store", "link"));
    let code;
    try {
      root.openFile("link", {}).close();
    } catch (error) {
      code = error.code;
    }
    assert(code === "symlink_refused", `a symlink was opened (${code ?? "no error"})`);
    assert(fs.readFileSync(path.join(base, "store", "notes.txt"), "utf8") === "kept", "the atomic write was lost");
  } finally {
    root.close();
  }
});
await check("create, append, flush", async () => {
  const session = api.SessionManager.create(workspace, undefined, undefined, { agentDir });
  session.appendMessage(user("Hello"));
  session.appendMessage(assistant("Hi."));
  await session.flush();
  file = session.getSessionFile();
  await session.close();
  assert(file !== undefined && fs.existsSync(file), "the session file was not written");
  assert((fs.statSync(file).mode & 0o777) === 0o600, "the session file is not 0600");
});
await check("reopen and context", async () => {
  const session = await api.SessionManager.open(file);
  const { messages } = session.buildSessionContext();
  await session.close();
  assert(messages.length === 2, `expected 2 messages, got ${messages.length}`);
  assert(messages[1].content[0].text === "Hi.", "the assistant message did not survive");
});
await check("list", async () => {
  const sessions = await api.SessionManager.list(workspace, undefined, undefined, { agentDir });
  assert(sessions.length === 1 && sessions[0].path === file, `listed ${JSON.stringify(sessions.map((s) => s.path))}`);
});
if (withHistory) {
  await check("history add and search", async () => {
    const history = api.HistoryStorage.open(path.join(agentDir, "history.db"));
    try {
      await history.add("refactor the session loader", workspace);
      await history.add("write the smoke test", workspace);
      history.flush();
      const found = history.search("smoke", 10);
      assert(found.length === 1 && found[0].prompt === "write the smoke test", `search found ${JSON.stringify(found)}`);
    } finally {
      history.close();
    }
  });
}
if (expectLibc !== undefined) {
  await check(`the ${expectLibc} prebuild on ${expectLibc}`, () => {
    const mapped = new Set(
      fs
        .readFileSync("/proc/self/maps", "utf8")
        .split("\n")
        .map((line) => line.trim().split(/\s+/).slice(5).join(" "))
        .filter((file) => file.startsWith("/")),
    );
    const ours = [...mapped].filter((file) => /\/(gjc-session-store[^/]*\.node|gjc_pinned_vfs[^/]*\.so)$/.test(file)).sort();
    const folder = path.join("prebuilds", `${process.platform}-${process.arch}`);
    const wanted = [`gjc-session-store.${expectLibc}.node`, ...(withHistory ? [`gjc_pinned_vfs.${expectLibc}.so`] : [])];
    const loaded = ours.map((file) => path.relative(folder, file.slice(file.lastIndexOf(folder))));
    assert(ours.every((file) => file.includes(folder)) && JSON.stringify(loaded.sort()) === JSON.stringify(wanted.sort()), `loaded ${JSON.stringify(ours)}`);
    // musl is its own loader, mapped under the name it was started by or, where that is a link
    // (Debian's /lib/ld-musl-*), under the file it names.
    const loaderName = `ld-musl-${{ x64: "x86_64", arm64: "aarch64" }[process.arch]}.so.1`;
    let musl;
    try {
      musl = fs.realpathSync(`/lib/${loaderName}`);
    } catch {
      musl = undefined;
    }
    const onMusl = [...mapped].some((file) => file === musl || path.basename(file) === loaderName);
    // glibc's file is libc.so.6, or libc-2.NN.so before 2.34.
    const onGlibc = [...mapped].some((file) => /\/libc(\.so\.6|-2\.\d+\.so)$/.test(file));
    assert(expectLibc === "musl" ? onMusl && !onGlibc : onGlibc && !onMusl, `the process runs on ${onMusl ? "musl" : ""}${onGlibc ? " glibc" : ""}`);
  });
}

fs.rmSync(base, { recursive: true, force: true });
const failed = results.filter((r) => !r.ok);
for (const r of failed) console.log(`  FAIL ${r.name}: ${r.detail}`);
console.log(`smoke (${runtime}, ${process.platform}-${process.arch}): ${results.length - failed.length} passed, ${failed.length} failed`);
process.exitCode = failed.length > 0 ? 1 : 0;
