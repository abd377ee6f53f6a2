// llamacpp.mjs: the llama.cpp side of the Llama example's benchmark pairs
// (bench_llamacpp_test.go). It loads one GGUF file with node-llama-cpp
// (llama.cpp's prebuilt CPU libraries, from the npm package installed by
// `make llamacpp` into a cache outside the repository) and answers
// commands on standard input, one a line, timing only llama.cpp's work:
//
//	pp N      clear the context, evaluate N prompt tokens       -> "ok <ns>"
//	tg P N    clear, evaluate P prompt tokens (untimed), then
//	          generate N tokens greedily, one at a time         -> "ok <ns>"
//	quit
//
// Usage: node llamacpp.mjs <node-llama-cpp dir> <model.gguf> <threads> <ctx> <batch>
// Prompt tokens are drawn from a fixed generator below the vocabulary size.
// Written for go-ggml.
import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, modelPath, threads, ctxSize, batch] = process.argv.slice(2);
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(join(dir, "node_modules", "node-llama-cpp", "dist", "index.js")).href);

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const context = await model.createContext({
	contextSize: Number(ctxSize), batchSize: Number(batch), threads: Number(threads), sequences: 1,
});
const seq = context.getSequence();
const vocab = model.tokens.vocabSize ?? 256;

let state = 12345;
function tokens(n) {
	const out = [];
	for (let i = 0; i < n; i++) {
		state = (state * 1103515245 + 12345) % 2147483648;
		out.push(state % vocab);
	}
	return out;
}

async function pp(n) {
	await seq.clearHistory();
	const t = tokens(n);
	const t0 = process.hrtime.bigint();
	await seq.evaluateWithoutGeneratingNewTokens(t);
	return process.hrtime.bigint() - t0;
}

async function tg(p, n) {
	await seq.clearHistory();
	const prompt = tokens(p);
	await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(0, p - 1));
	let k = 0;
	const t0 = process.hrtime.bigint();
	// The last prompt token is evaluated with the first generated one's
	// sampling: N decodes of one token each, as on the Go side.
	for await (const _ of seq.evaluate([prompt[p - 1]], { temperature: 0 })) {
		if (++k >= n) break;
	}
	return process.hrtime.bigint() - t0;
}

console.log(`ready ${llama.systemInfo ?? ""}`.split("\n")[0]);
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
	const [cmd, a, b] = line.trim().split(/\s+/);
	try {
		if (cmd === "pp") console.log(`ok ${await pp(Number(a))}`);
		else if (cmd === "tg") console.log(`ok ${await tg(Number(a), Number(b))}`);
		else if (cmd === "quit") break;
		else console.log(`error unknown command ${cmd}`);
	} catch (e) {
		console.log(`error ${String(e).replace(/\n/g, " ")}`);
	}
}
await context.dispose();
await model.dispose();
process.exit(0);
