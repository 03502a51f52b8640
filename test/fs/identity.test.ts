import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { directoryIdentity } from "../../src/fs/index.js";
import { codeOf } from "../helpers/errors.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => {
  tmp = makeTempDir();
});
afterEach(() => tmp.remove());

describe("directoryIdentity", () => {
  it("gives one identity for every alias of a directory, matching the OS dev/ino", () => {
    const real = path.join(tmp.path, "real");
    fs.mkdirSync(real);
    fs.symlinkSync(real, path.join(tmp.path, "alias"));
    const st = fs.statSync(real, { bigint: true });
    const expected = { platform: "linux", canonicalPath: real, dev: String(st.dev), ino: String(st.ino) };
    expect(directoryIdentity(real)).toEqual(expected);
    expect(directoryIdentity(path.join(tmp.path, "alias"))).toEqual(expected);
    expect(directoryIdentity(`${real}/`)).toEqual(expected);
    expect(directoryIdentity(path.join(real, "..", "real"))).toEqual(expected);
    expect(directoryIdentity(path.relative(process.cwd(), real))).toEqual(expected);
  });

  it("reports not_found, not_directory and invalid_argument", () => {
    fs.writeFileSync(path.join(tmp.path, "file"), "x");
    expect(codeOf(() => directoryIdentity(path.join(tmp.path, "missing")))).toBe("not_found");
    expect(codeOf(() => directoryIdentity(path.join(tmp.path, "file")))).toBe("not_directory");
    expect(codeOf(() => directoryIdentity(""))).toBe("invalid_argument");
    expect(codeOf(() => directoryIdentity(`${tmp.path}/a\0b`))).toBe("invalid_argument");
  });

  it("reports not_utf8 when the canonical path is not valid UTF-8", () => {
    const rawName = Buffer.concat([Buffer.from(`${tmp.path}/`), Buffer.from([0x62, 0xff, 0x61])]);
    fs.mkdirSync(rawName);
    fs.symlinkSync(rawName, path.join(tmp.path, "utf8-alias"));
    expect(codeOf(() => directoryIdentity(path.join(tmp.path, "utf8-alias")))).toBe("not_utf8");
  });
});
