/**
 * Message identity for GJC's app: which session entry a message object came from, its
 * observation id and its viewport anchor. The links are kept by object (weakly, so they go with
 * the message) in this module only: the `/gjc` manager fills them where it creates message
 * objects (appends, contexts, copies), and the app's lookups must reach the same maps, which is
 * why the app imports these helpers from this package and not from its own code.
 */
import type { AgentMessage } from "../session/index.js";
import { MessageIdentityError } from "./errors.js";

/** Any message object GJC's app hands in: ours, or one of its own message types. */
export type IdentifiedMessage = AgentMessage | object;

const entryIds = new WeakMap<object, string>();
const observationIds = new WeakMap<object, string>();
const viewportAnchorIds = new WeakMap<object, string>();

/** Links `message` to the session entry `entryId`, replacing an earlier link. */
export function associateSessionMessageEntryId(message: IdentifiedMessage, entryId: string): void {
  entryIds.set(message, entryId);
}

/** The id of the session entry `message` was made from, if the manager linked one. */
export function getSessionMessageEntryId(message: IdentifiedMessage): string | undefined {
  return entryIds.get(message);
}

/**
 * Links `message` to `observationId` unless it has one already: the first link stands.
 * @returns the observation id in force afterwards
 */
export function associateSessionMessageObservationId(message: IdentifiedMessage, observationId: string): string {
  const existing = observationIds.get(message);
  if (existing !== undefined && existing !== "") return existing;
  observationIds.set(message, observationId);
  return observationId;
}

/** The observation id linked to `message`, if any. */
export function getSessionMessageObservationId(message: IdentifiedMessage): string | undefined {
  return observationIds.get(message);
}

/** Links `message` to the viewport anchor `anchorId`, replacing an earlier one. */
export function associateSessionMessageViewportAnchorId(message: IdentifiedMessage, anchorId: string): void {
  viewportAnchorIds.set(message, anchorId);
}

/** The viewport anchor linked to `message`, if any. */
export function getSessionMessageViewportAnchorId(message: IdentifiedMessage): string | undefined {
  return viewportAnchorIds.get(message);
}

/** The anchors of the user-typed messages (role `user`, not `synthetic`) of `messages` that have one, in order. */
export function getUserMessageViewportAnchorIds(messages: readonly IdentifiedMessage[]): string[] {
  const anchors: string[] = [];
  for (const message of messages) {
    const fields = message as { role?: unknown; synthetic?: unknown };
    if (fields.role !== "user" || fields.synthetic === true) continue;
    const anchor = viewportAnchorIds.get(message);
    if (anchor !== undefined && anchor !== "") anchors.push(anchor);
  }
  return anchors;
}

/**
 * Copies the three links of each `source[i]` onto `target[i]` (a copy of the same message): the
 * entry id and anchor replace the target's, the observation id only fills a gap.
 * @throws MessageIdentityError `identity_transfer_mismatch` when the arrays differ in length
 */
export function transferSessionMessageIdentity(source: readonly IdentifiedMessage[], target: readonly IdentifiedMessage[]): void {
  if (source.length !== target.length) {
    throw new MessageIdentityError(
      "identity_transfer_mismatch",
      `Cannot transfer session message identity across ${source.length} source and ${target.length} target messages`,
    );
  }
  for (let i = 0; i < source.length; i++) {
    const from = source[i]!;
    const to = target[i]!;
    const entryId = entryIds.get(from);
    if (entryId !== undefined && entryId !== "") entryIds.set(to, entryId);
    const observationId = observationIds.get(from);
    if (observationId !== undefined && observationId !== "") associateSessionMessageObservationId(to, observationId);
    const anchorId = viewportAnchorIds.get(from);
    if (anchorId !== undefined && anchorId !== "") viewportAnchorIds.set(to, anchorId);
  }
}
