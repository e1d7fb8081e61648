#!/usr/bin/env bash
# Runs every test of bootstrap: brings a Docker engine up when none answers,
# builds the offline base image when it is absent, then vets and tests.
# The Docker-backed tests fail (rather than skip) when BOOTSTRAP_REQUIRE_DOCKER=1,
# the browser test when BOOTSTRAP_REQUIRE_BROWSER=1.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/engine-up.sh
scripts/browser-up.sh
# A Go new enough for go.mod: the one on PATH, else a pinned release.
PATH="$(scripts/go-up.sh):$PATH"
export PATH
go build -o bin/bootstrap ./cmd/bootstrap
bin/bootstrap image build-base --if-absent
go vet ./...
go test -count=1 -timeout 60m ./...
