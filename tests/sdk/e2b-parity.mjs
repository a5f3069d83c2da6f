// tests/sdk/e2b-parity.mjs: the official E2B JavaScript SDK (npm e2b,
// pinned in package.json) against `sandboxio serve --api e2b`, for the calls
// past the basic flow of e2b.mjs: the envd filesystem service (list with
// depth, getInfo with envd's entry metadata, exists, makeDir, rename,
// remove) and the REST API's list order, filters and pages, metrics,
// template existence, gzip uploads and signed file URLs.
//
// Run by tests/sdk/run-e2b.sh after e2b.mjs, with the same environment
// (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY, SBX_E2B_TENANT). Prints one
// line per check, then the number of distinct SDK calls it covered, and
// exits non-zero when any check failed.
import {
	FileNotFoundError,
	FileType,
	InvalidArgumentError,
	Sandbox,
	TimeoutError,
} from 'e2b'

const tenant = process.env.SBX_E2B_TENANT
const suite = `parity-${process.pid}`
let passed = 0
let failed = 0
const covered = new Set()

function check(name, cond, detail) {
	if (cond) {
		passed++
		console.log(`ok   ${name}`)
	} else {
		failed++
		console.log(`FAIL ${name}${detail === undefined ? '' : `: ${detail}`}`)
	}
}

// Runs fn; a throw is a failed check rather than the end of the proof.
// calls: the SDK calls the step covers (counted when it passes).
async function step(name, calls, fn) {
	const before = failed
	try {
		await fn()
	} catch (e) {
		failed++
		console.log(`FAIL ${name}: threw ${e && e.name}: ${e && e.message}`)
	}
	if (failed === before)
		for (const c of calls)
			covered.add(c)
}

async function thrown(fn) {
	try {
		await fn()
	} catch (e) {
		return e
	}
	return undefined
}

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY', 'SBX_E2B_TENANT'])
	if (!process.env[v]) {
		console.log(`FAIL ${v} is not set (run tests/sdk/run-e2b.sh)`)
		process.exit(1)
	}

const metadata = { suite, 'io.sandboxio.tenant': tenant }
const sbx = await Sandbox.create({ metadata, timeoutMs: 300_000 })

// ===== Filesystem =====

await step('files.makeDir', ['files.makeDir'], async () => {
	check('makeDir of a new nested directory: true', (await sbx.files.makeDir('/home/user/p/q/r')) === true)
	check('makeDir of an existing directory: false', (await sbx.files.makeDir('/home/user/p/q')) === false)
	await sbx.files.write('/home/user/p/file.txt', 'x')
	const e = await thrown(() => sbx.files.makeDir('/home/user/p/file.txt'))
	check('makeDir over a file: InvalidArgumentError', e instanceof InvalidArgumentError,
		e && `${e.name}: ${e.message}`)
})

await step('files.getInfo', ['files.getInfo'], async () => {
	const before = Date.now()
	await sbx.files.write('/home/user/info.txt', 'twelve bytes')
	await sbx.commands.run('chmod 640 /workspace/info.txt && ln -s info.txt /workspace/link')
	const i = await sbx.files.getInfo('/home/user/info.txt')
	// The owner's name, or its number when the image has none for it.
	const user = (await sbx.commands.run('getent passwd "$(id -u)" | cut -d: -f1 | grep . || id -u'))
		.stdout.trim()
	check('getInfo of a file: name, type, path, size, mode, permissions, owner, group',
		i.name === 'info.txt' && i.type === FileType.FILE && i.path === '/workspace/info.txt' &&
			i.size === 12 && i.mode === 0o640 && i.permissions === '-rw-r-----' &&
			i.owner === user && typeof i.group === 'string' && i.group.length > 0,
		JSON.stringify(i))
	check('getInfo: the modified time is the write\'s',
		i.modifiedTime instanceof Date && Math.abs(i.modifiedTime.getTime() - before) < 120_000,
		i.modifiedTime)
	const d = await sbx.files.getInfo('/home/user/p')
	check('getInfo of a directory: type dir, permissions drwx',
		d.type === FileType.DIR && d.permissions.startsWith('d'), JSON.stringify(d))
	const l = await sbx.files.getInfo('/home/user/link')
	check('getInfo of a symlink: type symlink, its target',
		l.type === FileType.SYMLINK && l.symlinkTarget === '/workspace/info.txt' &&
			l.permissions.startsWith('L'),
		JSON.stringify(l))
	const e = await thrown(() => sbx.files.getInfo('/home/user/nothing-here'))
	check('getInfo of a missing path: FileNotFoundError', e instanceof FileNotFoundError,
		e && `${e.name}: ${e.message}`)
})

