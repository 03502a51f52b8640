/**
 * The manager's revision counters as GJC's memory-guard checkpoints record them: each one a
 * canonical decimal string, so a checkpoint written and read back compares exactly.
 */
import { GjcError } from "../errors.js";
import type { RevisionSnapshot } from "./face-core.js";

/** {@link RevisionSnapshot} with each counter as a canonical decimal string. */
export type SessionManagerCheckpointRevisionStrings = { [K in keyof RevisionSnapshot]: string };

/** A revision counter that is no non-negative safe integer (a checkpoint could not round-trip it). */
export class RevisionCounterError extends GjcError<"invalid_revision"> {}

/**
 * `snapshot` (from `revisionSnapshot()`) as checkpoint strings.
 * @throws RevisionCounterError `invalid_revision` for a counter that is not a non-negative safe integer
 */
export function toSessionManagerCheckpointRevisionStrings(snapshot: RevisionSnapshot): SessionManagerCheckpointRevisionStrings {
  const text = (name: keyof RevisionSnapshot): string => {
    const value = snapshot[name];
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RevisionCounterError("invalid_revision", `revision counter ${name} is not a non-negative safe integer`);
    return String(value);
  };
  return { entry: text("entry"), leaf: text("leaf"), headerExport: text("headerExport"), label: text("label"), replayMetadata: text("replayMetadata") };
}
