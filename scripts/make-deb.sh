#!/usr/bin/env bash
# Builds the Debian package of TokenVault from an already built binary, without network access.
#
#   scripts/make-deb.sh [--allow-dynamic-swift] BINARY VERSION OUTDIR
#
#   BINARY   the tokenvault executable to package, with the tokenvault-mcp it runs for
#            `tokenvault mcp` beside it (same directory, packaged too). `make deb` passes release
#            builds linked with --static-swift-stdlib, which run on any Debian 12 system with
#            libsodium23, libsqlite3-0 and libcurl4 (the package depends on them).
#   VERSION  the upstream version (`tokenVaultVersion`, e.g. 0.2.0); the package's version is
#            VERSION-$DEB_REVISION.
#   OUTDIR   created if needed; receives tokenvault_VERSION-REVISION_ARCH.deb (ARCH from
#            `dpkg --print-architecture`). The path of the package is the last line printed.
#
#   --allow-dynamic-swift  package a binary that loads the Swift runtime from the toolchain
#            (RUNPATH /opt/swift/...), such as the debug build. Such a package installs only where
#            the same toolchain is, and lintian reports its RUNPATH (custom-library-search-path):
#            for tests and trials, never for distribution. Without it such a binary is refused.
#
# Environment:
#   DEB_REVISION     Debian revision (default 1).
#   DEB_MAINTAINER   the Maintainer field (default "TokenVault maintainers <tokenvault@example.org>").
#   DEB_COMPRESSION  dpkg-deb -Z: xz (default), gzip, zstd or none; DEB_COMPRESSION_LEVEL: -z.
#   GENERATE_MANUAL  swift-argument-parser's generate-manual tool (default: the one under
#                    .build/release or .build/debug; `make deb` builds it). It writes the man page
#                    from the binary's `--experimental-dump-help`.
#   SOURCE_DATE_EPOCH  timestamps of files, man page and changelog (default: the HEAD commit's).
#
# Needs dpkg-deb, dpkg-shlibdeps (dpkg-dev), strip (binutils), gzip. Touches nothing outside a
# temporary staging directory and OUTDIR.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 64
}

allow_dynamic=0
while [ $# -gt 0 ]; do
    case "$1" in
    --allow-dynamic-swift) allow_dynamic=1; shift ;;
    -h | --help) usage ;;
    --) shift; break ;;
    -*) echo "make-deb: unknown option $1" >&2; usage ;;
    *) break ;;
    esac
