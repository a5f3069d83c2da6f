// tests/sdk/e2b-pty.mjs: the official E2B SDK's terminals (`sandbox.pty`,
// npm e2b, pinned in package.json) against `sandboxio serve --api e2b`:
// pty.create with a size runs `bash -i -l` under a pseudo-terminal in the
// sandbox (the run `sandboxio exec -it` makes, server/pty.c), and its bytes
// come as the SDK's onData. Checks: the prompt is read; `stty size` gives
// the size asked; pty.resize changes it (read back with `stty size`);
// ^C (byte 3) interrupts `sleep 1000` and the shell's prompt comes back;
// pty.connect from a second Sandbox object re-attaches and sees the same
// terminal; commands.list shows it; `exit 3` ends it with exit code 3; the
// errors for the wrong kind of input (pty input or a resize to a command
// without a terminal, stdin or CloseStdin to a terminal); the SDK's
// timeoutMs is the terminal's deadline (its process goes, the sandbox
// stays); a secret given to the sandbox's runs (a code cell's env_vars)
// comes back redacted when echoed in a terminal, typed in one SendInput,
// in two, or key by key across the terminal's width; pty.kill ends it (and, as a
// command's kill on this server, its sandbox). The terminal is a run of the
// init's channel: the container has no docker exec (asked of the Engine API
// on its unix socket).
//
// Every wait is on the terminal's output (a promise resolved by onData),
// with a generous bound only as a hang guard. The sandbox is the code
// interpreter SDK's (its Sandbox is e2b's, with runCode), so that a cell can
// give the sandbox a secret. Run by tests/sdk/run-e2b.sh with its
// environment (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY, SBX_E2B_TENANT).
// Prints one line per check, then the number of distinct SDK calls it
// covered, and exits non-zero when any check failed.
import { CommandExitError, Sandbox } from '@e2b/code-interpreter'
import { check, cover, engine, finish, requireE2bEnv, step, tenantContainers, thrown } from './lib.mjs'

const tenant = process.env.SBX_E2B_TENANT
const suite = `pty-${process.pid}`
const HANG_GUARD_MS = 120_000

requireE2bEnv()

// A terminal's output as text, and waits on it: wait(pred) resolves once
// pred(text since `from`) holds, checked at each onData.
class Term {
	constructor() {
		this.text = ''
		this.waiters = []
		this.decoder = new TextDecoder()
		this.onData = (d) => {
			this.text += this.decoder.decode(d, { stream: true })
			this.waiters = this.waiters.filter((w) => !w.poke())
		}
	}

	mark() {
		return this.text.length
	}

	wait(from, pred, what) {
		return new Promise((resolve, reject) => {
			const w = {
				poke: () => {
					const since = this.text.slice(from)
					if (!pred(since))
						return false
					clearTimeout(w.timer)
					resolve(since)
					return true
				},
			}
			w.timer = setTimeout(() => {
				this.waiters = this.waiters.filter((x) => x !== w)
				reject(new Error(`hang guard: no ${what} in ${JSON.stringify(this.text.slice(from).slice(-400))}`))
			}, HANG_GUARD_MS)
			if (!w.poke())
				this.waiters.push(w)
		})
	}
}

// The value of an expression the shell computes, so that the echo of what
// was typed never matches: `echo M$((6*7))M` shows "M42M" only as output.
let seq = 0
function marker() {
	seq++
	return { expr: `M$((${seq}*1000+7))M`, out: `M${seq * 1000 + 7}M` }
}

const metadata = { suite, 'io.sandboxio.tenant': tenant }
const before = new Set(await tenantContainers(tenant))
const sbx = await Sandbox.create({ metadata, timeoutMs: 300_000 })
const mine = (await tenantContainers(tenant)).filter((id) => !before.has(id))
const cid = mine.length === 1 ? mine[0] : undefined
const enc = new TextEncoder()
const term = new Term()
let pty
let prompt = ''

