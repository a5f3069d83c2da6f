// bench/e2b-ci-sdk.mjs: section (l) of bench/run.sh (bench/remote.sh): a
// cell through the official code interpreter SDK (@e2b/code-interpreter,
// pinned in tests/sdk) in a warm context, against a fresh interpreter per
// call through the official E2B SDK's commands.run, both on one sandbox of
// the same server (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY). Two pairs: a
// trivial cell ('1 + 1' against python3 -c 'print(1 + 1)'), and one that
// uses pandas (imported by the context's first cell, against python3 -c
// that imports it). $RUNS calls each, after one warm-up call each,
// alternated so drift hits both alike; prints the medians and the ratio
// (cell / command). Exits non-zero if a call fails or answers wrong.
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";

const require = createRequire(new URL("../tests/sdk/", import.meta.url));
const { Sandbox } = require("@e2b/code-interpreter");

const runs = Number(process.env.RUNS || 20);
const median = (a) => {
	const s = [...a].sort((x, y) => x - y);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const sbx = await Sandbox.create({ timeoutMs: 300_000 });
let ok = true;
try {
	const pair = async (label, code, want, cmd) => {
		const cell = async () => {
			const e = await sbx.runCode(code);
			ok &&= e.text === want;
		};
		const command = async () => {
			const r = await sbx.commands.run(cmd);
			ok &&= r.stdout === `${want}\n`;
		};
		await cell();
		await command();
		const tc = [], tr = [];
		for (let k = 0; k < runs; k++) {
			let t = performance.now();
			await cell();
			tc.push(performance.now() - t);
			t = performance.now();
			await command();
			tr.push(performance.now() - t);
		}
		const c = median(tc), r = median(tr);
		console.log(`(l) ${label}: runCode in a warm context ${c.toFixed(1)} ms  commands.run ${r.toFixed(1)} ms  ratio ${(c / r).toFixed(2)}`);
	};
	await pair("trivial", "1 + 1", "2", "python3 -c 'print(1 + 1)'");
	await pair("pandas", "import pandas as pd\nlen(pd.DataFrame({'a': [1, 2, 3]}))", "3",
		"python3 -c 'import pandas as pd; print(len(pd.DataFrame({\"a\": [1, 2, 3]})))'");
} finally {
	await sbx.kill();
}
process.exit(ok ? 0 : 1);
