#!/bin/sh
# `apt-get update`, then `apt-get install PACKAGE...`, waiting for another package install to
# release apt's locks (dpkg's, the package lists') for up to APT_LOCK_WAIT seconds (default 600)
# instead of failing at once, and saying so on stderr as soon as it waits (apt's own wait, with
# its output captured, was silent for up to the whole limit: issue 57). Any other failure ends
# it at once with apt's message.
# The Makefile installs Chromium, PostgreSQL and Redis through it (`make test`, `make team-local`).
set -u
apt=${APT_GET:-apt-get}
limit=${APT_LOCK_WAIT:-600}
poll=${APT_LOCK_POLL:-2}
deadline=$(( $(date +%s) + limit ))
told=""
export DEBIAN_FRONTEND=noninteractive

apt_get() {
    while :; do
        # apt >= 1.9.11 waits for dpkg's lock itself: for one poll at a time, so that this loop
        # says it waits (the loop also covers the other locks and older apt)
        if out=$("$apt" -o "DPkg::Lock::Timeout=$poll" "$@" 2>&1); then
            return 0
        else
            status=$?
        fi
        case $out in
            *"Could not get lock"* | *"Unable to lock"* | *"Unable to acquire"*) ;;
            *) printf '%s\n' "$out" >&2; return "$status" ;;
        esac
        if [ "$(date +%s)" -gt "$deadline" ]; then
            printf '%s\n' "$out" >&2
            echo "apt is still locked by another package install after ${limit} s (APT_LOCK_WAIT)" >&2
            return "$status"
        fi
        if [ -z "$told" ]; then
            holder=$(printf '%s\n' "$out" | sed -n 's/.*held by \(process [0-9]*[^.]*\).*/\1/p' | head -n 1)
            echo "waiting for another package install${holder:+ ($holder)} to release apt's lock (up to ${limit} s)..." >&2
            told=1
        fi
        sleep "$poll"
    done
}

apt_get update -qq && apt_get install -y -qq "$@"
