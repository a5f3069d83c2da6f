// tests/sdk/e2b-ports.mjs: sandbox.getHost(port) with the official E2B
// JavaScript SDK (npm e2b, pinned in package.json) against `sandboxio serve
// --api e2b`: a server started in the sandbox as a background command is
// reached through the server, which carries each connection over the
// sandbox's own channel (sbx_sandbox_connect_port()), while the sandbox
// keeps no network.
//
// getHost(port) is `${port}-${sandboxId}.${domain}` (the SDK's
// ConnectionConfig.getHost; domain: the Sandbox's, else E2B_DOMAIN, else
// e2b.app; run-e2b.sh sets none, so e2b.app). A request to that host is
// sent to the server's own address with that Host header, as a DNS record
// of the domain pointing at the server would send it: only loopback is
// contacted.
//
// Run by tests/sdk/run-e2b.sh (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY,
// SBX_E2B_TENANT). Prints one line per check and exits non-zero when any
// failed.
import http from 'node:http'
import { createHash } from 'node:crypto'
import { Sandbox } from 'e2b'
import { check, engine, finish, requireE2bEnv, step, tenantContainers } from './lib.mjs'

const tenant = process.env.SBX_E2B_TENANT
const suite = `ports-${process.pid}`

requireE2bEnv()
const server = new URL(process.env.E2B_SANDBOX_URL)
if (server.hostname !== '127.0.0.1' && server.hostname !== 'localhost' && server.hostname !== '[::1]') {
	console.log(`FAIL the server is not on loopback: ${server.href}`)
	process.exit(1)
}

// One request to url (http://<getHost(port)>/path) sent to the server's
// address; body: a Buffer (sent with its length), or an array of Buffers
// (sent in chunks).
function request(url, { method = 'GET', headers = {}, body } = {}) {
	const u = new URL(url)
	return new Promise((resolve, reject) => {
		const req = http.request({
			host: server.hostname,
			port: server.port,
			method,
			path: u.pathname + u.search,
			headers: { Host: u.host, ...(Buffer.isBuffer(body) ? { 'Content-Length': body.length } : {}), ...headers },
		}, (res) => {
			const parts = []
			res.on('data', (d) => parts.push(d))
			res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(parts) }))
			res.on('error', reject)
		})
		req.on('error', reject)
		if (Array.isArray(body)) {
			for (const b of body) req.write(b)
		} else if (body) {
			req.write(body)
		}
		req.end()
	})
}

const metadata = { suite, 'io.sandboxio.tenant': tenant }
// Without internet access: the sandbox's network is "none" (no interface
// but its loopback), and its ports are still reached.
const sbx = await Sandbox.create({ metadata, timeoutMs: 300_000, allowInternetAccess: false })
const token = { 'e2b-traffic-access-token': sbx.trafficAccessToken }
const base = `http://${sbx.getHost(8000)}`
const text = `served from sandbox ${sbx.sandboxId} without a network\n`

await step('getHost', async () => {
	check('getHost(8000) is <port>-<id>.<domain>, as E2B builds it',
		sbx.getHost(8000) === `8000-${sbx.sandboxId}.e2b.app`, sbx.getHost(8000))
	check('the Sandbox has a traffic access token of its own, not the envd token',
		typeof sbx.trafficAccessToken === 'string' && sbx.trafficAccessToken.length >= 32 &&
		sbx.trafficAccessToken !== sbx.envdAccessToken)
})

await step('the sandbox has no network', async () => {
	// Read, not contacted: the sandbox's interfaces are its loopback alone.
	const ifs = await sbx.commands.run('ls /sys/class/net')
	check('the sandbox has only a loopback interface', ifs.stdout.trim() === 'lo', ifs.stdout)
	// The server's own loopback port, from inside: the sandbox's loopback is
	// its own, and there is no route anywhere else.
	const r = await sbx.commands.run(
		`python3 -c "import socket; socket.create_connection(('127.0.0.1', ${server.port}), 5)" 2>&1; echo "rc=$?"`)
	check('a connection to the server\'s loopback port from inside fails',
		/ConnectionRefusedError/.test(r.stdout) && /rc=1/.test(r.stdout), r.stdout)
})

await step('a port where nothing listens', async () => {
	const r = await request(`${base}/hello.txt`, { headers: token })
	let j = {}
	try { j = JSON.parse(r.body) } catch {}
	check('502 in E2B\'s shape naming the port', r.status === 502 && j.port === 8000 &&
		j.sandboxId === sbx.sandboxId && /port is not open/.test(j.message), `${r.status} ${r.body}`)
})

