// tests/sdk/e2b-noroot.mjs: the official E2B JavaScript SDK against
// `sandboxio serve --api e2b --e2b-image sandboxio/e2b-base:2 --no-e2b-root`:
// template base is E2B's flavour (user `user`), and envd's user "root" is
// refused with permission_denied, naming the option.
//
// Run by tests/sdk/run-e2b.sh against its third server, with the same
// environment as tests/sdk/e2b.mjs. Exits non-zero when any check failed.
import { Sandbox } from 'e2b'
import { check, finish } from './lib.mjs'


let sbx
try {
	sbx = await Sandbox.create({
		metadata: { 'io.sandboxio.tenant': process.env.SBX_E2B_TENANT },
		timeoutMs: 60_000,
	})
	const u = await sbx.commands.run('whoami')
	check('the flavour is on: whoami is user', u.stdout === 'user\n', JSON.stringify(u.stdout))
	let e
	try {
		await sbx.commands.run('whoami', { user: 'root' })
	} catch (err) {
		e = err
	}
	check('user root is refused: permission_denied naming --no-e2b-root',
		e && /permission_denied/.test(e.message) && /--no-e2b-root/.test(e.message),
		e ? e.message : 'it ran')
} catch (e) {
	check('the SDK calls do not throw', false, `${e && e.name}: ${e && e.message}`)
}
if (sbx)
	check('kill() returns true', (await sbx.kill()) === true)
finish()
