/**
 * The undo record of a fix: before `fix` changes an object's mode or removes its ACL, the old mode (and the ACL's
 * entries) are appended (and synced) to an owner-only shell script in the agent directory, `.gjc-audit-undo-<time>.sh`;
 * `sh <it>` puts them back (`chmod`, then `setfacl` for an ACL). Where the entries cannot be read (off Linux, or a read
 * refused), the script says an ACL was removed and that its entries were not read.
 */
import path from "node:path";

import { SecureDir, SecureFsError, type SecureFile } from "../fs/index.js";

/** `text` as one single-quoted shell word: nothing in it (newlines included) is interpreted. */
function shellWord(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** The ACL an object had before a fix: its POSIX ACL xattr values (empty: none), or why they were not read (a code). */
export type RemovedAcl = { readonly access: Uint8Array; readonly default: Uint8Array } | { readonly unread: string };

// Tags of the kernel's posix_acl_xattr entries, with the letter setfacl names them by; a named entry carries an id.
const ACL_TAGS: ReadonlyMap<number, { readonly letter: string; readonly named: boolean }> = new Map([
  [0x01, { letter: "u", named: false }],
  [0x02, { letter: "u", named: true }],
  [0x04, { letter: "g", named: false }],
  [0x08, { letter: "g", named: true }],
  [0x10, { letter: "m", named: false }],
  [0x20, { letter: "o", named: false }],
]);
const ACL_HEADER_BYTES = 4;
const ACL_ENTRY_BYTES = 8;

/**
 * One POSIX ACL xattr value (version 2, little-endian 8-byte entries: tag, permissions, id) in setfacl's short text
 * form, `u::rwx,u:1000:r-x,g::r-x,m::r-x,o::---`, ids numeric; undefined when it does not have that shape.
 */
export function aclText(bytes: Uint8Array): string | undefined {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.length < ACL_HEADER_BYTES || (view.length - ACL_HEADER_BYTES) % ACL_ENTRY_BYTES !== 0 || view.readUInt32LE(0) !== 2) return undefined;
  const entries: string[] = [];
  for (let at = ACL_HEADER_BYTES; at < view.length; at += ACL_ENTRY_BYTES) {
    const tag = ACL_TAGS.get(view.readUInt16LE(at));
    const perm = view.readUInt16LE(at + 2);
    if (tag === undefined || perm > 7) return undefined;
    const bits = `${perm & 4 ? "r" : "-"}${perm & 2 ? "w" : "-"}${perm & 1 ? "x" : "-"}`;
    entries.push(`${tag.letter}:${tag.named ? String(view.readUInt32LE(at + 4)) : ""}:${bits}`);
  }
  return entries.length === 0 ? undefined : entries.join(",");
}

/** The ACL `read` finds (see {@link SecureDir.aclOf}), or why it was not read: off Linux, or the read's code. */
export function removedAcl(read: () => { readonly access: Uint8Array; readonly default: Uint8Array } | undefined): RemovedAcl {
  try {
    return read() ?? { unread: `not read on ${process.platform}` };
  } catch (error) {
    if (error instanceof SecureFsError) return { unread: error.code };
    throw error;
  }
}

/** The undo lines of an ACL `target` had: `setfacl --set` of its access ACL, `-d --set` of its default ACL. */
function aclLines(target: string, acl: RemovedAcl): string {
  // Comments name no path: a newline in one would end the comment.
  if ("unread" in acl) return `# the object above also had an ACL, removed by the fix; its entries were not read (${acl.unread.replace(/[^\w .:-]/g, "?")})\n`;
  let lines = "";
  for (const [flag, value] of [
    ["", acl.access],
    ["-d ", acl.default],
  ] as const) {
    if (value.length === 0) continue;
    const text = aclText(value);
    lines +=
      text === undefined
        ? "# the object above also had an ACL that does not parse, removed by the fix\n"
        : `setfacl ${flag}--set ${text} -- ${shellWord(target)}\n`;
  }
  return lines;
}

/** The modes one fix run changed, written down before each change. */
export class UndoLog {
  readonly #agentDir: string;
  readonly #name: string;
  #file: SecureFile | undefined;
  #written = false;

  constructor(agentDir: string, startedAt: number) {
    this.#agentDir = agentDir;
    this.#name = `.gjc-audit-undo-${new Date(startedAt).toISOString().replace(/[:.]/g, "-")}.sh`;
  }

  /** The undo file's path once something was recorded. */
  get path(): string | undefined {
    return this.#written ? path.join(this.#agentDir, this.#name) : undefined;
  }

  /** Records that `rel` had `mode` (and `acl`, when it had one), durably, before it is changed. */
  record(rel: string, mode: number, acl: RemovedAcl | undefined): void {
    const target = rel === "." ? this.#agentDir : path.join(this.#agentDir, ...rel.split("/"));
    // chmod first: setfacl then sets the permission bits the ACL's owner, mask and other entries carry.
    const line = `chmod ${`0${(mode & 0o7777).toString(8).padStart(3, "0")}`} -- ${shellWord(target)}\n${acl === undefined ? "" : aclLines(target, acl)}`;
    const file = this.#open();
    file.append(line);
    file.sync();
    this.#written = true;
  }

  /** Closes the undo file (the record stays on disk). */
  close(): void {
    this.#file?.close();
    this.#file = undefined;
  }

  #open(): SecureFile {
    if (this.#file !== undefined) return this.#file;
    // The agent dir itself may be one of the objects to repair, so it is opened as it is (ours, no link).
    const root = SecureDir.openRoot(this.#agentDir, { owned: true });
    try {
      const file = root.openFile(this.#name, { create: "exclusive", append: true });
      file.append(
        "#!/bin/sh\n# The modes and ACLs `gjc-session audit --fix` changed, oldest first; `sh` this file to put them back (ACLs need setfacl).\nset -e\n",
      );
      this.#file = file;
      return file;
    } finally {
      root.close();
    }
  }
}
