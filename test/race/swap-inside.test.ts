// Issue 16 item 4, attacker inside the agent dir (the victim's own uid, root here): while
// each victim operation runs in a loop, a helper exchanges managed entries (sessions/,
// blobs/, terminal-sessions/, history.db and its -wal/-shm, a killed migration's staging
// directory) with links into an outside tree that mirrors the layout. Nothing outside may be
// opened, read, written, created or deleted, no result may show outside content, and every
// failure is typed. `GJC_RACE_ATTEMPTS=20000 GJC_RACE_MAX_MS=0` is the long run.
import { defineRaceSuite } from "./suite.js";

defineRaceSuite("inside", "RENAME_EXCHANGE inside the agent dir");
