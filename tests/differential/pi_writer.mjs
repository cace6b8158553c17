// Replays a list of SessionManager calls with pi 1.6.0 itself and prints the files it wrote.
//
//   node pi_writer.mjs <pi package dir> <ops.json> <out dir>
//
// Entry ids and the clock are made deterministic the way pi_lab's uuid_factory/clock are:
// crypto.randomUUID returns 00000001-0000-4000-8000-000000000000, 00000002-…, and `new Date()`
// without arguments returns one fixed instant. Only used by the differential tests.
import { createRequire, syncBuiltinESMExports } from "node:module";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);
const crypto = require("node:crypto");
let counter = 0;
crypto.randomUUID = () => `${(++counter).toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
syncBuiltinESMExports();

const FIXED = Date.UTC(2026, 6, 29, 9, 0, 0, 123);
const RealDate = Date;
class FixedDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) super(FIXED);
		else super(...args);
	}
	static now() {
		return FIXED;
	}
}
globalThis.Date = FixedDate;

const [pkg, opsFile, outDir] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist/core/session-manager.js")).href);
const ops = JSON.parse(readFileSync(opsFile, "utf8"));
let sm = null;
const results = [];
for (const op of ops) {
	const a = op.args ?? [];
	try {
		switch (op.op) {
			case "create":
				sm = SessionManager.create(op.cwd, outDir, { id: op.id });
				break;
			case "message": results.push(sm.appendMessage(a[0])); break;
			case "thinking": results.push(sm.appendThinkingLevelChange(a[0])); break;
			case "model": results.push(sm.appendModelChange(a[0], a[1])); break;
			case "compaction": results.push(sm.appendCompaction(a[0], a[1], a[2], a[3], a[4], a[5])); break;
			case "custom": results.push(sm.appendCustomEntry(a[0], a[1])); break;
			case "custom_message": results.push(sm.appendCustomMessageEntry(a[0], a[1], a[2], a[3])); break;
			case "label": results.push(sm.appendLabelChange(a[0], a[1])); break;
			case "name": results.push(sm.appendSessionInfo(a[0])); break;
			case "edit": results.push(sm.appendContextEdit(a[0], a[1])); break;
			case "branch": sm.branch(a[0]); break;
			case "reset": sm.resetLeaf(); break;
			case "summary": results.push(sm.branchWithSummary(a[0], a[1], a[2], a[3], a[4])); break;
			case "extract": results.push(sm.createBranchedSession(a[0]) ? "path" : null); break;
			default: throw new Error(`unknown op ${op.op}`);
		}
	} catch (error) {
		results.push({ error: String(error.message ?? error) });
	}
}
const files = {};
for (const name of readdirSync(outDir)) files[name] = readFileSync(join(outDir, name), "utf8");
process.stdout.write(JSON.stringify({ results, files, leaf: sm.getLeafId(), sessionId: sm.getSessionId() }));
