// pi 1.6.0 as the second writer of a session file pi_lab is appending to.
//
//   node pi_appender.mjs <pi package dir> <session file> <count>
//
// Opens the file with pi's own SessionManager and appends <count> custom entries with pi's
// appendFileSync (one line per call), printing "ready" first. Only used by the differential tests.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, file, count] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist/core/session-manager.js")).href);
const sm = SessionManager.open(file);
process.stdout.write("ready\n");
for (let i = 0; i < Number(count); i++) {
	sm.appendCustomEntry("pi", { i, pad: "p".repeat(i % 600) });
}
process.stdout.write("done\n");
