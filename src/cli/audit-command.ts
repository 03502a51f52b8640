/** `gjc-session audit`: formats what `auditAgentDir` found; exit 0 clean, 1 findings, 2 could not run. */
import { auditAgentDir, type AuditReport } from "../index.js";
import type { CliContext } from "./context.js";
import { formatError, plural, table, type Style } from "./output.js";

/** Exit statuses of `audit`. */
export const AUDIT_EXIT = { clean: 0, findings: 1, failed: 2 } as const;

/** Runs the audit and prints it; returns the exit status. */
export function runAudit(ctx: CliContext, options: { readonly json?: boolean; readonly fix?: boolean }): number {
  let report: AuditReport;
  try {
    report = auditAgentDir(ctx.agentDir, { fix: options.fix === true });
  } catch (error) {
    for (const line of formatError(error, ctx.verbose, ctx.errStyle)) ctx.err(line);
    return AUDIT_EXIT.failed;
  }
  if (options.json === true) ctx.json(report);
  else for (const line of formatAuditReport(report, ctx.style)) ctx.out(line);
  return report.clean ? AUDIT_EXIT.clean : AUDIT_EXIT.findings;
}

/** The human form of a report: objects with their findings, the repairs, a verdict. */
export function formatAuditReport(report: AuditReport, style: Style): string[] {
  const { counts } = report;
  const lines = [
    `${style.bold("Audit of")} ${report.agentDir}`,
    style.dim(
      `  ${plural(counts.directories, "directory", "directories")}, ${plural(counts.files, "file")}, ${plural(counts.sessions, "session")}, ${plural(counts.blobs, "blob")}, ${report.durationMs} ms`,
    ),
  ];
  for (const object of report.objects) {
    lines.push("", `${style.bold(object.path)}  ${style.dim(object.type)}`);
    const rows = object.findings.map((f) => [
      f.severity === "error" ? style.red("error") : style.yellow("warning"),
      style.cyan(f.code),
      `${f.message}${f.line === undefined ? "" : ` (line ${f.line})`}${f.fixable ? style.dim(" [fixable]") : ""}`,
    ]);
    lines.push(...table(rows).map((row) => `  ${row}`));
  }
  if (report.repairs !== undefined && report.repairs.length > 0) {
    lines.push("", style.bold("Repairs"));
    const rows = report.repairs.map((r) => [
      r.outcome === "repaired" ? style.green("repaired") : style.yellow("refused"),
      r.path,
      r.codes.join(","),
      style.dim(r.reason ?? (r.previousMode === undefined ? "" : `was ${r.previousMode}${r.aclRemoved === true ? " with an ACL" : ""}`)),
    ]);
    lines.push(...table(rows).map((row) => `  ${row}`));
  }
  if (report.undoFile !== undefined) lines.push("", `old modes saved in ${report.undoFile}: \`sh\` it to put them back`);
  lines.push("");
  lines.push(report.clean ? style.green("clean: no findings") : style.red(`${plural(counts.errors, "error")}, ${plural(counts.warnings, "warning")}`));
  return lines;
}
