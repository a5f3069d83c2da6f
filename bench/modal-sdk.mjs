// bench/modal-sdk.mjs: the peer of bench (i): one sandbox through the
// official Modal JavaScript SDK (pinned in tests/sdk): get the app, create a
// sandbox from the default image, exec `true`, terminate. The environment
// points it at the double (MODAL_SERVER_URL, MODAL_TOKEN_ID,
// MODAL_TOKEN_SECRET). Exits non-zero if any step fails.
import { createRequire } from "node:module";

const require = createRequire(new URL("../tests/sdk/", import.meta.url));
const { ModalClient } = require("modal");

const client = new ModalClient();
const app = await client.apps.fromName("sandboxio", { createIfMissing: true });
const image = client.images.fromRegistry("sandboxio/python:3.11");
const sb = await client.sandboxes.create(app, image, { timeoutMs: 60_000 });
const p = await sb.exec(["true"]);
const code = await p.wait();
await sb.terminate();
client.close?.();
process.exit(code === 0 ? 0 : 1);
