// Issue 16 item 4, attacker owning the agent dir's parent: uid 65534 (via setpriv) swaps the
// agent dir itself with its link to an outside tree it owns, which mirrors the layout, while
// the victim (root: no permission check of the kernel stands in for the library's own) runs
// each operation in a loop. Nothing outside may be used, no result may show outside content
// (the victim's prompts must never land where the attacker can read them), every failure is
// typed. `GJC_RACE_ATTEMPTS=20000 GJC_RACE_MAX_MS=0` is the long run.
import { defineRaceSuite } from "./suite.js";

defineRaceSuite("parent", "RENAME_EXCHANGE of the agent dir from an attacker-owned parent");
