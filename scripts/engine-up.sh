#!/bin/sh
# engine-up.sh: make sure a Docker engine answers, bringing one up on
# Debian/Ubuntu when none does. Idempotent: when `docker version` already
# answers it changes nothing.
#
# It installs docker.io and debootstrap (the latter builds the base image
# offline) when missing, and starts dockerd without a bridge or iptables
# rules: replays only ever use the host network or none, so no network has
# to be created. The daemon's log goes to $BOOTSTRAP_DOCKERD_LOG
# (default /tmp/dockerd.log). Waits up to $BOOTSTRAP_DOCKERD_WAIT seconds
# (default 60) for the engine to answer.
set -eu

log=${BOOTSTRAP_DOCKERD_LOG:-/tmp/dockerd.log}
wait_s=${BOOTSTRAP_DOCKERD_WAIT:-60}

answers() { docker version >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && answers && command -v debootstrap >/dev/null 2>&1; then
	echo "engine-up: docker engine answers"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "engine-up: no docker engine answers and installing or starting one needs root" >&2
	exit 1
fi

missing=""
command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
command -v debootstrap >/dev/null 2>&1 || missing="$missing debootstrap"
if [ -n "$missing" ]; then
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "engine-up: missing$missing and this is not a Debian/Ubuntu system (no apt-get); install them by hand" >&2
		exit 1
	fi
	echo "engine-up: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# shellcheck disable=SC2086 # word splitting of the package list is wanted
	apt-get install -y --no-install-recommends $missing
fi

if answers; then
	echo "engine-up: docker engine answers"
	exit 0
fi

if pgrep -x dockerd >/dev/null 2>&1; then
	echo "engine-up: dockerd is running but not answering yet; waiting"
else
	# A dockerd that was killed leaves its pid file, which a new one
	# refuses to start over when the pid has been reused; no dockerd runs,
	# so the file is stale.
	if [ -f /var/run/docker.pid ]; then
		echo "engine-up: removing the stale /var/run/docker.pid of an engine that no longer runs"
		rm -f /var/run/docker.pid
	fi
	echo "engine-up: starting dockerd (log: $log)"
	# setsid: the daemon must outlive this script and its terminal.
	setsid dockerd --bridge=none --iptables=false >>"$log" 2>&1 </dev/null &
fi

i=0
while [ "$i" -lt "$wait_s" ]; do
	if answers; then
		echo "engine-up: docker engine answers after ${i}s"
		exit 0
	fi
	i=$((i + 1))
	sleep 1
done

echo "engine-up: docker engine did not answer within ${wait_s}s; last lines of $log:" >&2
tail -n 20 "$log" >&2 2>/dev/null || true
exit 1
