#!/usr/bin/env bash
# The Node.js client's tests against the daemon `make test` built (clients/node): builds it with
# Debian's tsc (node-typescript, installed by scripts/install-deps.sh --test; a type error fails
# the build), packs it with npm as a user would get it, installs the tarball into a scratch
# project, type-checks a strict consumer against the installed declarations with no @types at
# all, and runs the tests there with `node --test`, so they import the installed package, not
# the source tree. The package has no dependencies: nothing is downloaded. Everything is written
# under .build/node-client, npm's cache and the tests' temporary directories too. The tests start
# the daemon themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
repository=$PWD
source=$repository/clients/node
build=$repository/.build/node-client
command -v tsc >/dev/null || { echo "no tsc: apt-get install node-typescript (scripts/install-deps.sh --test)" >&2; exit 1; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
    { echo "node $(node --version) is older than the client's 20" >&2; exit 1; }
export TOKENVAULT_BIN=${TOKENVAULT_BIN:-$repository/.build/debug/tokenvault} TOKENVAULT_REPOSITORY=$repository
# npm offline, its cache and settings in the build directory; no $HOME needed.
export npm_config_cache=$build/npm-cache npm_config_userconfig=$build/npmrc npm_config_offline=true \
    npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false npm_config_loglevel=error
# The tests' daemons put their sockets in TMPDIR, and a socket's path has at most 107 bytes: a
# checkout too deep for that leaves them in the system's temporary directory.
[ ${#build} -gt 70 ] || export TMPDIR=$build/tmp
rm -rf "$build/package" "$build/consumer" "$build/tmp" "$build"/tokenvault-*.tgz
mkdir -p "$build/package" "$build/consumer" "$build/tmp"

# Build into a staging copy of the package, so the checkout gets no dist/. The copy has no
# sources, so its package.json's prepack (`tsc -p .`, for a pack in clients/node) is not run.
tsc -p "$source" --outDir "$build/package/dist"
cp "$source/package.json" "$source/README.md" "$build/package/"
(cd "$build/package" && npm pack --ignore-scripts --pack-destination "$build" >/dev/null)
tarball=$(echo "$build"/tokenvault-*.tgz)
listing=$(tar -tzf "$tarball")
for file in package.json README.md dist/index.js dist/index.d.ts dist/client.d.ts dist/errors.d.ts; do
    grep -qx "package/$file" <<<"$listing" || { echo "$tarball lacks $file" >&2; exit 1; }
done
if grep -vE '^package/(package\.json|README\.md|dist/[a-z]+\.(js|d\.ts))$' <<<"$listing"; then
    echo "$tarball holds the files above, which it should not" >&2
    exit 1
fi
echo "packed $tarball: $(wc -l <<<"$listing") files"
# The declarations stand on ECMAScript types alone (stripInternal drops what imports node:http).
if grep -l 'node:' "$build"/package/dist/*.d.ts; then
    echo "the declarations above mention node: modules, which users without @types/node lack" >&2
    exit 1
fi

# Install it as a user would, and take the tests, the example and the README beside it.
echo '{"name": "tokenvault-consumer", "private": true, "type": "module"}' >"$build/consumer/package.json"
(cd "$build/consumer" && npm install --no-package-lock "$tarball" >/dev/null)
cp -R "$source/test" "$source/examples" "$source/README.md" "$build/consumer/"
tsc -p "$build/consumer/test/consumer"
cd "$build/consumer"
node --test test/*.test.js
