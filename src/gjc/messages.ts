/**
 * Message identity for GJC's app: which session entry a message object came from, its
 * observation id and its viewport anchor. The links go with the message object and are kept in
 * this module only: the `/gjc` manager fills them where it creates message objects (appends,
 * contexts, copies), and the app's lookups must reach the same links, which is why the app
 * imports these helpers from this package and not from its own code.
 */
import type { AgentMessage } from "../session/index.js";
import { MessageIdentityError } from "./errors.js";

/** Any message object GJC's app hands in: ours, or one of its own message types. */
export type IdentifiedMessage = AgentMessage | object;

/** Whether `value` can carry links (an object or a function), as a weak map's key must be. */
function isObject(value: unknown): value is object {
  return (typeof value === "object" && value !== null) || typeof value === "function";
}

/** A base whose constructor hands back the object it is given, so a subclass adds its private fields to that object. */
class Stamp {
  constructor(target: object) {
    return target as Stamp;
  }
}

/**
 * The three links of a message, held as private fields added to the message object itself (its
 * prototype stays its own): no copy, spread, `JSON.stringify`, reflection or deep equality sees
 * them, as none sees GJC's weak maps, and they go with the object. Every resume links each message
 * of its context, and adding a private field costs a fraction of a weak map's entry, in the set and
 * again in every collection. A runtime that refuses new private fields on an object that takes no
 * new properties gets a stand-in object for it, kept in a weak map.
 */
class MessageLinks extends Stamp {
  #entryId: string | undefined;
  #observationId: string | undefined;
  #anchorId: string | undefined;

  static readonly #standIns = new WeakMap<object, object>();

  /**
   * The object holding `message`'s links (itself, or its stand-in), made on first need.
   * @throws MessageIdentityError `not_an_object` for anything else (where GJC's weak map throws a `TypeError`)
   */
  static #holder(message: object): object {
    if (!isObject(message))
      throw new MessageIdentityError("not_an_object", `a message link needs an object, not ${message === null ? "null" : typeof message}`);
    const found = MessageLinks.#found(message);
    if (found !== undefined) return found;
    try {
      return new MessageLinks(message);
    } catch {
      const made = new MessageLinks({});
      MessageLinks.#standIns.set(message, made);
      return made;
    }
  }

  /** The object holding `message`'s links, if it has any (nothing is made); a non-object has none, as in a weak map. */
  static #found(message: object): MessageLinks | undefined {
    if (!isObject(message)) return undefined;
    return (#entryId in message ? message : MessageLinks.#standIns.get(message)) as MessageLinks | undefined;
  }

  static entryId(message: object): string | undefined {
    const found = MessageLinks.#found(message);
    return found === undefined ? undefined : found.#entryId;
  }

  static setEntryId(message: object, id: string): void {
    (MessageLinks.#holder(message) as MessageLinks).#entryId = id;
  }

  static observationId(message: object): string | undefined {
    const found = MessageLinks.#found(message);
    return found === undefined ? undefined : found.#observationId;
  }

  static setObservationId(message: object, id: string): void {
    (MessageLinks.#holder(message) as MessageLinks).#observationId = id;
  }

  static anchorId(message: object): string | undefined {
    const found = MessageLinks.#found(message);
    return found === undefined ? undefined : found.#anchorId;
  }

  static setAnchorId(message: object, id: string): void {
    (MessageLinks.#holder(message) as MessageLinks).#anchorId = id;
  }
}

/** Links `message` to the session entry `entryId`, replacing an earlier link. */
export function associateSessionMessageEntryId(message: IdentifiedMessage, entryId: string): void {
  MessageLinks.setEntryId(message, entryId);
}

/** The id of the session entry `message` was made from, if the manager linked one. */
export function getSessionMessageEntryId(message: IdentifiedMessage): string | undefined {
  return MessageLinks.entryId(message);
}

/**
 * Links `message` to `observationId` unless it has one already: the first link stands.
 * @returns the observation id in force afterwards
 */
export function associateSessionMessageObservationId(message: IdentifiedMessage, observationId: string): string {
  const existing = MessageLinks.observationId(message);
  if (existing !== undefined && existing !== "") return existing;
  MessageLinks.setObservationId(message, observationId);
  return observationId;
}

/** The observation id linked to `message`, if any. */
export function getSessionMessageObservationId(message: IdentifiedMessage): string | undefined {
  return MessageLinks.observationId(message);
}

/** Links `message` to the viewport anchor `anchorId`, replacing an earlier one. */
export function associateSessionMessageViewportAnchorId(message: IdentifiedMessage, anchorId: string): void {
  MessageLinks.setAnchorId(message, anchorId);
}

/** The viewport anchor linked to `message`, if any. */
export function getSessionMessageViewportAnchorId(message: IdentifiedMessage): string | undefined {
  return MessageLinks.anchorId(message);
}

/** The anchors of the user-typed messages (role `user`, not `synthetic`) of `messages` that have one, in order. */
export function getUserMessageViewportAnchorIds(messages: readonly IdentifiedMessage[]): string[] {
  const anchors: string[] = [];
  for (const message of messages) {
    const fields = message as { role?: unknown; synthetic?: unknown };
    if (fields.role !== "user" || fields.synthetic === true) continue;
    const anchor = MessageLinks.anchorId(message);
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
    const entryId = MessageLinks.entryId(from);
    if (entryId !== undefined && entryId !== "") MessageLinks.setEntryId(to, entryId);
    const observationId = MessageLinks.observationId(from);
    if (observationId !== undefined && observationId !== "") associateSessionMessageObservationId(to, observationId);
    const anchorId = MessageLinks.anchorId(from);
    if (anchorId !== undefined && anchorId !== "") MessageLinks.setAnchorId(to, anchorId);
  }
}
