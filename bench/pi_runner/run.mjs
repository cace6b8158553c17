#!/usr/bin/env node
// Runs pi's own session engine (@earendil-works/pi-coding-agent 1.6.0, installed by setup.sh into
// bench/.pi) on a session file, for benchmarks and differential tests.
//
//   node run.mjs info
//   node run.mjs bench <file> [--op all|open|context|tree|branch|prepare|estimate|estimate_all] [--repeat N] [--warmup N]
//   node run.mjs dump  <file> [--inplace] [--keep 1,100,2000,20000]
//   node run.mjs engine <file>     open, then the first buildSessionContext, getTree, getBranch
//
// The package's main entry (dist/index.js) needs Node >= 22 (it imports `globSync` from
// node:fs), and its `exports` map only exposes "." and "./rpc-entry". The session manager and
// compaction modules themselves run on Node 20, so they are imported by file URL:
//   <pkg>/dist/core/session-manager.js    SessionManager, buildContextEntries, buildSessionProjection, ...
//   <pkg>/dist/core/compaction/index.js   prepareCompaction, estimateContextTokens, estimateTokens, ...
//
// Opening a session may write to it (a missing trailing newline is appended, old versions are
// migrated and rewritten), so the input is copied to a temporary file unless --inplace is given.

import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const PKG = resolve(
	process.env.PI_PKG_DIR ?? join(HERE, "..", ".pi", "node_modules", "@earendil-works", "pi-coding-agent"),
);
const SESSION_MANAGER_JS = join(PKG, "dist", "core", "session-manager.js");
const COMPACTION_JS = join(PKG, "dist", "core", "compaction", "index.js");

function fail(message, code = 2) {
	process.stderr.write(`run.mjs: ${message}\n`);
	process.exit(code);
}

async function loadPi() {
	if (!existsSync(SESSION_MANAGER_JS)) fail(`pi package not installed: ${SESSION_MANAGER_JS} missing (run bench/pi_runner/setup.sh)`, 3);
	const sm = await import(pathToFileURL(SESSION_MANAGER_JS).href);
	let compaction = null;
	try {
		compaction = await import(pathToFileURL(COMPACTION_JS).href);
	} catch (e) {
		process.stderr.write(`run.mjs: compaction module unavailable: ${e}\n`);
	}
	const pkgJson = JSON.parse(readFileSync(join(PKG, "package.json"), "utf8"));
	return { sm, compaction, version: pkgJson.version };
}

function parseArgs(argv) {
	const args = { _: [] };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a.startsWith("--")) {
			const key = a.slice(2);
			const next = argv[i + 1];
			if (next === undefined || next.startsWith("--")) args[key] = true;
			else {
				args[key] = next;
				i++;
			}
		} else args._.push(a);
	}
	return args;
}

function copyToTemp(file) {
	const dir = mkdtempSync(join(tmpdir(), "pi-runner-"));
	const target = join(dir, basename(file));
	copyFileSync(file, target);
	return { path: target, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function peakRssMb() {
	return process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB
}

/** Flatten getTree() into rows in pre-order without recursion. Children keep pi's order (sorted by
 * timestamp). A node object reached a second time (possible only with duplicate ids) is emitted
 * again but not descended into, so a malformed file cannot loop. */
function treeRows(roots) {
	const rows = [];
	const seen = new Set();
	const stack = [];
	for (let i = roots.length - 1; i >= 0; i--) stack.push([roots[i], -1]);
	while (stack.length > 0) {
		const [node, parent] = stack.pop();
		const index = rows.length;
		rows.push({
			id: node.entry.id ?? null,
			parent,
			label: node.label ?? null,
			labelTimestamp: node.labelTimestamp ?? null,
		});
		if (seen.has(node)) continue;
		seen.add(node);
		for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], index]);
	}
	return rows;
}

function branchMessages(branch) {
	const out = [];
	for (const e of branch) if (e.type === "message" && e.message) out.push(e.message);
	return out;
}

// ---------------------------------------------------------------------------------------------
// bench

const OPS = ["open", "context", "tree", "branch", "prepare", "estimate", "estimate_all"];

