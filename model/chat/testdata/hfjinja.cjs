// hfjinja.cjs renders chat templates with Hugging Face's @huggingface/jinja,
// the reference for package chat's tests.
//
// Usage: node hfjinja.cjs NODE_MODULES_DIR
//
// Reads one JSON request a line on stdin:
//   {"template": "...", "messages": [{"role": "...", "content": "..."}],
//    "add_generation_prompt": true, "bos_token": "...", "eos_token": "...",
//    "vars": {...}}
// and writes one JSON line a request: {"text": "..."} or {"error": "..."}.
"use strict";
const path = require("path");
const readline = require("readline");

const { Template } = require(path.join(process.argv[2], "@huggingface", "jinja"));

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
	if (line === "") return;
	let reply;
	try {
		const req = JSON.parse(line);
		const vars = Object.assign({}, req.vars || {}, {
			messages: req.messages,
			add_generation_prompt: !!req.add_generation_prompt,
			bos_token: req.bos_token,
			eos_token: req.eos_token,
		});
		reply = { text: new Template(req.template).render(vars) };
	} catch (e) {
		reply = { error: String(e && e.message ? e.message : e) };
	}
	process.stdout.write(JSON.stringify(reply) + "\n");
});
