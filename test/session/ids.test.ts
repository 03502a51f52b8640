import { describe, expect, it } from "vitest";
import { isValidSessionId, newEntryId, newSessionId } from "../../src/session/ids.js";
import { expectCode, isEntryId, isUuidV7 } from "./format-helpers.js";

describe("session ids", () => {
  it("are lowercase UUIDv7 carrying the creation time", () => {
    const now = Date.UTC(2026, 10, 30, 4, 47, 16, 123);
    const id = newSessionId(now);
    expect(isUuidV7(id)).toBe(true);
    expect(id).toHaveLength(36);
    expect(Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(now);
  });

  it("differ from call to call and sort by time", () => {
    const ids = Array.from({ length: 2000 }, (_, i) => newSessionId(1_700_000_000_000 + i));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it.each([
    ["a UUIDv7", "019f0000-1111-7000-aaaa-000000000001", true],
    ["an adopted launcher id", "run_42.a-B", true],
    ["128 characters", "a".repeat(128), true],
    ["129 characters", "a".repeat(129), false],
    ["empty", "", false],
    [".", ".", false],
    ["..", "..", false],
    ["a slash", "a/b", false],
    ["a NUL", "a\u0000b", false],
  ])("isValidSessionId: %s", (_name, value, valid) => {
    expect(isValidSessionId(value)).toBe(valid);
  });
});

describe("entry ids", () => {
  it("are 8 lowercase hex digits", () => {
    for (let i = 0; i < 500; i += 1) expect(isEntryId(newEntryId(() => false))).toBe(true);
  });

  it("are redrawn while the session already holds the draw", () => {
    const rejected: string[] = [];
    const id = newEntryId((candidate) => {
      if (rejected.length < 3) {
        rejected.push(candidate);
        return true;
      }
      return false;
    });
    expect(rejected).toHaveLength(3);
    expect(rejected).not.toContain(id);
  });

  it("give up with entry_id_exhausted when every draw is taken", () => {
    let draws = 0;
    expectCode(
      () =>
        newEntryId(() => {
          draws += 1;
          return true;
        }),
      "entry_id_exhausted",
    );
    expect(draws).toBe(100);
  });
});
