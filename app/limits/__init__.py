"""The limits on what a caller may send or try, in one place: request bodies, sign-in attempts,
password hashing, one-line predictions per user. The "Security" section of docs/operations.md lists
them with these names, and a test checks that the two agree.

Example:
    >>> MAX_API_BODY_BYTES // 1024 // 1024, SIGN_IN_FAILURES_PER_NAME_AND_ADDRESS
    (2, 5)
"""

from __future__ import annotations

# A REST (``/api/v1/...``) request body: refused from its Content-Length, or while it streams in,
# before anything parses it (413). The biggest legitimate body, 1,000 texts of 2,000 characters
# with their contexts, is under 1 MiB of JSON (more with \\u escapes).
MAX_API_BODY_BYTES = 2 * 1024 * 1024
# The sign-in form (a name and a password).
MAX_SIGN_IN_BODY_BYTES = 16 * 1024
# Labelled examples per intent behind its score that a prediction may ask for (``k``: REST, the
# Gradio API, ``predict -k``).
MAX_K = 50

# Sign-in: failed attempts counted over a sliding window, per user name and address, per address,
# and per name from addresses where it never signed in. Past the first two limits, each next
# attempt of that kind waits (429 with Retry-After) 1 s, then 2, 4, ... up to SIGN_IN_MAX_DELAY_S
# after the last failure, before its password is hashed: a delay, never a lock. Past the per-name
# limit (a name guessed from many addresses) its attempts from other addresses are checked one at
# a time, each wrong one holding the next back SIGN_IN_NAME_PAUSE_S, at most SIGN_IN_NAME_WAITING
# waiting, an address once per SIGN_IN_MAX_DELAY_S: the owner gets in within seconds, a guess
# costs the attacker a pause of the name's line and a minute of an address. An address where
# the name signed in within SIGN_IN_KNOWN_ADDRESS_S (remembered across restarts: the security
# log) is held only by its own failures for that name.
SIGN_IN_WINDOW_S = 300
SIGN_IN_FAILURES_PER_NAME_AND_ADDRESS = 5
SIGN_IN_FAILURES_PER_ADDRESS = 20
SIGN_IN_FAILURES_PER_NAME = 10
SIGN_IN_MAX_DELAY_S = 60
SIGN_IN_KNOWN_ADDRESS_S = 30 * 24 * 3600
SIGN_IN_NAME_PAUSE_S = 3
SIGN_IN_NAME_WAITING = 16
# Password checks (argon2: 64 MiB, ~0.1-0.2 s of CPU each) run in a thread, this many at once; at
# most SIGN_INS_WAITING wait for one, those from the addresses that tried least recently first
# (every attempt counts, refused ones too): past it the one that ranks last is refused as busy
# (429), so a spray's guesses never crowd out a sign-in.
PASSWORD_HASHES_AT_ONCE = 1
SIGN_INS_WAITING = 16

# Projects opened from bundles that one user who is not an admin may be a member of at once: in a
# team, a designer who opens a bundle becomes the new project's member (its name never tells
# what other projects exist); past this many, she is asked to have one deleted first.
BUNDLE_PROJECTS_PER_USER = 20

# One-line predictions (REST ``text``, the Try tab) one user may have waiting or running at once;
# one more is refused as busy (429). Micro-batches take the users' requests in turns.
LINES_PER_USER = 8
# Events (UI actions, /gradio_api/call/... requests) one signed-in user may have waiting in
# Gradio's queue at once; one more is refused as busy (429).
EVENTS_QUEUED_PER_USER = 32

# Files uploaded through the UI (an import, a model bundle): one request holds one file of
# app.config.MAX_UPLOAD_BYTES (25 MiB) and its form; one user's uploads waiting for an import hold
# at most UPLOAD_BYTES_PER_USER, everyone's UPLOAD_BYTES_TOTAL (413 past either); an upload is
# removed when its import ends, or after UPLOAD_KEPT_S unused. Viewers upload nothing (403).
UPLOAD_REQUEST_BYTES = 25 * 1024 * 1024 + 64 * 1024
UPLOAD_BYTES_PER_USER = 64 * 1024 * 1024
UPLOAD_BYTES_TOTAL = 512 * 1024 * 1024
UPLOAD_KEPT_S = 3600
