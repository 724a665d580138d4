#!/usr/bin/env bash
# Runs a ported tutorial twice on 2 workers with one directory: the first run fails after some steps (an
# error, as a crash would), the second must print EXPECT (what it resumed from) and finish.
# Usage: resume_test.sh LOCKSTEP PROGRAM STEPS_PER_EPOCH EXPECT FIRST_RUN_ARGS...
set -u
lockstep=$1 program=$2 steps=$3 expect=$4
shift 4
dir=$(mktemp -d "${TMPDIR:-/tmp}/resume_test-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

echo "== first run: $program $steps $dir $*"
timeout -k 10 240 "$lockstep" launch -n 2 -- "$program" "$steps" "$dir" "$@"
rc=$?
if [ "$rc" -eq 0 ]; then echo "FAIL: the first run was meant to stop with an error"; exit 1; fi

echo "== second run: $program $steps $dir"
out=$(timeout -k 10 240 "$lockstep" launch -n 2 -- "$program" "$steps" "$dir" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -ne 0 ]; then echo "FAIL: the second run exited with $rc"; exit 1; fi
if ! grep -Eq -- "$expect" <<<"$out"; then echo "FAIL: the second run did not print /$expect/"; exit 1; fi
echo "PASS: resumed ($expect)"
