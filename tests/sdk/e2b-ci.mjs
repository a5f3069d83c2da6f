// tests/sdk/e2b-ci.mjs: the official E2B code interpreter SDK (npm
// @e2b/code-interpreter, pinned in package.json) against the code
// interpreter's API of `sandboxio serve --api e2b` (port 49999 of a
// sandbox, server/interp.c).
//
// Run by tests/sdk/run-e2b.sh (the same environment as e2b.mjs). Checks:
// state kept between cells of the default context ('x = 41', then 'x + 1'
// is "42"), and of bash's; a matplotlib figure comes back as a PNG; a new context is a
// namespace of its own (NameError with its name and value); an endless
// cell stopped by the SDK's timeoutMs is interrupted and the context's next
// cell runs with its state; onStdout lines arrive while the cell runs (the
// cell waits for a file the test makes, through the Docker Engine API, only
// after it has seen the first line); env_vars are redacted from the
// stream, the value's text, its HTML and its JSON; contexts are listed,
// restarted and removed; and kill() removes the sandbox's container (the
// Engine API, asked about that container's id). Prints one line per check
// and exits non-zero when any failed.
import http from 'node:http'
import { Sandbox, TimeoutError } from '@e2b/code-interpreter'
import { check, engine, finish, requireE2bEnv, step, tenantContainers } from './lib.mjs'

const tenant = process.env.SBX_E2B_TENANT
const suite = `sdk-ci-${process.pid}`

// Runs argv in a container as the Engine does (docker exec), to the end.
async function engineExec(id, argv) {
	const made = await engine('POST', `/containers/${id}/exec`, { Cmd: argv, AttachStdout: true, AttachStderr: true })
	if (made.status !== 201)
		throw new Error(`exec create: ${made.status} ${made.body}`)
	const eid = JSON.parse(made.body).Id
	await engine('POST', `/exec/${eid}/start`, { Detach: false, Tty: false })
	const info = JSON.parse((await engine('GET', `/exec/${eid}/json`)).body)
	if (info.ExitCode !== 0)
		throw new Error(`exec ${argv.join(' ')}: exit ${info.ExitCode}`)
}

requireE2bEnv()

const before = new Set(await tenantContainers(tenant))
let sbx
let cid
await step('Sandbox.create', async () => {
	sbx = await Sandbox.create({ metadata: { suite, 'io.sandboxio.tenant': tenant }, timeoutMs: 300_000 })
	const mine = (await tenantContainers(tenant)).filter((id) => !before.has(id))
	cid = mine.length === 1 ? mine[0] : undefined
	check('Sandbox.create() of the code interpreter gives a sandbox and one container', /^[a-z0-9]{20}$/.test(sbx.sandboxId) && cid,
		`${sbx.sandboxId} ${mine}`)
})
if (!sbx) {
	finish(1)
}

await step('state between cells', async () => {
	const a = await sbx.runCode('x = 41')
	const b = await sbx.runCode('x + 1')
	check("runCode('x = 41') then runCode('x + 1') gives text \"42\"", b.text === '42' && !a.error && !b.error,
		JSON.stringify({ a, b }))
	check('the cells are numbered in their context', b.executionCount === a.executionCount + 1,
		`${a.executionCount} ${b.executionCount}`)
})

await step('a matplotlib figure', async () => {
	const e = await sbx.runCode([
		'import matplotlib',
		"matplotlib.use('Agg')",
		'import matplotlib.pyplot as plt',
		'plt.plot([1, 2, 3], [1, 4, 9])',
		'plt.show()',
	].join('\n'))
	const pngs = e.results.filter((r) => r.png)
	const bytes = pngs.length ? Buffer.from(pngs[0].png, 'base64') : Buffer.alloc(0)
	check('a matplotlib plot returns a PNG result (its magic after base64)',
		bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
		JSON.stringify({ error: e.error, formats: e.results.map((r) => r.formats()) }))
})