await step('files.exists', ['files.exists'], async () => {
	check('exists of a file: true', (await sbx.files.exists('/home/user/info.txt')) === true)
	check('exists of a missing path: false', (await sbx.files.exists('/home/user/nope')) === false)
})

await step('files.list', ['files.list'], async () => {
	await sbx.files.write('/home/user/p/q/deep.txt', 'deep')
	const one = await sbx.files.list('/home/user/p')
	check('list (depth 1): the direct entries, sorted, with types',
		JSON.stringify(one.map((e) => `${e.name}:${e.type}`)) === '["file.txt:file","q:dir"]',
		JSON.stringify(one.map((e) => e.path)))
	const three = await sbx.files.list('/home/user/p', { depth: 3 })
	check('list depth 3: entries to that depth',
		JSON.stringify(three.map((e) => e.path)) ===
			'["/workspace/p/file.txt","/workspace/p/q","/workspace/p/q/deep.txt","/workspace/p/q/r"]',
		JSON.stringify(three.map((e) => e.path)))
	const e = await thrown(() => sbx.files.list('/home/user/missing-dir'))
	check('list of a missing directory: FileNotFoundError', e instanceof FileNotFoundError,
		e && `${e.name}: ${e.message}`)
	const f = await thrown(() => sbx.files.list('/home/user/info.txt'))
	check('list of a file: InvalidArgumentError', f instanceof InvalidArgumentError,
		f && `${f.name}: ${f.message}`)
})

await step('files.rename', ['files.rename'], async () => {
	const r = await sbx.files.rename('/home/user/info.txt', '/home/user/moved/info2.txt')
	check('rename into a new directory: the entry at its new path',
		r.name === 'info2.txt' && r.path === '/workspace/moved/info2.txt' && r.size === 12,
		JSON.stringify(r))
	check('the old path is gone', (await sbx.files.exists('/home/user/info.txt')) === false)
	const t = await sbx.files.rename('/home/user/moved/info2.txt', '/tmp/info3.txt')
	check('rename across file systems (/workspace to /tmp)',
		t.path === '/tmp/info3.txt' && (await sbx.files.read('/tmp/info3.txt')) === 'twelve bytes',
		JSON.stringify(t))
	const e = await thrown(() => sbx.files.rename('/home/user/not-there', '/home/user/x'))
	check('rename of a missing path: FileNotFoundError', e instanceof FileNotFoundError,
		e && `${e.name}: ${e.message}`)
})

await step('files.remove', ['files.remove'], async () => {
	await sbx.files.remove('/home/user/p')
	check('remove of a directory tree', (await sbx.files.exists('/home/user/p')) === false)
	await sbx.files.remove('/tmp/info3.txt')
	check('remove of a file', (await sbx.files.exists('/tmp/info3.txt')) === false)
	const e = await thrown(() => sbx.files.remove('/etc/passwd'))
	check('remove outside the writable places is refused (the sandbox user\'s rules)',
		e && /not permitted|read-only/.test(e.message) &&
			(await sbx.files.exists('/etc/passwd')) === true,
		e && `${e.name}: ${e.message}`)
})

// ===== Commands =====

await step('a sandbox killed mid-command', ['commands.run (killed mid-command)'], async () => {
	const other = await Sandbox.create({ metadata, timeoutMs: 120_000 })
	const h = await other.commands.run('echo started; sleep 600', { background: true })
	// The command runs once its output is there; then the sandbox goes.
	for (let i = 0; i < 600 && !h.stdout.includes('started'); i++)
		await new Promise((r) => setTimeout(r, 100))
	await Sandbox.kill(other.sandboxId)
	const e = await thrown(() => h.wait())
	check('killing the sandbox mid-command: TimeoutError, as on E2B (not CommandExitError)',
		h.stdout === 'started\n' && e instanceof TimeoutError, e && `${e.name}: ${e.message}`)
})

await sbx.kill()
console.log(`${covered.size} SDK calls covered: ${[...covered].sort().join(', ')}`)
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