async function bench(file, args) {
	const { sm: smMod, compaction, version } = await loadPi();
	const { SessionManager } = smMod;
	const repeat = Number(args.repeat ?? 5);
	const warmup = Number(args.warmup ?? 1);
	const ops = !args.op || args.op === "all" ? OPS : String(args.op).split(",");
	const copy = copyToTemp(file);
	const rssBefore = peakRssMb();
	const results = [];
	try {
		let sm = null;
		const t0 = performance.now();
		sm = SessionManager.open(copy.path);
		const firstOpenMs = performance.now() - t0;
		const branch = sm.getBranch();
		const messages = branchMessages(branch);
		for (const op of ops) {
			let fn;
			switch (op) {
				case "open":
					fn = () => SessionManager.open(copy.path);
					break;
				case "context":
					fn = () => sm.buildSessionContext();
					break;
				case "tree":
					fn = () => sm.getTree();
					break;
				case "branch":
					fn = () => sm.getBranch();
					break;
				case "prepare":
					if (!compaction) continue;
					fn = () => compaction.prepareCompaction(branch, compaction.DEFAULT_COMPACTION_SETTINGS);
					break;
				case "estimate":
					if (!compaction) continue;
					fn = () => compaction.estimateContextTokens(messages);
					break;
				case "estimate_all":
					if (!compaction) continue;
					fn = () => {
						let n = 0;
						for (const m of messages) n += compaction.estimateTokens(m);
						return n;
					};
					break;
				default:
					fail(`unknown op ${op}`);
			}
			const times = [];
			let result;
			// the first call on this process's session, before any warm-up (cold caches)
			const f0 = performance.now();
			result = fn();
			const firstMs = op === "open" ? firstOpenMs : performance.now() - f0;
			for (let i = 0; i < warmup; i++) result = fn();
			for (let i = 0; i < repeat; i++) {
				const s = performance.now();
				result = fn();
				times.push(performance.now() - s);
			}
			results.push({ op, ms: median(times), firstMs, times, peakRssMb: peakRssMb() });
			result = null;
		}
		process.stdout.write(
			`${JSON.stringify({
				impl: "pi",
				version,
				node: process.version,
				file,
				entries: sm.getEntries().length,
				branchLength: branch.length,
				repeat,
				warmup,
				firstOpenMs,
				startupPeakRssMb: rssBefore,
				peakRssMb: peakRssMb(),
				results,
			})}\n`,
		);
	} finally {
		copy.cleanup();
	}
}

// ---------------------------------------------------------------------------------------------
// engine: what a reader of a session does first (bench/engine_bench.py), each step once, in
// this order, on a freshly opened session: wall ms per step, CPU ms (user + system, every
// thread: V8's collector helps on other threads) and the process's peak RSS.

async function engine(file) {
	const { sm: smMod, version } = await loadPi();
	const { SessionManager } = smMod;
	const copy = copyToTemp(file);
	try {
		const cpu0 = process.cpuUsage();
		const steps = {};
		let t = performance.now();
		const sm = SessionManager.open(copy.path);
		steps.open = performance.now() - t;
		t = performance.now();
		sm.buildSessionContext();
		steps.context = performance.now() - t;
		t = performance.now();
		sm.getTree();
		steps.tree = performance.now() - t;
		t = performance.now();
		sm.getBranch();
		steps.branch = performance.now() - t;
		const cpu = process.cpuUsage(cpu0);
		process.stdout.write(
			`${JSON.stringify({ impl: "pi", version, steps, cpuMs: (cpu.user + cpu.system) / 1000, peakRssMb: peakRssMb() })}\n`,
		);
	} finally {
		copy.cleanup();
	}
}

// ---------------------------------------------------------------------------------------------
// dump

function sorted(set) {
	return [...(set ?? [])].sort();
}

function sumTokens(compaction, messages) {
	let n = 0;
	for (const m of messages) n += compaction.estimateTokens(m);
	return n;
}

function describePreparation(compaction, prep) {
	if (!prep) return null;
	return {
		firstKeptEntryId: prep.firstKeptEntryId,
		isSplitTurn: prep.isSplitTurn,
		tokensBefore: prep.tokensBefore,
		messagesToSummarize: prep.messagesToSummarize.length,
		turnPrefixMessages: prep.turnPrefixMessages.length,
		messagesToSummarizeTokens: sumTokens(compaction, prep.messagesToSummarize),
		turnPrefixTokens: sumTokens(compaction, prep.turnPrefixMessages),
		previousSummary: prep.previousSummary ?? null,
		fileOps: {
			read: sorted(prep.fileOps.read),
			written: sorted(prep.fileOps.written),
			edited: sorted(prep.fileOps.edited),
		},
	};
}

