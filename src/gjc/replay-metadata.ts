/**
 * OpenAI Responses replay metadata of assistant messages read back from a session file. While a
 * provider connection is live, an assistant message carries that connection's native history
 * (`providerPayload` of type `openaiResponsesHistory`) and the signatures of its thinking blocks,
 * so the next request can replay them. Read back from disk they belong to a connection that is
 * gone, and replaying them gets requests refused; GJC drops them from every message it loads. The
 * `/gjc` manager does the same to what it returns (contexts and entry copies) for every assistant
 * message it did not append itself, and leaves the file as it is: each load drops them again.
 */

/** The fields of an assistant message the rule reads. */
interface ReplayCarrier {
  role?: unknown;
  providerPayload?: unknown;
  content?: unknown;
}

/** Whether `message` is an assistant message carrying OpenAI Responses replay metadata. */
export function carriesReplayMetadata(message: unknown): boolean {
  if (typeof message !== "object" || message === null) return false;
  const { role, providerPayload } = message as ReplayCarrier;
  return (
    role === "assistant" &&
    typeof providerPayload === "object" &&
    providerPayload !== null &&
    (providerPayload as { type?: unknown }).type === "openaiResponsesHistory"
  );
}

/**
 * Drops the replay metadata from `message` in place (it must be a copy the caller owns): the payload goes, and each
 * thinking block that has a signature is replaced by a copy without one. @returns whether anything was dropped
 */
export function dropReplayMetadata(message: unknown): boolean {
  if (!carriesReplayMetadata(message)) return false;
  const carrier = message as ReplayCarrier;
  // Left as `undefined` keys, as GJC leaves them: a serialized message has neither.
  carrier.providerPayload = undefined;
  if (Array.isArray(carrier.content)) {
    carrier.content = carrier.content.map((block: unknown) => {
      if (typeof block !== "object" || block === null) return block;
      const { type, thinkingSignature } = block as { type?: unknown; thinkingSignature?: unknown };
      return type === "thinking" && thinkingSignature !== undefined ? { ...block, thinkingSignature: undefined } : block;
    });
  }
  return true;
}
