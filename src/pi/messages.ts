/**
 * The message shapes pi appends, as its packages declare them: pi-ai's `Message` and pi's `CustomMessage` and
 * `BashExecutionMessage` are interfaces without index signatures, which the main entry's open message types (each with
 * `[key: string]: unknown`) do not admit. These name only the fields the store relies on, so pi's own types fit them.
 */
import type { AgentMessage } from "../session/index.js";

/** A content block of pi's messages (text, thinking, image, tool call): its `type` tag, and its fields. */
export interface PiContentBlock {
  readonly type: string;
}

/** pi-ai's `UserMessage`. */
export interface PiUserMessage {
  readonly role: "user";
  readonly content: string | readonly PiContentBlock[];
  readonly timestamp: number;
}

/** pi-ai's `AssistantMessage`: `provider` and `model` name the model that answered. */
export interface PiAssistantMessage {
  readonly role: "assistant";
  readonly content: readonly PiContentBlock[];
  readonly provider: string;
  readonly model: string;
  readonly timestamp: number;
}

/** pi-ai's `ToolResultMessage`. */
export interface PiToolResultMessage {
  readonly role: "toolResult";
  readonly toolCallId: string;
  readonly toolName: string;
  readonly content: readonly PiContentBlock[];
  readonly isError: boolean;
  readonly timestamp: number;
}

/** pi's `CustomMessage`: an extension's message in the conversation. */
export interface PiCustomMessage {
  readonly role: "custom";
  readonly customType: string;
  readonly content: string | readonly PiContentBlock[];
  readonly display: boolean;
  readonly timestamp: number;
}

/** pi's `BashExecutionMessage`: a command the user ran and what it printed. */
export interface PiBashExecutionMessage {
  readonly role: "bashExecution";
  readonly command: string;
  readonly output: string;
  readonly timestamp: number;
}

/** What pi's `SessionManager.appendMessage` takes (`Message | CustomMessage | BashExecutionMessage`), or a main-entry {@link AgentMessage}. */
export type PiAppendableMessage = AgentMessage | PiUserMessage | PiAssistantMessage | PiToolResultMessage | PiCustomMessage | PiBashExecutionMessage;

/** The content of pi's `appendCustomMessageEntry`: text, or pi-ai's text and image blocks. */
export type PiCustomContent = string | readonly PiContentBlock[];
