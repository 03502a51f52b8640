/**
 * Shared pieces of the manager tests: messages, error-code capture for async calls, and the
 * storage tests' recording logger.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { GjcError } from "../../src/index.js";

export { recordingLogger } from "../storage/storages.js";

const here = path.dirname(fileURLToPath(import.meta.url));

/** The peer fixtures shipped with the tests. */
export const FIXTURES = path.resolve(here, "..", "fixtures", "peer-sessions");

/** A user message. */
export function user(text: string) {
  return { role: "user" as const, content: [{ type: "text", text }], timestamp: 1 };
}

/** An assistant message. */
export function assistant(text: string) {
  return {
    role: "assistant" as const,
    provider: "example",
    model: "example-model",
    content: [{ type: "text", text }],
    timestamp: 2,
  };
}

/** The `code` of the GjcError `fn` rejects with, or `"resolved"`. */
export async function codeOfAsync(fn: () => Promise<unknown> | unknown): Promise<string> {
  try {
    await fn();
  } catch (error) {
    if (error instanceof GjcError) return error.code;
    throw error;
  }
  return "resolved";
}

/** The parsed non-empty lines of a file. */
export function readRecords(file: string): Record<string, unknown>[] {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
