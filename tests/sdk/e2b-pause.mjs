// tests/sdk/e2b-pause.mjs: pause and resume with the official E2B JavaScript
// SDK (npm e2b, pinned in package.json) against `sandboxio serve --api e2b`:
// Sandbox.pause (and betaPause) freezes a sandbox, getInfo and list with a
// state filter say "paused", a command on it fails with the server's error,
// Sandbox.connect resumes it with its files, a sandbox made with
// lifecycle.onTimeout "pause" is paused at its timeout instead of killed,
// and kill removes a paused sandbox.
//
// Waits are for an event (a state the server reports), each under a hang
// guard; nothing is timed.
//
// Run by tests/sdk/run-e2b.sh (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY,
// SBX_E2B_TENANT). Prints one line per check and exits non-zero when any
// failed.
import { Sandbox } from 'e2b'
import { check, finish, requireE2bEnv, step, thrown } from './lib.mjs'

requireE2bEnv()
const tenant = process.env.SBX_E2B_TENANT
const suite = `pause-${process.pid}`
const HANG_GUARD_MS = 120_000

const metadata = { suite, 'io.sandboxio.tenant': tenant }

async function listed(state) {
	const p = Sandbox.list({ query: { state: [state], metadata: { suite } } })
	const ids = []
	while (p.hasNext)
		for (const s of await p.nextItems())
			ids.push(s.sandboxId)
	return ids
}

// Polls getInfo until the state is want (an event), under the hang guard.
async function until(id, want) {
	const end = Date.now() + HANG_GUARD_MS
	for (;;) {
		const info = await Sandbox.getInfo(id)
		if (info.state === want || Date.now() > end)
			return info.state
		await new Promise((r) => setTimeout(r, 250))
	}
}

const sbx = await Sandbox.create({ metadata, timeoutMs: 600_000 })

await step('pause, state, refused commands, connect',
	['Sandbox.pause', 'Sandbox.betaPause', 'Sandbox.getInfo', 'Sandbox.list', 'Sandbox.connect',
		'Sandbox.setTimeout while paused'],
	async () => {
	await sbx.files.write('/home/user/kept.txt', 'kept across the pause\n')
	const r = await sbx.commands.run('echo before')
	check('a command runs before the pause', r.stdout === 'before\n', JSON.stringify(r))

	check('pause answers true', (await sbx.pause()) === true)
	check('a second pause answers false (409: already paused)', (await sbx.betaPause()) === false)
	const info = await sbx.getInfo()
	check('getInfo says paused', info.state === 'paused', info.state)
	check('list state=paused has it', (await listed('paused')).includes(sbx.sandboxId))
	check('list state=running has it not', !(await listed('running')).includes(sbx.sandboxId))

	const e = await thrown(() => sbx.commands.run('echo during', { requestTimeoutMs: 30_000 }))
	// The server answers envd's 502 (naming the state in its body), which
	// the SDK reads as a sandbox it cannot reach, as it reads E2B's own.
	check('a command on a paused sandbox fails with the SDK\'s error for an unreachable sandbox',
		e !== undefined && e.name === 'SandboxNotFoundError', e && `${e.name}: ${e.message}`)
	const fe = await thrown(() => sbx.files.read('/home/user/kept.txt'))
	check('a file read on a paused sandbox fails', fe !== undefined, fe && fe.message)
	// A timeout set while paused is the one it gets once resumed: the
	// pause keeps its own bound, which no timeout moves.
	const bound = (await sbx.getInfo()).endAt
	await Sandbox.setTimeout(sbx.sandboxId, 30_000)
	const moved = (await sbx.getInfo()).endAt
	check('a timeout set while paused leaves the pause bound where it was',
		moved.getTime() === bound.getTime(), `${bound.toISOString()} -> ${moved.toISOString()}`)

	// Within the lifetime fixed at create (600 s), whatever time went by.
	const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 300_000 })
	const after = await again.getInfo()
	check('connect resumes it: running', after.state === 'running', after.state)
	check('the file survived', (await again.files.read('/home/user/kept.txt')) === 'kept across the pause\n')
	const r2 = await again.commands.run('echo after')
	check('commands run after the resume', r2.stdout === 'after\n', JSON.stringify(r2))
	check('list state=running has it again', (await listed('running')).includes(sbx.sandboxId))
})

await step('kill of a paused sandbox removes it', ['Sandbox.kill'], async () => {
	check('paused again', (await sbx.pause()) === true)
	check('kill answers true', (await sbx.kill()) === true)
	const e = await thrown(() => Sandbox.getInfo(sbx.sandboxId))
	check('gone: getInfo is not found', e !== undefined && /not found/i.test(e.message), e && e.message)
	const ce = await thrown(() => Sandbox.connect(sbx.sandboxId))
	check('connect of a removed sandbox: not found', ce !== undefined, ce && ce.message)
})

await step('lifecycle onTimeout pause: paused at its timeout, not killed',
	['Sandbox.create lifecycle.onTimeout pause'], async () => {
	// The timeout counts from before the create, so a short one could pass
	// during a slow create and the write meet a paused sandbox: it is
	// shortened once the file is written.
	const ap = await Sandbox.create({ metadata, timeoutMs: 600_000, lifecycle: { onTimeout: 'pause' } })
	try {
		await ap.files.write('/home/user/auto.txt', 'auto\n')
		await ap.setTimeout(1_000)
		const st = await until(ap.sandboxId, 'paused')
		check('its timeout paused it', st === 'paused', st)
		const back = await Sandbox.connect(ap.sandboxId, { timeoutMs: 600_000 })
		check('connect resumes it, file and all',
			(await back.files.read('/home/user/auto.txt')) === 'auto\n')
		const info = await back.getInfo()
		check('running again after connect', info.state === 'running', info.state)
	} finally {
		await ap.kill()
	}
})

finish()
