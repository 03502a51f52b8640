/**
 * Session ids are UUIDv7 (time-ordered: a listing sorts by creation); entry ids 8 hex digits, readable in a transcript
 * and unique in a session, since every draw is checked against the ids it holds.
 */
import { randomFillSync } from "node:crypto";
import { SessionFormatError } from "./errors.js";

/** Random bytes come in blocks: one syscall per block instead of one per id. */
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;

function takeRandom(count: number): Buffer {
  if (poolOffset + count > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = pool.subarray(poolOffset, poolOffset + count);
  poolOffset += count;
  return out;
}

/** A fresh lowercase, hyphenated UUIDv7 (48-bit Unix milliseconds `now`, which tests pin; version 7, variant `10`). */
export function newSessionId(now: number = Date.now()): string {
  const bytes = Buffer.from(takeRandom(16));
  bytes.writeUIntBE(Math.max(0, Math.floor(now)), 0, 6);
  bytes[6] = 0x70 | ((bytes[6] ?? 0) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Ids a lifecycle launcher may hand in instead of a generated UUIDv7. */
const ADOPTED_SESSION_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** True for a session id accepted from outside: 1-128 of `[A-Za-z0-9._-]` (a UUIDv7 is), never the path components `.`, `..`. */
export function isValidSessionId(value: string): boolean {
  return ADOPTED_SESSION_ID.test(value) && value !== "." && value !== "..";
}

/** Draws before concluding that the collision predicate is broken. */
const MAX_ENTRY_ID_DRAWS = 100;

/**
 * A fresh entry id (8 lowercase hex digits) that `has` reports unused; 100 collisions in a row mean a broken predicate.
 * @throws SessionFormatError `entry_id_exhausted`
 */
export function newEntryId(has: (id: string) => boolean): string {
  for (let draw = 0; draw < MAX_ENTRY_ID_DRAWS; draw += 1) {
    const id = takeRandom(4).toString("hex");
    if (!has(id)) return id;
  }
  throw new SessionFormatError("entry_id_exhausted", `no unused entry id after ${MAX_ENTRY_ID_DRAWS} draws`);
}
