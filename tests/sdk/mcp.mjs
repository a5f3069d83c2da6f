// tests/sdk/mcp.mjs: the official MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk, pinned in package.json) against
// `sandboxio mcp`, started by the SDK's own stdio transport.
//
// Run by tests/sdk/run-mcp.sh, which sets SBX_CLI (the sandboxio binary)
// and SBX_MCP_TENANT (the tenant of the session's sandbox, so that the
// script can check that none is left). Lists the tools, runs print(6*7)
// through run_code, writes and reads a file, lists /workspace, checks that
// an argument beyond a tool's schema is refused, and closes the client.
// Prints one line per check and exits non-zero when any failed.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { check, finish } from './lib.mjs'

const cli = process.env.SBX_CLI
const tenant = process.env.SBX_MCP_TENANT

function text(res) {
	return (res.content || []).map((c) => c.text || '').join('\n')
}

const transport = new StdioClientTransport({
	command: cli,
	args: ['mcp', '--tenant', tenant, '--lifetime', '600'],
	env: { ...process.env },
	stderr: 'inherit',
})
const client = new Client({ name: 'sandboxio-sdk-proof', version: '1.0.0' })

try {
	await client.connect(transport)
	check('initialize negotiated a revision', !!client.getServerVersion(),
	      JSON.stringify(client.getServerVersion()))
	check('server is sandboxio', client.getServerVersion()?.name === 'sandboxio')

	const { tools } = await client.listTools()
	const names = tools.map((t) => t.name).sort()
	check('tools/list has the five tools',
	      JSON.stringify(names) ===
		      JSON.stringify(['list_files', 'read_file', 'run_code', 'run_command', 'write_file']),
	      JSON.stringify(names))

	const r = await client.callTool({ name: 'run_code', arguments: { code: 'print(6*7)' } })
	check('run_code print(6*7) gives 42', !r.isError && r.structuredContent?.stdout === '42\n',
	      JSON.stringify(r))

	const w = await client.callTool({
		name: 'write_file',
		arguments: { path: '/workspace/sdk.txt', content: 'from the SDK\n' },
	})
	check('write_file', !w.isError, JSON.stringify(w))
	const rd = await client.callTool({ name: 'read_file', arguments: { path: '/workspace/sdk.txt' } })
	check('read_file gives what was written', text(rd) === 'from the SDK\n', JSON.stringify(rd))
	const ls = await client.callTool({ name: 'list_files', arguments: {} })
	check('list_files shows the file', text(ls).includes('sdk.txt'), JSON.stringify(ls))

	let refused = false
	try {
		await client.callTool({ name: 'run_code', arguments: { code: 'x', network: true } })
	} catch (e) {
		refused = /network/.test(String(e))
	}
	check('an argument beyond the schema is refused', refused)
} catch (e) {
	check('the session ran', false, String(e && e.stack ? e.stack : e))
} finally {
	await client.close()
}

finish()
