// modal.mjs: proves the Modal double (tests/fakes/modal/run-double) with
// Modal's official JS SDK (npm "modal", pinned in package.json): the SDK,
// unchanged, pointed at the double with MODAL_SERVER_URL, MODAL_TOKEN_ID and
// MODAL_TOKEN_SECRET, must get an app, build an image from a registry tag (a
// local one), create a sandbox, run commands with their output, exit codes
// and variables, see a timed-out exec, list and terminate, and be refused
// with a wrong token pair. Prints one line per check; exits 1 if any failed.
// Run by run-modal.sh, which starts and stops the double.
import { ModalClient } from "modal";

const IMAGE = process.env.SBX_MODAL_IMAGE || "sandboxio/python:3.11";
let passed = 0;
let failed = 0;

function check(name, ok, detail = "") {
  if (ok) {
    passed++;
    console.log(`ok - ${name}`);
  } else {
    failed++;
    console.log(`not ok - ${name}${detail ? ": " + detail : ""}`);
  }
}

async function step(name, fn) {
  try {
    await fn();
  } catch (err) {
    check(name, false, `threw ${err?.constructor?.name}: ${err?.message}`);
  }
}

const show = (v) => JSON.stringify(v);

async function main() {
  for (const v of ["MODAL_SERVER_URL", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"]) {
    if (!process.env[v]) {
      console.log(`not ok - environment: ${v} is not set`);
      return 1;
    }
  }
  const client = new ModalClient();
  let app;
  let sb;

  await step("app get-or-create", async () => {
    app = await client.apps.fromName("sandboxio-sdk-proof", { createIfMissing: true });
    check("app get-or-create", /^ap-[0-9A-Za-z]{22}$/.test(app.appId), `app id ${app.appId}`);
  });
  await step("app lookup of a missing app", async () => {
    let err;
    try {
      await client.apps.fromName("sandboxio-sdk-proof-missing");
    } catch (e) {
      err = e;
    }
    check("app lookup of a missing app", err?.constructor?.name === "NotFoundError", `got ${err}`);
  });
  if (!app) return 1;

  await step("sandbox create", async () => {
    const image = client.images.fromRegistry(IMAGE);
    sb = await client.sandboxes.create(app, image, {
      timeoutMs: 600_000,
      tags: { suite: "sdk-proof" },
    });
    check("image from registry", /^im-[0-9A-Za-z]{22}$/.test(image.imageId), `image id ${image.imageId}`);
    check("sandbox create", /^sb-[0-9A-Za-z]{22}$/.test(sb.sandboxId), `sandbox id ${sb.sandboxId}`);
  });
  await step("image that is not in the engine", async () => {
    let err;
    try {
      await client.images.fromRegistry("sandboxio/no-such-image:0").build(app);
    } catch (e) {
      err = e;
    }
    check("image that is not in the engine fails, naming it",
      String(err?.message).includes("sandboxio/no-such-image:0"), `got ${err?.message}`);
  });
  if (!sb) return 1;

  await step("exec output and exit code", async () => {
    const p = await sb.exec(["sh", "-c", "echo hi; echo err >&2; exit 3"]);
    const [out, err] = await Promise.all([p.stdout.readText(), p.stderr.readText()]);
    const code = await p.wait();
    check("exec stdout", out === "hi\n", `stdout ${show(out)}`);
    check("exec stderr", err === "err\n", `stderr ${show(err)}`);
    check("exec exit code", code === 3, `exit code ${code}`);
  });
  await step("exec env", async () => {
    const p = await sb.exec(["sh", "-c", 'printf %s "$SBX_PROOF_VAR"'], {
      env: { SBX_PROOF_VAR: "value-of-an-exec-variable" },
    });
    const out = await p.stdout.readText();
    const code = await p.wait();
    check("exec env variable reaches the program", out === "value-of-an-exec-variable" && code === 0,
      `stdout ${show(out)}, exit code ${code}`);
  });
  await step("exec secret", async () => {
    const secret = await client.secrets.fromObject({ SBX_PROOF_SECRET: "s3cret-proof-value" });
    const p = await sb.exec(["sh", "-c", 'test "$SBX_PROOF_SECRET" = s3cret-proof-value'], {
      secrets: [secret],
    });
    const code = await p.wait();
    check("exec secret reaches the program", code === 0, `exit code ${code}`);
  });
  await step("exec workdir", async () => {
    const p = await sb.exec(["pwd"], { workdir: "/tmp" });
    const out = await p.stdout.readText();
    check("exec workdir", out === "/tmp\n", `stdout ${show(out)}`);
  });
  await step("exec timeout", async () => {
    const p = await sb.exec(["sleep", "60"], { timeoutMs: 1000, stdout: "ignore", stderr: "ignore" });
    const code = await p.wait();
    check("exec killed at its timeout exits 137 (signal 9)", code === 137, `exit code ${code}`);
  });
  await step("sandbox list by tag", async () => {
    const ids = [];
    for await (const s of client.sandboxes.list({ tags: { suite: "sdk-proof" } })) ids.push(s.sandboxId);
    check("sandbox list by tag", ids.includes(sb.sandboxId), `listed ${show(ids)}`);
  });
  await step("sandbox poll while running", async () => {
    const code = await sb.poll();
    check("sandbox poll while running", code === null, `poll ${code}`);
  });
  await step("sandbox terminate", async () => {
    const id = sb.sandboxId;
    await sb.terminate();
    const again = await client.sandboxes.fromId(id);
    const code = await again.poll();
    check("sandbox terminate (poll then says 137)", code === 137, `poll ${code}`);
  });

  await step("wrong token pair", async () => {
    const bad = new ModalClient({ tokenId: "ak-wrong", tokenSecret: "as-wrong" });
    let err;
    try {
      await bad.apps.fromName("sandboxio-sdk-proof", { createIfMissing: true });
    } catch (e) {
      err = e;
    }
    // nice-grpc's ClientError: code 16 is UNAUTHENTICATED.
    check("wrong token pair is refused (UNAUTHENTICATED)", err?.code === 16, `got ${err}`);
    bad.close();
  });
  client.close();
  return failed ? 1 : 0;
}

const rc = await main().catch((err) => {
  console.log(`not ok - unexpected ${err?.stack || err}`);
  return 1;
});
console.log(`${passed} passed, ${failed} failed`);
process.exit(rc || (failed ? 1 : 0));
