// bench/e2b-sdk.mjs: the peer of bench (h): one sandbox through the official
// E2B JavaScript SDK (pinned in tests/sdk): create, run `true`, kill. The
// environment points it at the server under test (E2B_API_URL,
// E2B_SANDBOX_URL, E2B_API_KEY). Exits non-zero if any step fails.
import { createRequire } from "node:module";

const require = createRequire(new URL("../tests/sdk/", import.meta.url));
const { Sandbox } = require("e2b");

const sbx = await Sandbox.create({ timeoutMs: 60_000 });
const r = await sbx.commands.run("true");
await sbx.kill();
process.exit(r.exitCode === 0 ? 0 : 1);