done
[ $# -eq 3 ] || usage

binary=$1
upstream_version=$2
outdir=$3
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
revision=${DEB_REVISION:-1}
version="$upstream_version-$revision"
maintainer=${DEB_MAINTAINER:-TokenVault maintainers <tokenvault@example.org>}
compression=${DEB_COMPRESSION:-xz}
arch=$(dpkg --print-architecture)

fail() {
    echo "make-deb: $*" >&2
    exit 1
}

[ -x "$binary" ] || fail "$binary is not an executable file"
mcp_binary="$(dirname "$binary")/tokenvault-mcp"
[ -x "$mcp_binary" ] || fail "$mcp_binary is missing: build it with the same options (swift build --product tokenvault-mcp)"
[[ "$upstream_version" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || fail "'$upstream_version' is not an upstream version such as 0.2.0"
[[ "$revision" =~ ^[A-Za-z0-9.+~]+$ ]] || fail "DEB_REVISION '$revision' is not a Debian revision such as 1"
for tool in dpkg-deb dpkg-shlibdeps strip gzip readelf; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (apt-get install dpkg-dev binutils)"
done

for executable in "$binary" "$mcp_binary"; do
    if readelf -d "$executable" | grep -q 'NEEDED.*\[libswiftCore\.so\]'; then
        [ "$allow_dynamic" -eq 1 ] ||
            fail "$executable loads the Swift runtime from the toolchain; build it with --static-swift-stdlib (make deb does) or pass --allow-dynamic-swift for a test package"
    fi
done

generate_manual=${GENERATE_MANUAL:-}
if [ -z "$generate_manual" ]; then
    for candidate in "$repo/.build/release/generate-manual" "$repo/.build/debug/generate-manual"; do
        if [ -x "$candidate" ]; then
            generate_manual=$candidate
            break
        fi
    done
fi
if [ -z "$generate_manual" ] || [ ! -x "$generate_manual" ]; then
    fail "generate-manual not found: swift build --product generate-manual (or set GENERATE_MANUAL)"
fi

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH=$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

work=$(mktemp -d "${TMPDIR:-/tmp}/tokenvault-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage="$work/tokenvault_${version}_$arch"
mkdir -p "$stage/DEBIAN"

# Every file root:root (dpkg-deb --root-owner-group); directories 0755, files 0644 unless set.
put() { # put MODE SOURCE DEST
    install -D -m "$1" "$2" "$stage/$3"
}

# The binary, stripped as dh_strip does. The binary itself then writes its completions and the
# man page (it is run only with help-printing options: nothing is opened or created).
put 0755 "$binary" usr/bin/tokenvault
put 0755 "$mcp_binary" usr/bin/tokenvault-mcp
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/tokenvault" \
    "$stage/usr/bin/tokenvault-mcp"
installed_binary="$stage/usr/bin/tokenvault"
run_binary() { env -i PATH=/usr/bin:/bin HOME=/nonexistent "$installed_binary" "$@"; }
run_binary --help >/dev/null || fail "the stripped binary does not run"
env -i PATH=/usr/bin:/bin HOME=/nonexistent "$stage/usr/bin/tokenvault-mcp" --help >/dev/null ||
    fail "the stripped tokenvault-mcp does not run"

mkdir -p "$work/generated"
# bash-completion sources its files: no #! line (lintian: bash-completion-with-hashbang).
run_binary --generate-completion-script bash | sed -e '1{/^#!/d}' >"$work/generated/tokenvault.bash"
run_binary --generate-completion-script zsh >"$work/generated/_tokenvault"
run_binary --generate-completion-script fish >"$work/generated/tokenvault.fish"
put 0644 "$work/generated/tokenvault.bash" usr/share/bash-completion/completions/tokenvault
put 0644 "$work/generated/_tokenvault" usr/share/zsh/vendor-completions/_tokenvault
put 0644 "$work/generated/tokenvault.fish" usr/share/fish/vendor_completions.d/tokenvault.fish

# The man page, in mdoc, from the commands' own help. Blank lines (between paragraphs of a
# command's discussion) become .Pp, the paragraph macro, which man(1) expects instead.
manual_date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
for command in tokenvault tokenvault-mcp; do
    "$generate_manual" "$stage/usr/bin/$command" --date "$manual_date" --section 1 \
        --authors "TokenVault maintainers" --output-directory "$work/generated" >/dev/null
    [ -s "$work/generated/$command.1" ] || fail "$generate_manual wrote no $command.1"
    sed -e 's/^$/.Pp/' "$work/generated/$command.1" | gzip -9n >"$work/generated/$command.1.gz"
    put 0644 "$work/generated/$command.1.gz" "usr/share/man/man1/$command.1.gz"
done

# systemd and the account.
put 0644 "$repo/packaging/systemd/tokenvault.service" lib/systemd/system/tokenvault.service
put 0644 "$repo/packaging/systemd/tokenvault.socket" lib/systemd/system/tokenvault.socket
put 0644 "$repo/packaging/sysusers.d/tokenvault.conf" usr/lib/sysusers.d/tokenvault.conf
put 0644 "$repo/packaging/tmpfiles.d/tokenvault.conf" usr/lib/tmpfiles.d/tokenvault.conf

# The configuration (a conffile: dpkg keeps an edited one on upgrade and asks).
put 0644 "$repo/packaging/config.json" etc/tokenvault/config.json

# Prometheus rules (not under /usr/share/doc, which minimal images leave out).
put 0644 "$repo/packaging/prometheus/tokenvault-alerts.yml" usr/share/tokenvault/prometheus/tokenvault-alerts.yml
put 0644 "$repo/packaging/grafana/tokenvault-dashboard.json" usr/share/tokenvault/grafana/tokenvault-dashboard.json

# Documentation: README.md, every page of docs/ (configuration, operations, architecture,
# webhooks, scale-out, benchmarks) and the provider pages (PackagingTests checks the main ones).
doc=usr/share/doc/tokenvault
put 0644 "$repo/README.md" "$doc/README.md"
for file in "$repo"/docs/*.md; do
    put 0644 "$file" "$doc/$(basename "$file")"
done
for file in "$repo"/docs/providers/*.md; do
    [ -e "$file" ] && put 0644 "$file" "$doc/providers/$(basename "$file")"
done
put 0644 "$repo/packaging/debian/copyright" "$doc/copyright"
put 0644 "$repo/packaging/debian/lintian-overrides" usr/share/lintian/overrides/tokenvault
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
    echo "tokenvault ($version) unstable; urgency=medium"
    echo
    echo "  * Package of TokenVault $upstream_version (commit $commit)."
    echo
    echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$work/changelog.Debian.gz"
put 0644 "$work/changelog.Debian.gz" "$doc/changelog.Debian.gz"

# Control files.
for script in postinst prerm postrm; do
    put 0755 "$repo/packaging/debian/$script" "DEBIAN/$script"
done
echo /etc/tokenvault/config.json >"$stage/DEBIAN/conffiles"
chmod 0644 "$stage/DEBIAN/conffiles"

# Library dependencies, as dpkg-shlibdeps finds them (it wants a debian/control to read).
mkdir -p "$work/shlibs/debian"
printf 'Source: tokenvault\n\nPackage: tokenvault\nArchitecture: any\n' >"$work/shlibs/debian/control"
shlibs=$(cd "$work/shlibs" && dpkg-shlibdeps -O --ignore-missing-info "$installed_binary" "$stage/usr/bin/tokenvault-mcp" 2>"$work/shlibdeps.log") ||
    fail "dpkg-shlibdeps failed: $(cat "$work/shlibdeps.log")"
depends=${shlibs#shlibs:Depends=}
[ -n "$depends" ] || fail "dpkg-shlibdeps found no dependencies"

installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: tokenvault
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends, adduser
Recommends: systemd
Section: admin
Priority: optional
Description: vault daemon for OAuth 2.0 and OpenID Connect credentials
 TokenVault keeps OAuth 2.0 / OpenID Connect credentials sealed
 (XChaCha20-Poly1305 under a master key) in SQLite or PostgreSQL, refreshes
 them before they expire, and hands access tokens to local processes over a
 Unix socket, deciding who may read what from the caller's uid and groups.
 .
 This package ships the daemon and command-line tool, hardened systemd units
 with socket activation, a default configuration and Prometheus alerting
 rules.
EOF
chmod 0644 "$stage/DEBIAN/control"

(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) \
    >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"

find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$outdir"
package="$outdir/tokenvault_${version}_$arch.deb"
dpkg-deb --build --root-owner-group -Z"$compression" ${DEB_COMPRESSION_LEVEL:+-z"$DEB_COMPRESSION_LEVEL"} \
    "$stage" "$package" >/dev/null
echo "$package"
