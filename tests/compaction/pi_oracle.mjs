#!/usr/bin/env node
// Differential-test oracle: answers compaction questions with pi's own 1.6.0 modules.
//
// Reads a JSON array of requests on stdin and writes a JSON array of answers on stdout, one per
// request, in order. Each request is {op, ...}; an answer is {ok: value} or {error: message}.
// pi is looked up in $PI_PKG_DIR or in bench/.pi (installed by bench/pi_runner/setup.sh); exit
// code 3 means it is not installed. Nothing from pi is copied here: its modules are imported.

import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(
	process.env.PI_PKG_DIR ??
		join(here, "..", "..", "bench", ".pi", "node_modules", "@earendil-works", "pi-coding-agent"),
);
const core = join(pkg, "dist", "core");
if (!existsSync(join(core, "compaction", "index.js"))) {
	process.stderr.write(`pi_oracle: pi not installed at ${pkg}\n`);
	process.exit(3);
}
const load = (rel) => import(pathToFileURL(join(core, rel)).href);
const compaction = await load("compaction/index.js");
const sessions = await load("session-manager.js");
const messagesMod = await load("messages.js");

const setToArray = (s) => [...(s ?? [])];

function describePreparation(p) {
	if (!p) return null;
	return {
		firstKeptEntryId: p.firstKeptEntryId,
		messagesToSummarize: p.messagesToSummarize,
		turnPrefixMessages: p.turnPrefixMessages,
		isSplitTurn: p.isSplitTurn,
		tokensBefore: p.tokensBefore,
		previousSummary: p.previousSummary ?? null,
		fileOps: { read: setToArray(p.fileOps.read), written: setToArray(p.fileOps.written), edited: setToArray(p.fileOps.edited) },
	};
}

// A scripted stream function: records each request and answers from the given replies.
function scriptedStream(replies, requests) {
	let i = 0;
	return async (model, context, options) => {
		requests.push({
			systemPrompt: context.systemPrompt ?? null,
			messages: context.messages,
			reasoning: options.reasoning ?? null,
			maxTokens: options.maxTokens ?? null,
			cacheRetention: options.cacheRetention ?? null,
			hasSessionId: typeof options.sessionId === "string",
		});
		const reply = replies[Math.min(i++, replies.length - 1)];
		return { result: async () => reply };
	};
}

class MiniSession {
	constructor(entries) {
		this.byId = new Map(entries.map((e) => [e.id, e]));
	}
	getEntry(id) {
		return this.byId.get(id);
	}
	getBranch(fromId) {
		const path = [];
		let cur = this.byId.get(fromId);
		while (cur) {
			path.unshift(cur);
			cur = cur.parentId ? this.byId.get(cur.parentId) : undefined;
		}
		return path;
	}
}

async function answer(req) {
	switch (req.op) {
		case "estimateTokens":
			return req.messages.map((m) => compaction.estimateTokens(m));
		case "estimateContextTokens":
			return compaction.estimateContextTokens(req.messages);
		case "estimateProjected": {
			const projection = sessions.buildSessionProjection(req.entries);
			return compaction.estimateProjectedContextTokens(projection, req.entries);
		}
		case "serialize":
			return compaction.serializeConversation(messagesMod.convertToLlm(req.messages));
		case "findCutPoint":
			return compaction.findCutPoint(req.entries, req.start, req.end, req.keep);
		case "findTurnStartIndex":
			return compaction.findTurnStartIndex(req.entries, req.index, req.start);
		case "prepare":
			return describePreparation(compaction.prepareCompaction(req.entries, req.settings));
		case "prepareBranch": {
			const p = compaction.prepareBranchEntries(req.entries, req.budget ?? 0);
			return {
				messages: p.messages,
				totalTokens: p.totalTokens,
				fileOps: { read: setToArray(p.fileOps.read), written: setToArray(p.fileOps.written), edited: setToArray(p.fileOps.edited) },
			};
		}
		case "collect": {
			const r = compaction.collectEntriesForBranchSummary(new MiniSession(req.entries), req.oldLeafId, req.targetId);
			return { entries: r.entries.map((e) => e.id), commonAncestorId: r.commonAncestorId };
		}
		case "fileLists": {
			const ops = { read: new Set(req.read), written: new Set(req.written), edited: new Set(req.edited) };
			return compaction.computeFileLists(ops);
		}
		case "compact": {
			const requests = [];
			const p = req.preparation;
			const prep = {
				...p,
				fileOps: { read: new Set(p.fileOps.read), written: new Set(p.fileOps.written), edited: new Set(p.fileOps.edited) },
			};
			const streamFn = scriptedStream(req.replies, requests);
			try {
				const result = await compaction.compact(prep, req.model, undefined, undefined, req.customInstructions, undefined, req.thinkingLevel, streamFn);
				return { result, requests };
			} catch (e) {
				return { thrown: String(e?.message ?? e), requests };
			}
		}
		case "branchSummary": {
			const requests = [];
			const streamFn = scriptedStream(req.replies, requests);
			const result = await compaction.generateBranchSummary(req.entries, {
				model: req.model,
				signal: new AbortController().signal,
				thinkingLevel: req.thinkingLevel,
				customInstructions: req.customInstructions,
				replaceInstructions: req.replaceInstructions,
				reserveTokens: req.reserveTokens,
				streamFn,
			});
			return { result, requests };
		}
		default:
			throw new Error(`unknown op ${req.op}`);
	}
}

const input = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const req of input) {
	try {
		out.push({ ok: await answer(req) });
	} catch (e) {
		out.push({ error: String(e?.message ?? e) });
	}
}
process.stdout.write(JSON.stringify(out));
