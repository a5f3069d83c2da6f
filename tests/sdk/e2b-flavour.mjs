// tests/sdk/e2b-flavour.mjs: the official E2B JavaScript SDK (npm e2b,
// pinned in package.json) against `sandboxio serve --api e2b --e2b-image
// sandboxio/e2b-base:2`: template "base" is E2B's flavour there. Its
// commands run as user `user` in /home/user with git and curl at hand, and
// envd's user "root" is the sandbox's root, which holds no capability.
//
// Run by tests/sdk/run-e2b.sh against its second server (the one started
// with --e2b-image), with the same environment as tests/sdk/e2b.mjs. Prints
// one line per check and exits non-zero when any failed.
import { Sandbox, Template } from 'e2b'
import { check, finish, requireE2bEnv, step } from './lib.mjs'

const tenant = process.env.SBX_E2B_TENANT

requireE2bEnv()

await step('Template.exists', async () => {
	check('Template.exists("base") is true', (await Template.exists('base')) === true)
})

let sbx
await step('Sandbox.create', async () => {
	sbx = await Sandbox.create({ metadata: { 'io.sandboxio.tenant': tenant }, timeoutMs: 120_000 })
})
if (!sbx) {
	finish(1)
}

await step('the default user', async () => {
	const r = await sbx.commands.run('whoami; pwd; echo "$HOME $USER"')
	check('whoami is user, pwd /home/user, HOME /home/user',
		r.stdout === 'user\n/home/user\n/home/user user\n', JSON.stringify(r.stdout))
	const t = await sbx.commands.run('git --version && curl --version | head -1 && command -v sudo')
	check('git, curl and sudo are there', /^git version /.test(t.stdout) &&
		/\ncurl /.test(t.stdout) && /\n\/usr\/bin\/sudo\n$/.test(t.stdout), JSON.stringify(t.stdout))
})

await step('files as user', async () => {
	await sbx.files.write('/home/user/flavour.txt', 'mine\n')
	const r = await sbx.commands.run("stat -c '%U %G' /home/user/flavour.txt; cat flavour.txt")
	check('a file written as user is owned by user and in the working directory',
		r.stdout === 'user user\nmine\n', JSON.stringify(r.stdout))
	const info = await sbx.files.getInfo('/home/user/flavour.txt')
	check('getInfo names user as its owner', info.owner === 'user', JSON.stringify(info))
})

await step('root', async () => {
	const r = await sbx.commands.run(
		"whoami; pwd; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status | tr -s '\\t' ' '",
		{ user: 'root' })
	check('user root: whoami root in /root, CapEff and CapBnd 0, NoNewPrivs 1',
		r.stdout === 'root\n/root\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\n' +
			'NoNewPrivs: 1\n', JSON.stringify(r.stdout))
	const w = await sbx.commands.run(
		'echo x > /etc/hostname; echo "etc $?"; mount -t tmpfs none /mnt 2>/dev/null; echo "mount $?"',
		{ user: 'root' })
	check('root cannot write /etc/hostname nor mount', w.stdout === 'etc 1\nmount 32\n',
		JSON.stringify(w.stdout))
	const s = await sbx.commands.run('sudo -n id -u 2>&1; echo "sudo $?"')
	check('sudo gains nothing under no-new-privileges', /no new privileges/.test(s.stdout) &&
		/sudo 1\n$/.test(s.stdout), JSON.stringify(s.stdout))
	const u = await sbx.commands.run('whoami')
	check('the next command is user again', u.stdout === 'user\n', JSON.stringify(u.stdout))
	const h = await sbx.commands.run('id -u; cat; echo end', { user: 'root', stdin: true,
		background: true })
	await h.sendStdin('one\n')
	await h.closeStdin()
	const e = await h.wait()
	check('a root command takes streamed stdin', e.stdout === '0\none\nend\n',
		JSON.stringify(e.stdout))
})

await step('kill', async () => {
	check('kill() returns true', (await sbx.kill()) === true)
})

finish()