function guard(fn) {
	try {
		return fn();
	} catch (e) {
		return { error: String(e?.message ?? e) };
	}
}

async function dump(file, args) {
	const { sm: smMod, compaction, version } = await loadPi();
	const { SessionManager } = smMod;
	const copy = args.inplace ? { path: resolve(file), cleanup: () => {} } : copyToTemp(file);
	const out = { impl: "pi", version, node: process.version, file };
	try {
		let sm;
		try {
			sm = SessionManager.open(copy.path);
		} catch (e) {
			out.error = String(e?.message ?? e);
		}
		const bytes = readFileSync(copy.path);
		out.afterOpen = { size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
		if (!sm) {
			process.stdout.write(`${JSON.stringify(out)}\n`);
			return;
		}
		const branch = sm.getBranch();
		out.header = sm.getHeader();
		out.entries = sm.getEntries();
		out.leafId = sm.getLeafId();
		out.branch = branch.map((e) => e.id);
		out.sessionName = sm.getSessionName() ?? null;
		out.tree = guard(() => treeRows(sm.getTree()));
		out.contextEntries = guard(() => sm.buildContextEntries().map((e) => e.id));
		out.projection = guard(() =>
			sm.buildSessionProjection().entries.map((p) => ({ id: p.sourceEntry.id, messages: p.messages.length })),
		);
		const ctx = guard(() => sm.buildSessionContext());
		out.context = ctx.error ? ctx : { messages: ctx.messages, thinkingLevel: ctx.thinkingLevel, model: ctx.model ?? null };
		if (compaction) {
			const messages = ctx.messages ?? [];
			out.estimate = guard(() => ({
				context: compaction.estimateContextTokens(messages),
				projected: compaction.estimateProjectedContextTokens(sm.buildSessionProjection(), branch),
				perMessage: messages.map((m) => compaction.estimateTokens(m)),
				branchMessages: compaction.estimateContextTokens(branchMessages(branch)),
			}));
			const keeps = String(args.keep ?? "1,100,2000,20000")
				.split(",")
				.map(Number);
			const prepare = { default: guard(() => describePreparation(compaction, compaction.prepareCompaction(branch, compaction.DEFAULT_COMPACTION_SETTINGS))) };
			for (const k of keeps) {
				const settings = { ...compaction.DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: k };
				prepare[String(k)] = guard(() => describePreparation(compaction, compaction.prepareCompaction(branch, settings)));
			}
			out.defaultCompactionSettings = compaction.DEFAULT_COMPACTION_SETTINGS;
			out.prepareCompaction = prepare;
		}
		process.stdout.write(`${JSON.stringify(out)}\n`);
	} finally {
		copy.cleanup();
	}
}

// ---------------------------------------------------------------------------------------------

async function info() {
	const { sm, compaction, version } = await loadPi();
	let mainEntry;
	try {
		await import(pathToFileURL(join(PKG, "dist", "index.js")).href);
		mainEntry = "ok";
	} catch (e) {
		mainEntry = `fails: ${String(e?.message ?? e)}`;
	}
	process.stdout.write(
		`${JSON.stringify(
			{
				version,
				node: process.version,
				package: PKG,
				mainEntry,
				sessionManagerModule: SESSION_MANAGER_JS,
				sessionManagerExports: Object.keys(sm).sort(),
				compactionModule: COMPACTION_JS,
				compactionExports: compaction ? Object.keys(compaction).sort() : null,
			},
			null,
			2,
		)}\n`,
	);
}

const args = parseArgs(process.argv.slice(2));
const [mode, file] = args._;
if (mode === "info") await info();
else if (mode === "bench" || mode === "dump" || mode === "engine") {
	if (!file) fail(`usage: run.mjs ${mode} <session.jsonl>`);
	if (!existsSync(file)) fail(`no such file: ${file}`);
	if (mode === "bench") await bench(file, args);
	else if (mode === "engine") await engine(file);
	else await dump(file, args);
} else fail("usage: run.mjs info | bench <file> [--op ...] [--repeat N] | engine <file> | dump <file> [--inplace] [--keep 1,100]");