await step('bash', async () => {
	const a = await sbx.runCode('N=41; echo "n is $N"', { language: 'bash' })
	const b = await sbx.runCode('echo $((N + 1)); (exit 3)', { language: 'bash' })
	check("language 'bash' runs in bash's default context, which keeps its variables",
		a.logs.stdout.join('') === 'n is 41\n' && b.logs.stdout.join('') === '42\n', JSON.stringify({ a, b }))
	check("a bash cell's status is its error", b.error && b.error.name === 'ExitCode', JSON.stringify(b.error))
})

let ctx
await step('createCodeContext', async () => {
	ctx = await sbx.createCodeContext({ cwd: '/tmp' })
	check('createCodeContext() gives an id, python, its cwd', ctx && typeof ctx.id === 'string' && ctx.language === 'python' && ctx.cwd === '/tmp',
		JSON.stringify(ctx))
	const e = await sbx.runCode('x', { context: ctx })
	check('a new context is its own namespace: x is a NameError there, with name and value',
		e.error && e.error.name === 'NameError' && /'x' is not defined/.test(e.error.value) && e.error.traceback.length > 0,
		JSON.stringify(e.error))
	const cwd = await sbx.runCode('import os; os.getcwd()', { context: ctx })
	check("the context's cells run in its cwd", cwd.text === "'/tmp'", JSON.stringify(cwd))
	const list = await sbx.listCodeContexts()
	check('listCodeContexts() has the new context and the default one',
		list.some((c) => c.id === ctx.id && c.language === 'python') && list.some((c) => c.id === 'e2b-default-python'),
		JSON.stringify(list))
})

await step('timeoutMs interrupts an endless cell', async () => {
	let err
	try {
		await sbx.runCode('while True:\n    pass', { timeoutMs: 2_000 })
	} catch (e) {
		err = e
	}
	check('an endless cell ends in the SDK with TimeoutError at its timeoutMs', err instanceof TimeoutError,
		err && `${err.name}: ${err.message}`)
	const e = await sbx.runCode('x + 1')
	check('the next cell of that context runs, with its state', e.text === '42' && !e.error, JSON.stringify(e))
})

await step('onStdout streams', async () => {
	const flag = `/tmp/go-${process.pid}`
	const lines = []
	let sawFirst
	const first = new Promise((resolve) => { sawFirst = resolve })
	const run = sbx.runCode([
		'import os, time',
		"print('first', flush=True)",
		`while not os.path.exists('${flag}'):`,
		'    time.sleep(0.02)',
		"print('second')",
	].join('\n'), {
		onStdout: (m) => {
			lines.push(m.line)
			if (m.line.includes('first'))
				sawFirst()
		},
	})
	await first
	check('onStdout gives the first line while the cell still runs', lines.join('') === 'first\n',
		JSON.stringify(lines))
	await engineExec(cid, ['touch', flag])
	const e = await run
	check('the cell ends once the file is there, with both lines', e.logs.stdout.join('') === 'first\nsecond\n' && !e.error,
		JSON.stringify(e.logs))
})

await step('env_vars are redacted', async () => {
	const secret = 'sbx-ci-secret-4711'
	const e = await sbx.runCode([
		'import os',
		"v = os.environ['TOKEN']",
		'print(v)',
		'class H:',
		"    def _repr_html_(self): return '<b>' + v + '</b>'",
		'display(H())',
		"{'token': v}",
	].join('\n'), { envs: { TOKEN: secret } })
	const all = JSON.stringify(e)
	const html = e.results.find((r) => r.html)
	const main = e.results.find((r) => r.isMainResult)
	check('env_vars reach the cell and are redacted from stdout, HTML, text and JSON',
		!all.includes(secret) && e.logs.stdout.join('') === '<redacted>\n' && html && html.html.includes('<redacted>') &&
			main && main.text.includes('<redacted>') && main.json && JSON.stringify(main.json).includes('<redacted>'),
		all)
	// The same value written in two flushed pieces, in a later cell (the
	// value stays in the context's environment).
	const pieces = []
	const split = await sbx.runCode([
		'import os, sys',
		"v = os.environ['TOKEN']",
		'sys.stdout.write(v[:7]); sys.stdout.flush()',
		"sys.stdout.write(v[7:] + '\\n')",
	].join('\n'), { onStdout: (m) => pieces.push(m.line) })
	check('a value written in two flushed pieces is redacted from the stream too',
		!JSON.stringify(split).includes(secret) && !pieces.join('').includes(secret) &&
			pieces.join('') === '<redacted>\n' && split.logs.stdout.join('') === '<redacted>\n',
		JSON.stringify({ pieces, logs: split.logs, error: split.error }))
})