// The servers: http.server on 8000 (files), and on 8001 one that answers
// chunked and echoes a request's body; both in one background command, which
// holds the sandbox's command slot, so readiness is the servers' own lines.
const chunky = `
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def do_POST(self):
        if self.headers.get('Transfer-Encoding') == 'chunked':
            body = b''
            while True:
                n = int(self.rfile.readline().split(b';')[0], 16)
                if n == 0:
                    while self.rfile.readline() not in (b'\\r\\n', b''):
                        pass
                    break
                body += self.rfile.read(n)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers['Content-Length']))
        self.send_response(200)
        self.send_header('X-Seen-Framing', 'chunked' if self.headers.get('Transfer-Encoding') else 'length')
        self.send_header('Transfer-Encoding', 'chunked')
        self.send_header('X-Seen-Length', str(len(body)))
        self.send_header('X-Seen-Token', self.headers.get('e2b-traffic-access-token', 'none'))
        self.end_headers()
        for k in range(0, len(body), 1000):
            part = body[k:k + 1000]
            self.wfile.write(b'%x\\r\\n' % len(part) + part + b'\\r\\n')
        self.wfile.write(b'0\\r\\nX-Trailer: dropped\\r\\n\\r\\n')
    def do_GET(self):
        # /hold: the answer's head and a first chunk, then nothing more.
        self.send_response(200)
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        self.wfile.write(b'5\\r\\nheld\\n\\r\\n')
        self.wfile.flush()
        time.sleep(3600)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(('127.0.0.1', 8001), H)
print('chunky ready', flush=True)
s.serve_forever()
`
const big = Buffer.alloc(3 << 20)
for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 11)) & 0xff
await sbx.files.write('/tmp/www/hello.txt', text)
await sbx.files.write('/tmp/www/big.bin', big)
await sbx.files.write('/tmp/chunky.py', chunky)
let seen = ''
let ready
const listening = new Promise((r) => { ready = r })
const h = await sbx.commands.run(
	'python3 /tmp/chunky.py & exec python3 -u -m http.server 8000 --bind 127.0.0.1 -d /tmp/www',
	{
		background: true,
		timeoutMs: 0, // the SDK's default of 60 s would end the servers mid-proof
		onStderr: (d) => { seen += d },
		onStdout: (d) => {
			seen += d
			if (seen.includes('Serving HTTP') && seen.includes('chunky ready')) ready('listening')
		},
	})
// The servers' own lines (printed once they listen), or the command's end.
await Promise.race([listening, h.wait().then(() => 'ended', () => 'ended')])
check('the servers say they listen', seen.includes('Serving HTTP') && seen.includes('chunky ready'), seen)

await step('the traffic access token', async () => {
	const none = await request(`${base}/hello.txt`)
	check('no token: 401, in E2B\'s shape', none.status === 401 &&
		JSON.parse(none.body).code === 401, `${none.status} ${none.body}`)
	const wrong = await request(`${base}/hello.txt`,
		{ headers: { 'e2b-traffic-access-token': 'f'.repeat(64) } })
	check('a wrong token: 403', wrong.status === 403 && JSON.parse(wrong.body).code === 403,
		`${wrong.status} ${wrong.body}`)
	const envd = await request(`${base}/hello.txt`, { headers: { 'X-Access-Token': sbx.envdAccessToken } })
	check('the envd access token does not open a port', envd.status === 401, `${envd.status}`)
	const r = await new Promise((resolve, reject) => {
		const req = http.request({
			host: server.hostname, port: server.port, method: 'POST',
			path: '/process.Process/List',
			headers: { Host: sbx.getHost(49983), 'X-Access-Token': sbx.trafficAccessToken,
				'Content-Type': 'application/json' },
		}, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)) })
		req.on('error', reject)
		req.end('{}')
	})
	check('the traffic token does not open envd', r === 401, `${r}`)
	// Port 49999 (the code interpreter): the traffic token opens its routes
	// that run no code; /execute needs the envd access token.
	const exec = await new Promise((resolve, reject) => {
		const req = http.request({
			host: server.hostname, port: server.port, method: 'POST', path: '/execute',
			headers: { Host: sbx.getHost(49999), ...token, 'Content-Type': 'application/json' },
		}, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)) })
		req.on('error', reject)
		req.end('{"code": "print(1)"}')
	})
	check('the traffic token alone does not run code on port 49999 (/execute: 401)', exec === 401, `${exec}`)
})

