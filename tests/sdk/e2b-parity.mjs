// tests/sdk/e2b-parity.mjs: the official E2B JavaScript SDK (npm e2b,
// pinned in package.json) against `sandboxio serve --api e2b`, for the calls
// past the basic flow of e2b.mjs: the envd filesystem service (list with
// depth, getInfo with envd's entry metadata, exists, makeDir, rename,
// remove), streamed stdin, commands.connect and commands.list from a second
// Sandbox object, and the REST API's list order, filters and pages, metrics,
// template existence, gzip uploads and signed file URLs.
//
// Run by tests/sdk/run-e2b.sh after e2b.mjs, with the same environment
// (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY, SBX_E2B_TENANT). Prints one
// line per check, then the number of distinct SDK calls it covered, and
// exits non-zero when any check failed.
import {
	FileNotFoundError,
	FileType,
	FilesystemEventType,
	InvalidArgumentError,
	Sandbox,
	Template,
	TimeoutError,
} from 'e2b'
import { check, finish, requireE2bEnv, step, thrown } from './lib.mjs'

const tenant = process.env.SBX_E2B_TENANT
const suite = `parity-${process.pid}`

requireE2bEnv()

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

await step('files.watchDir', ['files.watchDir'], async () => {
	await sbx.files.makeDir('/home/user/w')
	const events = []
	const seen = (name, type) => events.some((e) => e.name === name && e.type === type)
	const handle = await sbx.files.watchDir('/home/user/w', (e) => events.push(e))
	await sbx.files.write('/home/user/w/a.txt', 'one')
	await sbx.commands.run('echo more >> /workspace/w/a.txt; mv /workspace/w/a.txt /workspace/w/b.txt; chmod 600 /workspace/w/b.txt; rm /workspace/w/b.txt')
	// The events come as they happen; the bound is only a hang guard.
	for (let i = 0; i < 300 && !seen('b.txt', FilesystemEventType.REMOVE); i++)
		await new Promise((r) => setTimeout(r, 100))
	await handle.stop()
	check('watchDir: create, write, rename, chmod and remove events, in order',
		seen('a.txt', FilesystemEventType.CREATE) && seen('a.txt', FilesystemEventType.WRITE) &&
			seen('a.txt', FilesystemEventType.RENAME) && seen('b.txt', FilesystemEventType.CREATE) &&
			seen('b.txt', FilesystemEventType.CHMOD) && seen('b.txt', FilesystemEventType.REMOVE) &&
			events.findIndex((e) => e.type === 'create') < events.findIndex((e) => e.type === 'remove'),
		JSON.stringify(events))
	const rec = []
	const h2 = await sbx.files.watchDir('/home/user/w', (e) => rec.push(e), { recursive: true })
	await sbx.commands.run('mkdir -p /workspace/w/sub && echo x > /workspace/w/sub/deep.txt')
	for (let i = 0; i < 300 && !rec.some((e) => e.name === 'sub/deep.txt'); i++)
		await new Promise((r) => setTimeout(r, 100))
	await h2.stop()
	check('watchDir recursive: an event in a directory made after the watch began',
		rec.some((e) => e.name === 'sub' && e.type === 'create') &&
			rec.some((e) => e.name === 'sub/deep.txt'), JSON.stringify(rec))
	const e = await thrown(() => sbx.files.watchDir('/home/user/no-such-dir', () => {}))
	check('watchDir of a missing directory: FileNotFoundError', e instanceof FileNotFoundError,
		e && `${e.name}: ${e.message}`)
	const r = await sbx.commands.run('echo after watches')
	check('commands run beside and after the watches', r.stdout === 'after watches\n')
})

await step('files.write gzip', ['files.write({gzip})'], async () => {
	const text = 'compressed on the way '.repeat(1000)
	const w = await sbx.files.write('/home/user/gz.txt', text, { gzip: true })
	check('files.write with gzip: true (Content-Encoding: gzip) stores the inflated bytes',
		w.path === '/workspace/gz.txt' && (await sbx.files.read('/home/user/gz.txt')) === text,
		JSON.stringify(w))
})