await step('port 49999 is the sandbox owner\'s', async () => {
	const url = `${process.env.E2B_SANDBOX_URL}/contexts`
	const headers = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49999' }
	const none = await fetch(url, { headers })
	const wrong = await fetch(url, { headers: { ...headers, 'E2B-Traffic-Access-Token': 'f'.repeat(64) } })
	const health = await fetch(`${process.env.E2B_SANDBOX_URL}/health`, { headers })
	check('the code interpreter refuses a call without the sandbox\'s token, or with another (401); /health answers',
		none.status === 401 && wrong.status === 401 && health.status === 200, `${none.status} ${wrong.status} ${health.status}`)
	// The length alone is sent: the answer comes at the headers.
	const big = await new Promise((resolve, reject) => {
		const u = new URL(`${process.env.E2B_SANDBOX_URL}/execute`)
		const req = http.request({
			host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
			headers: { ...headers, 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json', 'Content-Length': String((1 << 20) + 1) },
		}, (res) => {
			res.resume()
			req.destroy()
			resolve(res.statusCode)
		})
		req.on('error', reject)
		req.flushHeaders()
	})
	check('an /execute body over 1 MiB is refused with 413 at its headers', big === 413, `${big}`)
	const bad = await fetch(`${process.env.E2B_SANDBOX_URL}/execute`, {
		method: 'POST',
		headers: { ...headers, 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' },
		body: JSON.stringify({ code: '1', language: 'r' }),
	})
	check('a language not served is a 400 naming it', bad.status === 400 && /language 'r'/.test(await bad.text()),
		`${bad.status}`)
})

await step('restart and remove a context', async () => {
	await sbx.runCode('y = 1', { context: ctx })
	await sbx.restartCodeContext(ctx)
	const e = await sbx.runCode('y', { context: ctx })
	check('restartCodeContext() empties its namespace', e.error && e.error.name === 'NameError', JSON.stringify(e.error))
	await sbx.removeCodeContext(ctx)
	const list = await sbx.listCodeContexts()
	check('removeCodeContext() takes it off the list', !list.some((c) => c.id === ctx.id), JSON.stringify(list))
	let err
	try {
		await sbx.runCode('1', { context: ctx })
	} catch (x) {
		err = x
	}
	check('a removed context is not found', err && err.name === 'NotFoundError', err && `${err.name}: ${err.message}`)
})

await step('kill', async () => {
	await sbx.kill()
	const r = await engine('GET', `/containers/${cid}/json`)
	check('Sandbox.kill() removes its container (the Engine says 404 for its id)', r.status === 404,
		`${r.status}`)
})

await step('the sandbox\'s deadline', async () => {
	// A sandbox of a 20 s life: its cell's deadline is what is left of it,
	// so an endless cell is interrupted by the server, which says so.
	const short = await Sandbox.create({ metadata: { suite, 'io.sandboxio.tenant': tenant }, timeoutMs: 20_000 })
	try {
		const e = await short.runCode('while True:\n    pass', { timeoutMs: 120_000 })
		check('a cell past its deadline ends with an error named TimeoutError',
			e.error && e.error.name === 'TimeoutError' && /deadline/.test(e.error.value), JSON.stringify(e.error))
	} finally {
		await short.kill()
	}
})

finish()