await step('a file served through getHost', async () => {
	const r = await request(`${base}/hello.txt`, { headers: token })
	check('200 and the file', r.status === 200 && r.body.toString() === text, `${r.status} ${r.body}`)
	const q = await request(`${base}/hello.txt?x=%2F%20y`, { headers: token })
	check('a query and escapes pass as sent', q.status === 200 && q.body.toString() === text, `${q.status}`)
	const missing = await request(`${base}/nope.txt`, { headers: token })
	check('the server\'s own 404 passes through', missing.status === 404, `${missing.status}`)
	const head = await request(`${base}/hello.txt`, { method: 'HEAD', headers: token })
	check('HEAD: 200, no body', head.status === 200 && head.body.length === 0, `${head.status}`)
	const b = await request(`${base}/big.bin`, { headers: token })
	const sha = (x) => createHash('sha256').update(x).digest('hex')
	check('3 MiB streamed whole', b.status === 200 && b.body.length === big.length && sha(b.body) === sha(big),
		`${b.status} ${b.body.length}`)
})

await step('chunked both ways', async () => {
	const parts = [Buffer.alloc(70_000, 'a'), Buffer.alloc(5_000, 'b'), Buffer.from('end')]
	const all = Buffer.concat(parts)
	const r = await request(`http://${sbx.getHost(8001)}/echo`, { method: 'POST', headers: token, body: parts })
	check('a chunked request reaches the server whole, in chunks, without the token',
		r.headers['x-seen-length'] === String(all.length) && r.headers['x-seen-token'] === 'none' &&
		r.headers['x-seen-framing'] === 'chunked', JSON.stringify(r.headers))
	const sized = await request(`http://${sbx.getHost(8001)}/echo`, { method: 'POST', headers: token, body: all })
	check('a request with a length reaches the server whole, with its length',
		sized.status === 200 && sized.headers['x-seen-framing'] === 'length' && sized.body.equals(all),
		`${sized.status} ${JSON.stringify(sized.headers)}`)
	check('a chunked answer comes back whole', r.status === 200 && r.body.equals(all),
		`${r.status} ${r.body.length}`)
})

await step('bounds', async () => {
	// The length alone is sent: the answer comes at the headers.
	const status = await new Promise((resolve, reject) => {
		const req = http.request({
			host: server.hostname, port: server.port, method: 'POST', path: '/upload',
			headers: { Host: sbx.getHost(8000), ...token, 'Content-Length': String((64 << 20) + (64 << 10) + 1) },
		}, (res) => { res.resume(); req.destroy(); resolve(res.statusCode) })
		req.on('error', reject)
		req.flushHeaders()
	})
	check('a body past 64 MiB is refused with 413 at its headers', status === 413, `${status}`)
	const bad = await request(`http://${sbx.getHost(8000).replace(/^8000/, '70000')}/`, { headers: token })
	check('port 70000: 400 naming the range', bad.status === 400 && /1 to 65535/.test(JSON.parse(bad.body).message),
		`${bad.status} ${bad.body}`)
})

await step('upgrades', async () => {
	const r = await request(`${base}/`, {
		headers: { ...token, Connection: 'Upgrade', Upgrade: 'websocket',
			'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' },
	})
	check('a WebSocket upgrade is refused with 501 and a message', r.status === 501 &&
		/not proxied/.test(JSON.parse(r.body).message), `${r.status} ${r.body}`)
})

await step('allowPublicTraffic: true needs no token', async () => {
	const pub = await Sandbox.create({ metadata, timeoutMs: 60_000, network: { allowPublicTraffic: true } })
	try {
		const r = await request(`http://${pub.getHost(8000)}/`)
		check('no token: reaches the sandbox (nothing listens: 502 naming the port)',
			r.status === 502 && JSON.parse(r.body).port === 8000, `${r.status} ${r.body}`)
	} finally {
		await pub.kill()
	}
})

await step('kill while a connection through a port is open', async () => {
	const mine = await tenantContainers(tenant)
	check('one container of this tenant left', mine.length === 1, `${mine}`)
	// A connection whose answer never ends: its relay (a docker exec) holds
	// the sandbox until the connection ends, so kill() must end it.
	let first
	const gotFirst = new Promise((r) => { first = r })
	const held = new Promise((resolve) => {
		const req = http.request({
			host: server.hostname, port: server.port, method: 'GET', path: '/hold',
			headers: { Host: sbx.getHost(8001), ...token },
		}, (res) => {
			res.once('data', (d) => first(res.statusCode === 200 && d.includes('held') ? 'held'
				: `${res.statusCode} ${d}`))
			res.on('end', () => resolve('end'))
			res.on('error', () => resolve('error'))
			res.on('close', () => resolve('close'))
		})
		req.on('error', () => { first('error'); resolve('error') })
		req.end()
	})
	const got = await gotFirst
	check('the held answer\'s first chunk comes', got === 'held', got)
	await sbx.kill()
	const r = await engine('GET', `/containers/${mine[0]}/json`)
	check('Sandbox.kill() with a port\'s connection open removes the container before it answers ' +
		'(the Engine says 404 for its id)', r.status === 404, `${r.status}`)
	check('the held connection ends', ['end', 'error', 'close'].includes(await held))
})

finish()
