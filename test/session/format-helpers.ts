/**
 * Builders shared by the session format tests.
 */
import { expect } from "vitest";
import { GjcError } from "../../src/errors.js";
import { scanJsonl, type InvalidLine, type JsonlStats } from "../../src/session/jsonl.js";
import { loadSession, type LoadedSession, type LoadOptions } from "../../src/session/load.js";
import type { JsonRecord } from "../../src/session/salvage.js";

/** One item {@link parseJsonl} read. */
export type JsonlItem = { kind: "record"; line: number; value: JsonRecord } | ({ kind: "invalid" } & InvalidLine);

/** Every record and invalid piece of `input`, in file order, as {@link scanJsonl} reports them. */
export function parseJsonl(input: string | Uint8Array): { items: JsonlItem[]; stats: JsonlStats } {
  const items: JsonlItem[] = [];
  const stats = scanJsonl(input, {
    record: (value, line) => items.push({ kind: "record", line, value }),
    invalid: (invalid) => items.push({ kind: "invalid", ...invalid }),
  });
  return { items, stats };
}

/** True for a lowercase UUIDv7, the format of a new session id. */
export const isUuidV7 = (value: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(value);

/** True for 8 lowercase hex digits, the format of a new entry id. */
export const isEntryId = (value: string): boolean => /^[0-9a-f]{8}$/.test(value);

/** One JSONL line per record. */
export function jsonl(...records: unknown[]): string {
  return records.map((record) => `${JSON.stringify(record)}\n`).join("");
}

/** A current-version header. */
export function header(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "session",
    version: 5,
    id: "019f0000-1111-7000-aaaa-000000000001",
    timestamp: "2026-01-01T00:00:00.000Z",
    cwd: "/work/project",
    ...fields,
  };
}

/** A well-formed `message` entry. */
export function message(id: string, parentId: string | null, text = `text of ${id}`, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: "message",
    id,
    parentId,
    timestamp: "2026-01-01T00:00:01.000Z",
    message: { role: "user", content: [{ type: "text", text }] },
    ...extra,
  };
}

/** Loads and insists on a `loaded` result. */
export function loaded(input: string | Uint8Array, options?: LoadOptions): LoadedSession {
  const result = loadSession(input, options);
  if (result.kind !== "loaded") throw new Error(`expected a loaded session, got ${JSON.stringify(result)}`);
  return result;
}

/** The JSON form of values (what a file can hold), for comparisons that ignore symbols. */
export function asJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}

/** Runs `action` and asserts it throws a `GjcError` with `code`. */
export function expectCode(action: () => unknown, code: string): void {
  let caught: unknown;
  try {
    action();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(GjcError);
  expect((caught as GjcError).code).toBe(code);
}
