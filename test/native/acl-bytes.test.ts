import { describe, expect, it } from "vitest";

import { native } from "../../src/native/index.js";
import { ACL_TAG as T, aclBytes, extendedAcl, MINIMAL_ACL, type AclEntry } from "../helpers/acl.js";

const classify = (entries: readonly AclEntry[], version = 2) => native.classifyAclBytes(aclBytes(entries, version));

describe("POSIX ACL xattr parser (pure)", () => {
  it("recognises minimal and extended ACLs", () => {
    expect(classify(MINIMAL_ACL)).toBe("minimal");
    expect(classify(extendedAcl(1000))).toBe("extended");
    expect(classify([[T.USER_OBJ, 6], [T.GROUP_OBJ, 0], [T.MASK, 0], [T.OTHER, 0]])).toBe("extended");
    expect(
      classify([[T.USER_OBJ, 7], [T.USER, 4, 1], [T.USER, 4, 2], [T.GROUP_OBJ, 0], [T.GROUP, 1, 5], [T.MASK, 7], [T.OTHER, 0]]),
    ).toBe("extended");
  });

  const malformed: Record<string, Buffer> = {
    empty: Buffer.alloc(0),
    "header only": aclBytes([]),
    "short entry": Buffer.concat([aclBytes(MINIMAL_ACL), Buffer.from([1, 0, 6])]),
    "bad version": aclBytes(MINIMAL_ACL, 1),
    "too few entries": aclBytes([[T.USER_OBJ, 6], [T.OTHER, 0]]),
    "unknown tag": aclBytes([[T.USER_OBJ, 6], [0x40, 0], [T.GROUP_OBJ, 0], [T.OTHER, 0]]),
    "perm above 7": aclBytes([[T.USER_OBJ, 8], [T.GROUP_OBJ, 0], [T.OTHER, 0]]),
    "bad order": aclBytes([[T.GROUP_OBJ, 0], [T.USER_OBJ, 6], [T.OTHER, 0]]),
    "duplicate USER_OBJ": aclBytes([[T.USER_OBJ, 6], [T.USER_OBJ, 6], [T.GROUP_OBJ, 0], [T.OTHER, 0]]),
    "missing MASK": aclBytes([[T.USER_OBJ, 6], [T.USER, 4, 7], [T.GROUP_OBJ, 0], [T.OTHER, 0]]),
    "named ids not ascending": aclBytes([[T.USER_OBJ, 6], [T.USER, 4, 9], [T.USER, 4, 3], [T.GROUP_OBJ, 0], [T.MASK, 4], [T.OTHER, 0]]),
    "entry after OTHER": aclBytes([[T.USER_OBJ, 6], [T.GROUP_OBJ, 0], [T.OTHER, 0], [T.MASK, 0]]),
    "missing OTHER": aclBytes([[T.USER_OBJ, 6], [T.GROUP_OBJ, 0], [T.MASK, 0]]),
    "two masks": aclBytes([[T.USER_OBJ, 6], [T.GROUP_OBJ, 0], [T.MASK, 0], [T.MASK, 0], [T.OTHER, 0]]),
  };
  for (const [name, bytes] of Object.entries(malformed)) {
    it(`refuses ${name}`, () => {
      expect(native.classifyAclBytes(bytes)).toBe("malformed");
    });
  }
});
