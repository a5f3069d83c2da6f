// tests/sdk/lib.mjs: what the SDK proofs of tests/sdk share. Each proof is a
// process of its own: it counts its checks here, prints one line per check
// ("ok   NAME" or "FAIL NAME: DETAIL"), and ends with finish(), which prints
// the SDK calls its steps covered (when it names any) and "N passed, N
// failed", and exits non-zero when any check failed.
import http from 'node:http'

let passed = 0
let failed = 0
const covered = new Set()

export function check(name, cond, detail) {
	if (cond) {
		passed++
		console.log(`ok   ${name}`)
	} else {
		failed++
		console.log(`FAIL ${name}${detail === undefined ? '' : `: ${detail}`}`)
	}
}

// Runs fn; a throw is a failed check rather than the end of the proof.
// calls (optional): the SDK calls the step covers, counted when it passes.
export async function step(name, calls, fn) {
	if (typeof calls === 'function') {
		fn = calls
		calls = []
	}
	const before = failed
	try {
		await fn()
	} catch (e) {
		failed++
		const cause = e && e.cause ? ` (${e.cause.message || e.cause})` : ''
		console.log(`FAIL ${name}: threw ${e && e.name}: ${e && e.message}${cause}`)
	}
	if (failed === before)
		for (const c of calls)
			covered.add(c)
}

// What fn throws (undefined when it does not).
export async function thrown(fn) {
	try {
		await fn()
	} catch (e) {
		return e
	}
	return undefined
}

// Marks an SDK call covered outside a step.
export function cover(call) {
	covered.add(call)
}

// Ends the proof; extra counts failures not reported as checks (a step
// whose failure ends the proof early).
export function finish(extra = 0) {
	failed += extra
	if (covered.size)
		console.log(`${covered.size} SDK calls covered: ${[...covered].sort().join(', ')}`)
	console.log(`${passed} passed, ${failed} failed`)
	process.exit(failed ? 1 : 0)
}

// Each named variable must be set (by the runner script named in hint).
export function requireEnv(names, hint) {
	for (const v of names)
		if (!process.env[v]) {
			console.log(`FAIL ${v} is not set (run ${hint})`)
			process.exit(1)
		}
}

export function requireE2bEnv() {
	requireEnv(['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY', 'SBX_E2B_TENANT'],
		'tests/sdk/run-e2b.sh')
}

// One call of the Docker Engine API on its unix socket (loopback only);
// body, when given, is sent as JSON.
export function engine(method, path, body) {
	return new Promise((resolve, reject) => {
		const req = http.request({
			socketPath: process.env.DOCKER_SOCKET || '/var/run/docker.sock',
			path: `/v1.41${path}`,
			method,
			headers: body ? { 'Content-Type': 'application/json' } : {},
		}, (res) => {
			const chunks = []
			res.on('data', (c) => chunks.push(c))
			res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }))
		})
		req.on('error', reject)
		if (body)
			req.write(JSON.stringify(body))
		req.end()
	})
}

// The ids of every container of tenant (running or not).
export async function tenantContainers(tenant) {
	const f = encodeURIComponent(JSON.stringify({ label: [`io.sandboxio.tenant=${tenant}`] }))
	const r = await engine('GET', `/containers/json?all=1&filters=${f}`)
	if (r.status !== 200)
		throw new Error(`Engine API: ${r.status} ${r.body}`)
	return JSON.parse(r.body).map((c) => c.Id)
}
