// tests/sdk/e2b.mjs: the official E2B JavaScript SDK (npm e2b, pinned in
// package.json) against `sandboxio serve --api e2b`.
//
// Run by tests/sdk/run-e2b.sh, which starts the server and sets
// E2B_API_URL, E2B_SANDBOX_URL (both the server), E2B_API_KEY (from its key
// file) and SBX_E2B_TENANT (the tenant every sandbox is made under, through
// metadata io.sandboxio.tenant). Nothing else is configured: E2B_DEBUG is
// unset, so the SDK talks to the server exactly as it talks to E2B.
// Prints one line per check and exits non-zero when any failed.
import {
	CommandExitError,
	FileNotFoundError,
	Sandbox,
	SandboxNotFoundError,
	TimeoutError,
} from 'e2b'
import { check, finish, requireE2bEnv, step, thrown } from './lib.mjs'

const tenant = process.env.SBX_E2B_TENANT
const suite = `sdk-${process.pid}`

requireE2bEnv()
check('E2B_DEBUG is not what makes this work', !process.env.E2B_DEBUG)

const metadata = { suite, 'io.sandboxio.tenant': tenant }
let sbx
await step('Sandbox.create', async () => {
	sbx = await Sandbox.create({ metadata, timeoutMs: 120_000 })
	check('Sandbox.create({metadata, timeoutMs}) gives a sandbox', /^[a-z0-9]{20}$/.test(sbx.sandboxId),
		sbx.sandboxId)
})
if (!sbx) {
	finish(1)
}

await step('getInfo', async () => {
	const info = await sbx.getInfo()
	const life = (info.endAt - info.startedAt) / 1000
	check('getInfo: running, its metadata, a 120 s life, 1 CPU, 512 MB',
		info.state === 'running' && info.metadata.suite === suite && life > 118 && life < 122 &&
			info.cpuCount === 1 && info.memoryMB === 512,
		JSON.stringify(info))
})

await step('a failing command', async () => {
	const e = await thrown(() => sbx.commands.run('echo hi; echo err >&2; exit 3'))
	check('commands.run exit 3: CommandExitError with stdout, stderr, exit code',
		e instanceof CommandExitError && e.exitCode === 3 && e.stdout === 'hi\n' &&
			e.stderr === 'err\n',
		e && `${e.name} ${e.exitCode} ${JSON.stringify(e.stdout)} ${JSON.stringify(e.stderr)}`)
})

await step('a command', async () => {
	const r = await sbx.commands.run('echo ok')
	check('commands.run of a successful command: exit 0 and its stdout',
		r.exitCode === 0 && r.stdout === 'ok\n' && r.stderr === '', JSON.stringify(r))
})

await step('streaming', async () => {
	const chunks = []
	const r = await sbx.commands.run('echo a; sleep 1; echo b', { onStdout: (d) => chunks.push(d) })
	check('onStdout sees the output as it comes (two chunks)',
		chunks.length >= 2 && chunks.join('') === 'a\nb\n' && r.stdout === 'a\nb\n',
		JSON.stringify(chunks))
})

await step('envs and cwd', async () => {
	const r = await sbx.commands.run('echo $GREETING; pwd', {
		envs: { GREETING: 'hello' },
		cwd: '/home/user',
	})
	check('envs reach the command; cwd /home/user is /workspace here',
		r.stdout === 'hello\n/workspace\n', JSON.stringify(r.stdout))
})

await step('stdin', async () => {
	const h = await sbx.commands.run('cat; echo end', { stdin: true, background: true })
	const listed = await sbx.commands.list()
	await h.sendStdin('one\n')
	await h.sendStdin('two\n')
	await h.closeStdin()
	const r = await h.wait()
	check('stdin: true, sendStdin twice, closeStdin: the command reads it all',
		listed.some((p) => p.pid === h.pid && p.cmd === '/bin/bash') &&
			r.stdout === 'one\ntwo\nend\n',
		JSON.stringify(r.stdout))
})

await step('a command deadline', async () => {
	const e = await thrown(() => sbx.commands.run('sleep 30', { timeoutMs: 2000 }))
	check('timeoutMs 2000 on sleep 30: TimeoutError', e instanceof TimeoutError, e && e.name)
	const r = await sbx.commands.run('echo still here')
	check('the sandbox outlives a command deadline',
		(await sbx.isRunning()) && r.stdout === 'still here\n', JSON.stringify(r.stdout))
})

