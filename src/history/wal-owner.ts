/**
 * Which database file a `-wal` belongs to. SQLite keeps no link between a database and its WAL
 * beyond the name, so a database renamed aside and replaced (a restored backup) would take the
 * frames its old writer left, at the next open in any process. Every write transaction of the
 * store stamps the file's identity into page 1 (`application_id`, which puts page 1 in the
 * transaction's frames); the stamp of the newest committed page 1 in the WAL names its file.
 */
import { createHash } from "node:crypto";

import type { SecureFile } from "../fs/index.js";

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
const WAL_MAGIC_LE = 0x377f0682;
const WAL_MAGIC_BE = 0x377f0683;
// The database header's application_id, a big-endian 32-bit word.
const APPLICATION_ID_OFFSET = 68;
// Frames are read in runs of about this many bytes.
const READ_CHUNK_BYTES = 1 << 20;

/** A non-zero 32-bit stamp for a file identity (`dev:ino`); zero is every unstamped file's id. */
export function identityStamp(identityKey: string): number {
  const stamp = createHash("sha256").update(identityKey).digest().readInt32BE(0);
  return stamp === 0 ? 1 : stamp;
}

/** Continues SQLite's WAL checksum over `data` (whole 8-byte pairs), from `[s0, s1]`. */
function checksum(data: Buffer, bigEndian: boolean, s0: number, s1: number): [number, number] {
  for (let i = 0; i + 8 <= data.length; i += 8) {
    const x0 = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const x1 = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

/**
 * The stamp in the newest page 1 that a committed transaction of the WAL `file` holds, read as SQLite's
 * recovery reads it (salts and running checksum valid, up to the last commit frame); undefined when
 * there is no committed page 1 in it, or an unstamped one (written by a writer that does not stamp:
 * nothing says whose it is).
 */
export function walOwnerStamp(file: SecureFile): number | undefined {
  const size = file.stat().size;
  if (size < WAL_HEADER_BYTES) return undefined;
  const header = file.readAt(0, WAL_HEADER_BYTES);
  const magic = header.readUInt32BE(0);
  if (magic !== WAL_MAGIC_LE && magic !== WAL_MAGIC_BE) return undefined;
  const bigEndian = magic === WAL_MAGIC_BE;
  const pageSize = header.readUInt32BE(8) === 1 ? 65536 : header.readUInt32BE(8);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return undefined;
  let [s0, s1] = checksum(header.subarray(0, 24), bigEndian, 0, 0);
  if (s0 !== header.readUInt32BE(24) || s1 !== header.readUInt32BE(28)) return undefined;
  const frameBytes = FRAME_HEADER_BYTES + pageSize;
  const framesPerRead = Math.max(1, Math.floor(READ_CHUNK_BYTES / frameBytes));
  let pending: number | undefined;
  let committed: number | undefined;
  for (let offset = WAL_HEADER_BYTES; offset + frameBytes <= size;) {
    const count = Math.min(framesPerRead, Math.floor((size - offset) / frameBytes));
    const run = file.readAt(offset, count * frameBytes);
    if (run.length < count * frameBytes) return committed;
    for (let i = 0; i < count; i++, offset += frameBytes) {
      const frame = run.subarray(i * frameBytes, (i + 1) * frameBytes);
      if (frame.readUInt32BE(8) !== header.readUInt32BE(16) || frame.readUInt32BE(12) !== header.readUInt32BE(20)) return committed;
      [s0, s1] = checksum(frame.subarray(0, 8), bigEndian, s0, s1);
      [s0, s1] = checksum(frame.subarray(FRAME_HEADER_BYTES), bigEndian, s0, s1);
      if (s0 !== frame.readUInt32BE(16) || s1 !== frame.readUInt32BE(20)) return committed;
      if (frame.readUInt32BE(0) === 1) pending = frame.readInt32BE(FRAME_HEADER_BYTES + APPLICATION_ID_OFFSET);
      // A commit frame records the database size after the transaction; the others record 0.
      if (frame.readUInt32BE(4) !== 0 && pending !== undefined) committed = pending === 0 ? undefined : pending;
    }
  }
  return committed;
}
