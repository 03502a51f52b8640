/** Text forms of entries, messages and trees for the human output of `show` and `context`. */
import type { ContextMessage, FileEntry, SessionTreeNode } from "../index.js";
import { oneLine, type Style } from "./output.js";

type Loose = Record<string, unknown>;

/** The readable text of message content (string or blocks); non-text blocks by kind. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: unknown) => {
      if (typeof block !== "object" || block === null) return "";
      const b = block as Loose;
      if (b.type === "text" && typeof b.text === "string") return b.text;
      if (b.type === "thinking") return "[thinking]";
      if (b.type === "image") return "[image]";
      if (b.type === "toolCall") return `[tool call ${typeof b.name === "string" ? b.name : "?"}]`;
      return `[${String(b.type)}]`;
    })
    .filter((text) => text !== "")
    .join(" ");
}

/** The role (or kind) and one line of text of a context message. */
export function describeMessage(message: ContextMessage): { role: string; text: string } {
  const m = message as unknown as Loose;
  const role = typeof m.role === "string" ? m.role : "message";
  const text = contentText(m.content) || (typeof m.summary === "string" ? m.summary : "");
  return { role, text };
}

/** One line describing an entry of the tree. */
function describeEntry(entry: FileEntry, style: Style): string {
  const e = entry as unknown as Loose;
  switch (e.type) {
    case "message": {
      const message = e.message as Loose;
      return `${style.cyan(String(message.role))}: ${oneLine(contentText(message.content), 60)}`;
    }
    case "compaction":
      return `${style.yellow("compaction")}: ${oneLine(String(e.summary), 60)}`;
    case "branch_summary":
      return `${style.yellow("branch summary")}: ${oneLine(String(e.summary), 60)}`;
    case "label":
      return style.dim(`label ${e.label === undefined ? "cleared" : JSON.stringify(e.label)} on ${String(e.targetId)}`);
    case "model_change":
      return style.dim(`model ${String(e.model)}`);
    case "custom_message":
      return `${style.cyan(`custom ${String(e.customType)}`)}: ${oneLine(contentText(e.content), 60)}`;
    default:
      return style.dim(String(e.type));
  }
}

/** The tree as lines: only a fork indents, so a long chain stays on screen; iterative, as one chain may hold 100,000s of entries. */
export function renderTree(roots: readonly SessionTreeNode[], leafId: string | null, style: Style): string[] {
  const lines: string[] = [];
  type Item = { node: SessionTreeNode; lead: string; cont: string };
  const forks = (nodes: readonly SessionTreeNode[], prefix: string): Item[] =>
    nodes
      .map((node, i) => {
        const last = i === nodes.length - 1;
        return { node, lead: `${prefix}${last ? "└─ " : "├─ "}`, cont: `${prefix}${last ? "   " : "│  "}` };
      })
      .reverse();
  const stack: Item[] = roots.length === 1 ? [{ node: roots[0] as SessionTreeNode, lead: "", cont: "" }] : forks(roots, "");
  while (stack.length > 0) {
    const { node, lead, cont } = stack.pop() as Item;
    const id = (node.entry as unknown as Loose).id;
    const idText = typeof id === "string" ? style.dim(id.slice(0, 8)) : style.dim("--------");
    const label = node.label === undefined ? "" : ` ${style.green(`[${node.label}]`)}`;
    const leaf = typeof id === "string" && id === leafId ? ` ${style.bold("◀ leaf")}` : "";
    lines.push(`${style.dim(lead)}${idText} ${describeEntry(node.entry, style)}${label}${leaf}`);
    if (node.children.length === 1) stack.push({ node: node.children[0] as SessionTreeNode, lead: cont, cont });
    else stack.push(...forks(node.children, cont));
  }
  return lines;
}
