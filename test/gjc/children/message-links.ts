/**
 * Message links on a runtime that refuses new private fields on objects that take no new
 * properties (run with `--js-nonextensible-applies-to-private`): frozen, sealed and
 * non-extensible messages are linked all the same, and every link reads back. Prints JSON.
 */
import {
  associateSessionMessageEntryId,
  associateSessionMessageObservationId,
  associateSessionMessageViewportAnchorId,
  getSessionMessageEntryId,
  getSessionMessageObservationId,
  getSessionMessageViewportAnchorId,
  transferSessionMessageIdentity,
} from "../../../src/gjc/messages.js";

/** Whether this runtime refuses a private field on a frozen object: the case the links must survive. */
function refusesPrivateFields(): boolean {
  class Base {
    constructor(target: object) {
      return target as Base;
    }
  }
  class Field extends Base {
    #mark = 1;
    static read(target: object): number {
      return (target as Field).#mark;
    }
  }
  try {
    return Field.read(new Field(Object.freeze({}))) !== 1;
  } catch {
    return true;
  }
}

const message = (text: string) => ({ role: "user", content: [{ type: "text", text }], timestamp: 0 });
const frozen = Object.freeze(message("frozen"));
const sealed = Object.seal(message("sealed"));
const closed = Object.preventExtensions(message("closed"));
const open = message("open");
const results: Record<string, unknown> = { refuses: refusesPrivateFields() };
for (const [name, target] of Object.entries({ frozen, sealed, closed, open })) {
  associateSessionMessageEntryId(target, `${name}-entry`);
  associateSessionMessageEntryId(target, `${name}-entry-2`);
  associateSessionMessageViewportAnchorId(target, `${name}-anchor`);
  associateSessionMessageObservationId(target, `${name}-observation`);
  associateSessionMessageObservationId(target, "ignored: the first stands");
  results[name] = [getSessionMessageEntryId(target), getSessionMessageViewportAnchorId(target), getSessionMessageObservationId(target)];
}
const target = Object.freeze(message("transferred"));
transferSessionMessageIdentity([open], [target]);
results.transferred = [getSessionMessageEntryId(target), getSessionMessageViewportAnchorId(target), getSessionMessageObservationId(target)];
results.other = getSessionMessageEntryId(Object.freeze(message("never linked"))) ?? null;
process.stdout.write(JSON.stringify(results));
