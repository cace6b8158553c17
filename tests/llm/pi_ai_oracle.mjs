#!/usr/bin/env node
// Answers questions with pi's own 1.6.0 modules, for tests/llm/test_against_pi_ai.py.
//
//   node pi_ai_oracle.mjs <path to bench/.pi/node_modules/@earendil-works>  < {"op": ..., "cases": [...]}
//
// Prints a JSON array with one answer per case. Date.now() is pinned to 0 so synthetic tool
// results are comparable. Nothing from pi is copied here; its modules are imported from the
// locally installed package (bench/pi_runner/setup.sh), which is never committed.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
const load = (path) => import(pathToFileURL(join(root, path)).href);

const overflow = await load("pi-ai/dist/utils/overflow.js");
const retry = await load("pi-ai/dist/utils/retry.js");
const transform = await load("pi-ai/dist/api/transform-messages.js");
const simple = await load("pi-ai/dist/api/simple-options.js");
const models = await load("pi-ai/dist/models.js");
const estimate = await load("pi-ai/dist/utils/estimate.js");
const transcript = await load("pi-ai/dist/utils/transcript.js");
const messages = await load("pi-coding-agent/dist/core/messages.js");

Date.now = () => 0;

const ops = {
	overflow: (c) => overflow.isContextOverflow(c.message, c.contextWindow),
	recoverable: (c) => overflow.isRecoverableLength(c.message, c.desired),
	retryable: (c) => retry.isRetryableAssistantError(c),
	transform: (c) => transform.transformMessages(c.messages, { input: ["text", "image"], ...c.model }),
	cost: (c) => {
		const usage = structuredClone(c.usage);
		models.calculateCost({ cost: c.cost }, usage);
		return usage.cost;
	},
	estimate: (c) => estimate.estimateContextTokens(c).tokens,
	clamp: (c) => simple.clampMaxTokensToContext({ contextWindow: c.contextWindow }, { messages: c.messages }, c.maxTokens),
	system: (c) => {
		const normalized = transcript.normalizeContext(c).messages;
		return { prompt: transcript.getCurrentSystemPrompt(normalized), tools: transcript.getCurrentTools(normalized) };
	},
	convert: (c) => messages.convertToLlm(c),
};

const request = JSON.parse(readFileSync(0, "utf8"));
const op = ops[request.op];
if (!op) {
	process.stderr.write(`unknown op ${request.op}\n`);
	process.exit(2);
}
process.stdout.write(JSON.stringify(request.cases.map((c) => op(c))));
