/**
 * The undo record of a fix: before `fix` changes an object's mode or removes its ACL, the old mode is appended (and
 * synced) to an owner-only shell script in the agent directory, `.gjc-audit-undo-<time>.sh`; `sh <it>` puts the modes
 * back. Removed ACLs are named in it but not restored (their entries are not read).
 */
import path from "node:path";

import { SecureDir, type SecureFile } from "../fs/index.js";

/** `text` as one single-quoted shell word: nothing in it (newlines included) is interpreted. */
function shellWord(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
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

  /** Records that `rel` had `mode` (and an ACL, when `acl`), durably, before it is changed. */
  record(rel: string, mode: number, acl: boolean): void {
    const target = rel === "." ? this.#agentDir : path.join(this.#agentDir, ...rel.split("/"));
    const line = `chmod ${`0${(mode & 0o7777).toString(8).padStart(3, "0")}`} -- ${shellWord(target)}${acl ? "  # it also had an ACL, removed by the fix" : ""}\n`;
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
      file.append("#!/bin/sh\n# The modes `gjc-session audit --fix` changed, oldest first; `sh` this file to put them back.\nset -e\n");
      this.#file = file;
      return file;
    } finally {
      root.close();
    }
  }
}
