#!/bin/sh
# go-up.sh: print the directory of a go command new enough to build
# bootstrap (the go directive of go.mod), fetching a pinned release when the
# one on PATH is missing or too old (Debian 12 ships Go 1.19). Use it as
#   PATH="$(scripts/go-up.sh):$PATH"
# The release comes from the Go module proxy ($GOPROXY's first entry,
# default https://proxy.golang.org) as the module golang.org/toolchain, the
# form the go command itself downloads, and its sha256 is checked before it
# is unpacked under ${XDG_CACHE_HOME:-$HOME/.cache}/bootstrap/go. Progress
# goes to stderr; only the directory goes to stdout.
set -eu

version=1.26.8
cd "$(dirname "$0")/.."
need=$(sed -n 's/^go \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' go.mod)

# new_enough GOVERSION: whether go1.X[.Y] meets the go directive's 1.N.
new_enough() {
	v=${1#go}
	major=${v%%.*}; rest=${v#*.}; minor=${rest%%[!0-9]*}
	nmajor=${need%%.*}; nminor=${need#*.}
	[ "$major" -gt "$nmajor" ] || { [ "$major" -eq "$nmajor" ] && [ "$minor" -ge "$nminor" ]; }
}

if command -v go >/dev/null 2>&1; then
	have=$(go env GOVERSION 2>/dev/null || true)
	if [ -n "$have" ] && new_enough "$have"; then
		dirname "$(command -v go)"
		exit 0
	fi
	echo "go-up: $(command -v go) is ${have:-of unknown version}; bootstrap needs go $need or newer" >&2
fi

case $(uname -m) in
x86_64 | amd64) arch=amd64 sum=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7 ;;
aarch64 | arm64) arch=arm64 sum=02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99 ;;
*) echo "go-up: no pinned Go release for $(uname -m); install Go $need or newer by hand" >&2; exit 1 ;;
esac
mod=golang.org/toolchain@v0.0.1-go$version.linux-$arch
dest=${XDG_CACHE_HOME:-$HOME/.cache}/bootstrap/go
if [ -x "$dest/$mod/bin/go" ]; then
	echo "$dest/$mod/bin"
	exit 0
fi

for tool in curl unzip sha256sum; do
	if ! command -v $tool >/dev/null 2>&1; then
		if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
			echo "go-up: installing curl and unzip" >&2
			apt-get update >&2
			DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl unzip ca-certificates >&2
			break
		fi
		echo "go-up: $tool is missing; install it, or Go $need or newer, by hand" >&2
		exit 1
	fi
done

proxy=$(printf '%s' "${GOPROXY:-https://proxy.golang.org}" | cut -d, -f1 | cut -d'|' -f1)
case $proxy in direct | off | '') proxy=https://proxy.golang.org ;; esac
mkdir -p "$dest"
tmp=$(mktemp -d "$dest/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "go-up: fetching go$version (linux/$arch) from $proxy" >&2
curl -fsSL -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/v0.0.1-go$version.linux-$arch.zip"
echo "$sum  $tmp/go.zip" | sha256sum -c --quiet - >&2 || {
	echo "go-up: the download's sha256 is not the pinned $sum" >&2
	exit 1
}
unzip -q "$tmp/go.zip" -d "$tmp/x"
# The module zip keeps no file modes; the go command marks its binaries
# executable when it unpacks one, and so does this.
chmod -R a+rX "$tmp/x"
find "$tmp/x/$mod/bin" "$tmp/x/$mod/pkg/tool" -type f -exec chmod a+x {} +
mkdir -p "$dest/golang.org"
mv "$tmp/x/$mod" "$dest/$mod"
echo "$dest/$mod/bin"
