#!/bin/sh
# Reads nothing, writes nothing, ignores SIGTERM: only SIGKILL of the group ends it.
echo $$ >> "${REEL_TEST_PIDFILE:-/dev/null}"
trap '' TERM
sleep 300 &
echo $! >> "${REEL_TEST_PIDFILE:-/dev/null}"
while :; do sleep 1; done