await step('pty.create and the prompt', ['Sandbox.pty.create'], async () => {
	pty = await sbx.pty.create({ cols: 100, rows: 30, onData: term.onData, timeoutMs: 240_000 })
	check('pty.create gives a pid', Number.isInteger(pty.pid) && pty.pid > 0, pty.pid)
	// bash -i -l's first prompt: the output ends with "$ " (or "# ").
	const first = await term.wait(0, (t) => /[$#] $/.test(t), 'prompt')
	prompt = first.slice(first.lastIndexOf('\n') + 1)
	check('the terminal shows bash\'s prompt', prompt.length >= 2, JSON.stringify(first))
})

await step('stty size gives the size asked', ['Sandbox.pty.sendInput'], async () => {
	const m = marker()
	const from = term.mark()
	await sbx.pty.sendInput(pty.pid, enc.encode(`stty size; echo ${m.expr}\n`))
	const out = await term.wait(from, (t) => t.includes(m.out), 'stty size')
	check('stty size inside: 30 rows, 100 columns', /[\r\n]30 100\r\n/.test(out), JSON.stringify(out))
	// The terminal is a run of the init's channel: the Engine knows no exec
	// of the container (a docker exec terminal would be one).
	const c = cid && await engine('GET', `/containers/${cid}/json`)
	const execs = c && c.status === 200 ? JSON.parse(c.body).ExecIDs : 'unknown'
	check('the terminal runs on the sandbox\'s channel: its container has no exec',
		cid && (execs === null || (Array.isArray(execs) && execs.length === 0)), `${cid} ${JSON.stringify(execs)}`)
})

await step('pty.resize', ['Sandbox.pty.resize'], async () => {
	await sbx.pty.resize(pty.pid, { cols: 120, rows: 40 })
	const m = marker()
	const from = term.mark()
	await sbx.pty.sendInput(pty.pid, enc.encode(`stty size; echo ${m.expr}\n`))
	const out = await term.wait(from, (t) => t.includes(m.out), 'stty size after resize')
	check('after pty.resize, stty size inside: 40 rows, 120 columns', /[\r\n]40 120\r\n/.test(out),
		JSON.stringify(out))
})

await step('^C interrupts the program, not the shell', ['Sandbox.pty.sendInput (^C)'], async () => {
	// The marker comes from the foreground job itself (bash gives a job the
	// terminal before it runs it), which then becomes the sleep: ^C sent
	// once the marker is seen reaches the sleep, never bash alone.
	const m = marker()
	let from = term.mark()
	await sbx.pty.sendInput(pty.pid, enc.encode(`sh -c 'echo ${m.expr}; exec sleep 1000'\n`))
	await term.wait(from, (t) => t.includes(m.out), 'the line of the job that becomes sleep')
	from = term.mark()
	await sbx.pty.sendInput(pty.pid, new Uint8Array([3]))
	const out = await term.wait(from, (t) => t.endsWith(prompt), 'prompt after ^C')
	check('^C: the terminal shows ^C and the prompt comes back', out.includes('^C'), JSON.stringify(out))
	const m2 = marker()
	from = term.mark()
	await sbx.pty.sendInput(pty.pid, enc.encode(`echo ${m2.expr}\n`))
	await term.wait(from, (t) => t.includes(m2.out), 'the shell after ^C')
	check('the shell runs the next line after ^C', true)
})

await step('pty.connect from a second Sandbox object, commands.list',
	['Sandbox.pty.connect', 'Sandbox.connect', 'Sandbox.commands.list'], async () => {
		const second = await Sandbox.connect(sbx.sandboxId)
		const list = await second.commands.list()
		check('commands.list shows the terminal\'s bash',
			list.some((p) => p.pid === pty.pid && p.cmd === '/bin/bash'), JSON.stringify(list))
		const t2 = new Term()
		const h2 = await second.pty.connect(pty.pid, { onData: t2.onData })
		check('pty.connect: the same pid', h2.pid === pty.pid, `${h2.pid} ${pty.pid}`)
		const m = marker()
		const from = term.mark()
		await second.pty.sendInput(pty.pid, enc.encode(`echo ${m.expr}\n`))
		await t2.wait(0, (t) => t.includes(m.out), 'output on the connected handle')
		await term.wait(from, (t) => t.includes(m.out), 'output on the first handle')
		check('input from the second object reaches the terminal; both handles see its output', true)
		await h2.disconnect()
	})

await step('the wrong kind of input', ['Sandbox.commands.sendStdin (terminal)', 'Sandbox.commands.closeStdin (terminal)'], async () => {
	const e1 = await thrown(() => sbx.commands.sendStdin(pty.pid, 'x'))
	check('stdin to a terminal: refused with envd\'s words',
		e1 && /tty assigned to process/.test(e1.message), e1 && `${e1.name}: ${e1.message}`)
	const e2 = await thrown(() => sbx.commands.closeStdin(pty.pid))
	check('CloseStdin of a terminal: refused with envd\'s words (send ^D)',
		e2 && /cannot close stdin for PTY process/.test(e2.message), e2 && `${e2.name}: ${e2.message}`)
})

await step('exit 3', ['CommandHandle.wait (terminal)'], async () => {
	await sbx.pty.sendInput(pty.pid, enc.encode('exit 3\n'))
	const e = await thrown(() => pty.wait())
	check('exit 3 in the terminal: CommandExitError with exit code 3',
		e instanceof CommandExitError && e.exitCode === 3, e && `${e.name}: ${e.exitCode} ${e.message}`)
	const list = await sbx.commands.list()
	check('the ended terminal is gone from commands.list', !list.some((p) => p.pid === pty.pid),
		JSON.stringify(list))
})

await step('a command without a terminal refuses pty input and resize', [], async () => {
	const c = await sbx.commands.run('cat', { background: true, stdin: true })
	const e1 = await thrown(() => sbx.pty.sendInput(c.pid, enc.encode('x')))
	check('pty input to a command without a terminal: refused with envd\'s words',
		e1 && /tty not assigned to process/.test(e1.message), e1 && `${e1.name}: ${e1.message}`)
	const e2 = await thrown(() => sbx.pty.resize(c.pid, { cols: 80, rows: 24 }))
	check('a resize of a command without a terminal: refused with envd\'s words',
		e2 && /error resizing tty: tty not assigned to process/.test(e2.message), e2 && `${e2.name}: ${e2.message}`)
	await c.closeStdin()
	const r = await c.wait()
	check('the command goes on and ends as it would', r.exitCode === 0, JSON.stringify(r))
})

await step('the SDK\'s timeoutMs is the terminal\'s deadline', ['Sandbox.pty.create (timeoutMs)'], async () => {
	const t = new Term()
	const p = await sbx.pty.create({ cols: 80, rows: 24, onData: t.onData, timeoutMs: 4000 })
	const e = await thrown(() => p.wait())
	check('past timeoutMs the terminal\'s stream ends with an error', e !== undefined, e && `${e.name}`)
	// The server ended the run: its process leaves the list (the list is
	// asked until then, the hang guard bounding it).
	let list = await sbx.commands.list()
	for (let i = 0; i < 1200 && list.some((x) => x.pid === p.pid); i++) {
		await new Promise((r) => setTimeout(r, 100))
		list = await sbx.commands.list()
	}
	check('the terminal\'s process is gone after its deadline', !list.some((x) => x.pid === p.pid),
		JSON.stringify(list))
	const r = await sbx.commands.run('echo alive')
	check('the sandbox outlives the terminal\'s deadline', r.stdout === 'alive\n', JSON.stringify(r))
})

await step('a secret echoed in a terminal comes back redacted', ['Sandbox.pty.create (redacted)'], async () => {
	const secret = 'sbx-pty-secret-8642'
	// A code cell's env_vars are secrets of the sandbox's runs from then on.
	const cell = await sbx.runCode('1', { envs: { TOKEN: secret } })
	check('a cell gives the sandbox a secret', !cell.error, JSON.stringify(cell.error))
	const t = new Term()
	const p = await sbx.pty.create({ cols: 200, rows: 24, onData: t.onData, timeoutMs: 120_000 })
	// While a secret is live the terminal's last bytes (as many as its
	// longest encoded form: hex, 38) are held back until more come (a split secret
	// is still caught), so each line is followed by 400 characters of
	// filler, and the wait is for the first 300 of them: whatever the
	// prompt after them, all that came before is then out.
	const filler = 'printf "%0400d\\n" 0'
	await sbx.pty.sendInput(p.pid, enc.encode(`${filler}\n`))
	await t.wait(0, (x) => x.includes('0'.repeat(300)), 'first filler')
	const from = t.mark()
	// Typed (the terminal echoes it) and printed from two pieces.
	await sbx.pty.sendInput(p.pid,
		enc.encode(`echo ${secret}; printf "%s%s\\n" ${secret.slice(0, 8)} ${secret.slice(8)}; ${filler}\n`))
	const out = await t.wait(from, (x) => x.includes('0'.repeat(300)), 'filler after the secret')
	const marks = out.split('<redacted>').length - 1
	check('the secret, typed (echoed by the terminal) and printed, comes back redacted',
		!t.text.includes(secret) && marks >= 3, JSON.stringify(out.slice(0, 200)))
	// Typed in two SendInputs: the terminal echoes each piece as it comes.
	// The first piece follows 120 x's, so its echo is seen to have come out
	// (the x's before it pass the held-back tail) before the second is
	// typed; the line stays within the 200 columns (no wrap: see
	// docs/threat-model.md).
	const from2 = t.mark()
	await sbx.pty.sendInput(p.pid, enc.encode(`echo ${'x'.repeat(120)} ${secret.slice(0, 8)}`))
	await t.wait(from2, (x) => x.includes('x'.repeat(40)), 'the echo of the first piece')
	await sbx.pty.sendInput(p.pid, enc.encode(`${secret.slice(8)}; ${filler}\n`))
	const out2 = await t.wait(from2, (x) => x.includes('0'.repeat(300)), 'filler after the split secret')
	check('the secret typed in two SendInputs: its echo and its output come back redacted',
		!t.text.includes(secret) && out2.split('<redacted>').length - 1 >= 2, JSON.stringify(out2.slice(0, 200)))
	// Typed key by key (one SendInput a key, as a person types) on a
	// terminal 10 columns wide: bash's line editor echoes " \r" where the
	// line reaches the width, inside the secret (19 characters cross at
	// least one such column), and the terminal draws it whole.
	// (The proof of the cut itself, whatever the timing: the unit case
	// test_util_redact_wrapped__value_across_a_terminal_wrap.) A line run
	// after the resize has bash take the new width before the typing.
	await sbx.pty.resize(p.pid, { cols: 10, rows: 24 })
	const from3a = t.mark()
	await sbx.pty.sendInput(p.pid, enc.encode(`${filler}\n`))
	await t.wait(from3a, (x) => x.includes('0'.repeat(300)), 'filler after the resize')
	const from3 = t.mark()
	for (const k of `echo ${secret}`)
		await sbx.pty.sendInput(p.pid, enc.encode(k))
	await sbx.pty.sendInput(p.pid, enc.encode(`; ${filler}\n`))
	const out3 = await t.wait(from3, (x) => x.includes('0'.repeat(300)), 'filler after the secret typed key by key')
	check('the secret typed key by key across the terminal\'s width: its echo and output come back redacted',
		!t.text.includes(secret) && !/sbx-pty|8642/.test(out3) && out3.split('<redacted>').length - 1 >= 2,
		JSON.stringify(out3.slice(0, 300)))
	await sbx.pty.kill(p.pid).then((k) => {
		check('pty.kill of a running terminal: true', k === true, k)
	})
	const e = await thrown(() => p.wait())
	check('after pty.kill the terminal\'s handle ends with an error', e !== undefined, e && `${e.name}: ${e.message}`)
	cover('Sandbox.pty.kill')
})

await thrown(() => sbx.kill())
finish()