await step('signed URLs', ['downloadUrl', 'uploadUrl'], async () => {
	await sbx.files.write('/home/user/dl.txt', 'signed download')
	// No access token: only the signature; the header routes as E2B's proxy does by host.
	const route = { 'E2b-Sandbox-Id': sbx.sandboxId }
	const dl = await sbx.downloadUrl('/home/user/dl.txt', { useSignatureExpiration: 120 })
	const got = await fetch(dl, { headers: route })
	check('downloadUrl (signed, expiring): fetched without the token',
		got.status === 200 && (await got.text()) === 'signed download', got.status)
	const ul = await sbx.uploadUrl('/home/user/ul.txt')
	const form = new FormData()
	form.append('file', new Blob(['signed upload']), 'ul.txt')
	const put = await fetch(ul, { method: 'POST', body: form, headers: route })
	check('uploadUrl (signed): a form upload without the token',
		put.status === 200 && (await sbx.files.read('/home/user/ul.txt')) === 'signed upload',
		put.status)
	const forged = new URL(dl)
	forged.searchParams.set('path', '/home/user/ul.txt')
	const bad = await fetch(forged, { headers: route })
	check('the signed URL with its path altered: 401', bad.status === 401, bad.status)
})

// ===== REST =====

await step('Sandbox.list order and startedAfter', ['Sandbox.list'], async () => {
	const second = await Sandbox.create({ metadata, timeoutMs: 60_000 })
	const page = await Sandbox.list({ query: { metadata: { suite } } }).nextItems()
	check('Sandbox.list: newest first',
		page.length === 2 && page[0].sandboxId === second.sandboxId && page[1].sandboxId === sbx.sandboxId,
		JSON.stringify(page.map((s) => [s.sandboxId, s.startedAt])))
	const info = await second.getInfo()
	const after = await Sandbox.list({ query: { metadata: { suite }, startedAfter: info.startedAt } }).nextItems()
	check('startedAfter of its own start includes it',
		after.length === 1 && after[0].sandboxId === second.sandboxId, JSON.stringify(after.map((s) => s.sandboxId)))
	const p = Sandbox.list({ query: { metadata: { suite } }, limit: 1 })
	const one = await p.nextItems()
	const two = await p.nextItems()
	check('limit 1 pages through both (nextToken)',
		one.length === 1 && two.length === 1 && one[0].sandboxId === second.sandboxId &&
			two[0].sandboxId === sbx.sandboxId && !p.hasNext,
		JSON.stringify([one, two].map((x) => x.map((s) => s.sandboxId))))
	await second.kill()
})

await step('Template.exists', ['Template.exists'], async () => {
	check('Template.exists("base") is true', (await Template.exists('base')) === true)
	check('Template.exists of an image the engine lacks is false',
		(await Template.exists('sandboxio/no-such-template')) === false)
})

// ===== Commands =====

await step('commands.sendStdin streamed', ['commands.sendStdin', 'commands.closeStdin'], async () => {
	const h = await sbx.commands.run('read a; echo "got:$a"; read b; echo "got:$b"; cat; echo end',
		{ stdin: true, background: true })
	await h.sendStdin('one\n')
	// The command answers the first line before any more input or
	// CloseStdin: the input reached it as it was sent.
	for (let i = 0; i < 600 && !h.stdout.includes('got:one'); i++)
		await new Promise((r) => setTimeout(r, 100))
	const early = h.stdout
	await h.sendStdin('two\n')
	await h.sendStdin('three\n')
	await h.closeStdin()
	const r = await h.wait()
	check('sendStdin reaches the running command before closeStdin, in order; closeStdin ends it',
		early === 'got:one\n' && r.stdout === 'got:one\ngot:two\nthree\nend\n' && r.exitCode === 0,
		JSON.stringify([early, r.stdout]))
	const k = await sbx.commands.run('read x; exit 7', { stdin: true, background: true })
	await k.sendStdin('x\n')
	const e = await thrown(() => k.wait())
	check('a streamed-stdin command keeps its own exit status (7)', e && e.exitCode === 7,
		e && `${e.name} ${e.exitCode}`)
})

