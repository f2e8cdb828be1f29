#!/bin/sh
# `apt-get update`, then `apt-get install PACKAGE...`, waiting for another package install to
# release apt's locks (dpkg's, the package lists') for up to APT_LOCK_WAIT seconds (default 600)
# instead of failing at once. Any other failure ends it at once with apt's message.
# The Makefile installs Chromium, PostgreSQL and Redis through it (`make test`, `make team-local`).
set -u
apt=${APT_GET:-apt-get}
limit=${APT_LOCK_WAIT:-600}
deadline=$(( $(date +%s) + limit ))
told=""
export DEBIAN_FRONTEND=noninteractive

apt_get() {
    while :; do
        left=$(( deadline - $(date +%s) ))
        [ "$left" -lt 1 ] && left=1
        # apt >= 1.9.11 waits for dpkg's lock itself; the loop covers the other locks and older apt
        if out=$("$apt" -o "DPkg::Lock::Timeout=$left" "$@" 2>&1); then
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
            echo "waiting for another package install to release apt's lock (up to ${limit} s)..." >&2
            told=1
        fi
        sleep "${APT_LOCK_POLL:-2}"
    done
}

apt_get update -qq && apt_get install -y -qq "$@"
