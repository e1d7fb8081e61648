#!/usr/bin/env bash
# Installs headless Chromium and ChromeDriver from Debian's packages when
# they are absent (the HTML report's test opens the page in them). Without
# root or apt-get it says so and leaves the test to skip, unless
# BOOTSTRAP_REQUIRE_BROWSER=1 makes that a failure there.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "browser-up: chromium and chromedriver are missing; install Debian's chromium and chromium-driver to run the browser test" >&2
	exit 0
fi
echo "browser-up: installing chromium chromium-driver"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends chromium chromium-driver