await step('metrics', ['getMetrics', 'Sandbox.getMetrics'], async () => {
	const m = await Sandbox.create({ metadata, timeoutMs: 120_000 })
	const before = await m.getMetrics()
	check('getMetrics: one sample, E2B\'s fields, its memory cap as memTotal',
		before.length === 1 && before[0].timestamp instanceof Date && before[0].cpuCount >= 1 &&
			before[0].memTotal === 512 * 1024 * 1024 && before[0].memUsed > 0 &&
			typeof before[0].cpuUsedPct === 'number', JSON.stringify(before))
	// 100 MiB held by a process until the proof lets it go: it says so on its
	// stdout and ends at a line on its stdin (the sandbox runs one command at
	// a time, so a file call would wait for it).
	const h = await m.commands.run(
		"python3 -c \"import sys\nb=bytearray(100<<20)\nfor i in range(0,len(b),4096): b[i]=1\n" +
			"print('held', flush=True)\nsys.stdin.readline()\"",
		{ background: true, stdin: true })
	for (let i = 0; i < 6000 && !h.stdout.includes('held'); i++)
		await new Promise((r) => setTimeout(r, 100))
	const held = await Sandbox.getMetrics(m.sandboxId)
	await h.sendStdin('go\n')
	await h.wait()
	check('Sandbox.getMetrics while 100 MiB are held: memUsed above 100 MiB',
		held.length === 1 && held[0].memUsed > 100 * 1024 * 1024, JSON.stringify(held))
	await m.commands.run("python3 -c 'sum(range(30000000))'")
	const busy = await m.getMetrics()
	check('after a busy loop: cpuUsedPct above 0', busy.length === 1 && busy[0].cpuUsedPct > 0,
		JSON.stringify(busy))
	const none = await m.getMetrics({ end: new Date(Date.now() - 3600_000) })
	check('a window that ended an hour ago: no sample', Array.isArray(none) && none.length === 0,
		JSON.stringify(none))
	await m.kill()
	const gone = await thrown(() => Sandbox.getMetrics(m.sandboxId))
	check('getMetrics of a killed sandbox: SandboxNotFoundError',
		gone && gone.name === 'SandboxNotFoundError', gone && `${gone.name}: ${gone.message}`)
})

await step('commands.connect', ['commands.connect', 'commands.list', 'Sandbox.connect'], async () => {
	const h1 = await sbx.commands.run(
		"echo before; read x; echo after $x; exit 3", { background: true, stdin: true })
	for (let i = 0; i < 6000 && !h1.stdout.includes('before'); i++)
		await new Promise((r) => setTimeout(r, 100))
	// A second SDK object of the same sandbox, as another program would hold.
	const second = await Sandbox.connect(sbx.sandboxId)
	const list = await second.commands.list()
	check('commands.list from the second object shows the running process',
		list.some((p) => p.pid === h1.pid && p.args.includes('echo before; read x; echo after $x; exit 3')),
		JSON.stringify(list))
	const h2 = await second.commands.connect(h1.pid)
	check('commands.connect: the same pid', h2.pid === h1.pid, `${h2.pid} ${h1.pid}`)
	// The process goes on only once the second object has connected.
	await second.commands.sendStdin(h1.pid, 'go\n')
	const e2 = await thrown(() => h2.wait())
	const e1 = await thrown(() => h1.wait())
	check('the connected handle gets the output from then on, the end and exit code 3',
		e2 && e2.exitCode === 3 && h2.stdout === 'after go\n', e2 && `${e2.exitCode} ${JSON.stringify(h2.stdout)}`)
	check('the first handle still gets the whole output and the same end',
		e1 && e1.exitCode === 3 && h1.stdout === 'before\nafter go\n',
		e1 && `${e1.exitCode} ${JSON.stringify(h1.stdout)}`)
	const e3 = await thrown(() => second.commands.connect(h1.pid))
	check('commands.connect to an ended process: NotFoundError-like error',
		e3 && /not found/i.test(e3.message), e3 && `${e3.name}: ${e3.message}`)
})

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
finish()
