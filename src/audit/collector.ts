/** Gathers findings per object while the walk runs, and the repairs `fix` makes. */
import { AUDIT_FIXABLE_CODES, type AuditFinding, type AuditFindingCode, type AuditObject, type AuditObjectType, type AuditRepair } from "./schema.js";

const WARNINGS: ReadonlySet<AuditFindingCode> = new Set<AuditFindingCode>(["not_audited", "orphan_blob", "legacy_unmigrated"]);

/** Findings grouped by object, in the order objects were first reported. */
export class FindingCollector {
  readonly #objects = new Map<string, AuditObject>();
  readonly repairs: AuditRepair[] = [];

  /** Records one finding about `path`; `repairable`: the object is one `fix` may touch (the user's, one link, right type). */
  add(
    path: string,
    type: AuditObjectType,
    code: AuditFindingCode,
    message: string,
    extra: { line?: number; detail?: string; repairable?: boolean } = {},
  ): void {
    let object = this.#objects.get(path);
    if (object === undefined) {
      object = { path, type, findings: [] };
      this.#objects.set(path, object);
    }
    const finding: AuditFinding = {
      code,
      severity: WARNINGS.has(code) ? "warning" : "error",
      message,
      fixable: extra.repairable === true && AUDIT_FIXABLE_CODES.has(code),
    };
    if (extra.line !== undefined) finding.line = extra.line;
    if (extra.detail !== undefined) finding.detail = extra.detail;
    object.findings.push(finding);
  }

  /** Drops the findings of `path` that a successful repair fixed. */
  resolve(path: string, codes: readonly AuditFindingCode[]): void {
    const object = this.#objects.get(path);
    if (object === undefined) return;
    object.findings = object.findings.filter((f) => !codes.includes(f.code));
    if (object.findings.length === 0) this.#objects.delete(path);
  }

  /** The objects that still have findings. */
  objects(): AuditObject[] {
    return [...this.#objects.values()];
  }
}
