/**
 * Runs the plant entry points on prepared agent dirs, in order, from a given case on, and
 * prints `begin <group> <entry>` before and `end <group> <entry> <outcome JSON>` after each,
 * so the parent can tell which case hung (a FIFO, say) and go on after it.
 *   plant-child <job.json>   (job: { groups: PlantGroup[], group: number, entry: number, marker: string })
 * An entry that returns the outside tree's marker text reports `outside: true`.
 */
import fs from "node:fs";

import { isTypedRefusal } from "../ops.js";
import { ENTRIES, type PlantGroup } from "../plant-entries.js";

const job = JSON.parse(fs.readFileSync(process.argv[2] ?? "", "utf8")) as { groups: PlantGroup[]; group: number; entry: number; marker: string };

for (let g = job.group; g < job.groups.length; g++) {
  const group = job.groups[g]!;
  for (const e of group.entries) {
    if (g === job.group && e < job.entry) continue;
    process.stdout.write(`begin ${g} ${e}\n`);
    let outcome: unknown;
    try {
      const result = await ENTRIES[e]![1](group);
      // Only whether outside content came back travels to the parent, not the content.
      outcome = result.kind === "ok" ? { kind: "ok", outside: result.visible.includes(job.marker) } : result;
    } catch (error) {
      outcome = isTypedRefusal(error)
        ? { kind: "refused", code: error.code }
        : { kind: "untyped", message: error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 200) : String(error) };
    }
    process.stdout.write(`end ${g} ${e} ${JSON.stringify(outcome)}\n`);
  }
}