await step('files', async () => {
	const w = await sbx.files.write('/home/user/hello.txt', 'hello world')
	const text = await sbx.files.read('/home/user/hello.txt')
	check('files.write then files.read round trip', text === 'hello world' &&
		w.path === '/workspace/hello.txt' && w.name === 'hello.txt', `${JSON.stringify(w)} ${text}`)
	const bytes = new Uint8Array(256)
	for (let i = 0; i < bytes.length; i++)
		bytes[i] = i
	await sbx.files.write('data/all-bytes.bin', bytes.buffer)
	const back = await sbx.files.read('data/all-bytes.bin', { format: 'bytes' })
	check('binary bytes round trip, parent directory made',
		back.length === 256 && back.every((b, i) => b === i), back.length)
	const r = await sbx.commands.run('cat /workspace/hello.txt')
	check('a written file is there for commands', r.stdout === 'hello world')
	const e = await thrown(() => sbx.files.read('/home/user/missing.txt'))
	check('files.read of a missing file: FileNotFoundError', e instanceof FileNotFoundError,
		e && e.name)
})

await step('setTimeout', async () => {
	await sbx.setTimeout(60_000)
	const info = await sbx.getInfo()
	const left = (info.endAt - Date.now()) / 1000
	check('setTimeout(60 s) moves endAt to at most a minute from now', left > 30 && left <= 61, left)
	const e = await thrown(() => sbx.setTimeout(600_000))
	check('setTimeout past the lifetime fixed at create is refused',
		e && /fixed at create/.test(e.message), e && e.message)
})

await step('list', async () => {
	const page = await Sandbox.list({ query: { metadata: { suite } } }).nextItems()
	check('Sandbox.list with a metadata query finds it',
		page.length === 1 && page[0].sandboxId === sbx.sandboxId && page[0].state === 'running',
		JSON.stringify(page.map((s) => s.sandboxId)))
	const none = await Sandbox.list({ query: { metadata: { suite, other: 'x' } } }).nextItems()
	check('a metadata query that does not match finds nothing', none.length === 0, none.length)
})

await step('connect', async () => {
	const again = await Sandbox.connect(sbx.sandboxId)
	const r = await again.commands.run('cat /workspace/hello.txt')
	check('Sandbox.connect(id) reaches the same sandbox', r.stdout === 'hello world')
})

await step('strictness', async () => {
	const e = await thrown(() =>
		Sandbox.create({
			metadata,
			lifecycle: { onTimeout: { action: 'pause', keepMemory: false } },
			timeoutMs: 30_000,
		}),
	)
	check('a create asking to pause without memory on timeout is refused, naming autoPauseMemory',
		e && /autoPauseMemory/.test(e.message), e && e.message)
})

await step('no internet', async () => {
	const closed = await Sandbox.create({ metadata, timeoutMs: 60_000, allowInternetAccess: false })
	const info = await closed.getInfo()
	const r = await closed.commands.run(
		`python3 -c 'import socket,errno
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
try:
  s.connect(("198.51.100.7",9)); print("connected")
except OSError as e: print(errno.errorcode[e.errno])'`,
	)
	check('allowInternetAccess false: no route out (ENETUNREACH)',
		info.allowInternetAccess === false && r.stdout === 'ENETUNREACH\n', r.stdout)
	check('kill() of the second sandbox', (await closed.kill()) === true)
})

await step('kill', async () => {
	check('kill() returns true', (await sbx.kill()) === true)
	const e = await thrown(() => sbx.commands.run('echo after'))
	check('after kill an envd call fails (SandboxNotFoundError)', e instanceof SandboxNotFoundError,
		e && `${e.name}: ${e.message}`)
	check('after kill isRunning() is false', (await sbx.isRunning()) === false)
	const g = await thrown(() => Sandbox.getInfo(sbx.sandboxId))
	check('after kill getInfo fails with SandboxNotFoundError', g instanceof SandboxNotFoundError,
		g && g.name)
	check('a second kill() returns false', (await sbx.kill()) === false)
})

finish()
