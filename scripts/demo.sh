#!/usr/bin/env bash
# The main job on the bundled example: brings a Docker engine up when none
# answers, builds the offline base image when absent, then runs
# `bootstrap synth` on a fresh copy of examples/hello-go and shows the
# verified contract. Pass another repository path to use that instead.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/engine-up.sh
# A Go new enough for go.mod: the one on PATH, else a pinned release.
PATH="$(scripts/go-up.sh):$PATH"
export PATH
go build -o bin/bootstrap ./cmd/bootstrap
bin/bootstrap image build-base --if-absent

src=${1:-examples/hello-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
bin/bootstrap synth "$work"
echo
echo "== $src: .bootstrap/contract.yaml"
cat "$work/.bootstrap/contract.yaml"
echo
echo "== $src: .bootstrap/AGENTS.md"
cat "$work/.bootstrap/AGENTS.md"
