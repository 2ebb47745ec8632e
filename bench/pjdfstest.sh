#!/usr/bin/env bash
# bench/pjdfstest.sh [SHOAL]: pjdfstest (the POSIX file system test suite of pjd/pjdfstest) against a
# Shoal FUSE mount over `shoal up --ufs DIR` (a local store), and prints per group the tests run,
# passed and failed as a markdown table, then the failed tests of the groups the README claims.
#
# The suite is not part of this repository: PJDFSTEST_SRC names a checkout of it (default: the
# mirror the tool library fetches to, /work/.mirror/pjd+pjdfstest/repo). It is built here
# (autoreconf, configure, make: scripts/bootstrap installs autoconf and automake). Needs root
# (the suite switches users) and /dev/fuse. The mount runs with -o allow_other, so the suite's
# other users reach it, and the kernel checks the modes the mount shows (README, "Other users").
#
# Claimed groups are those whose operations the README says the mount supports (open, create,
# truncate, ftruncate, mkdir, rmdir, unlink, rename); the others (modes, owners, times, links,
# special files, fallocate) are run too and marked "not claimed": the README says they are not kept
# or not supported. Each test file runs with a time limit (PJDFSTEST_FILE_TIMEOUT, default 300 s).
set -euo pipefail
SHOAL=${1:-$(dirname "$0")/../build/shoal}
SHOAL=$(realpath "$SHOAL")
SRC=${PJDFSTEST_SRC:-/work/.mirror/pjd+pjdfstest/repo}
FILE_TIMEOUT=${PJDFSTEST_FILE_TIMEOUT:-300}
CLAIMED=" open truncate ftruncate mkdir rmdir unlink rename "
GROUPS_ALL=(open truncate ftruncate mkdir rmdir unlink rename chmod chown utimensat link symlink mkfifo mknod
  posix_fallocate granular chflags)

die() { echo "pjdfstest.sh: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root: the suite runs its checks as several users"
[[ -r /dev/fuse ]] || die "no usable /dev/fuse"
[[ -d $SRC ]] || die "no pjdfstest source at $SRC: set PJDFSTEST_SRC to a checkout of pjd/pjdfstest"
command -v autoreconf >/dev/null || die "autoreconf is missing (scripts/bootstrap installs autoconf and automake)"

WORK=$(mktemp -d /tmp/shoal-pjdfstest.XXXXXX)
UP_PID=""
cleanup() {
  mountpoint -q "$WORK/mnt" 2>/dev/null && { "$SHOAL" fuse --unmount "$WORK/mnt" >/dev/null 2>&1 || fusermount3 -u -z "$WORK/mnt" || true; }
  if [[ -n $UP_PID ]]; then kill -INT "$UP_PID" 2>/dev/null || true; wait "$UP_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# Build the suite in the work dir (the checkout stays untouched).
mkdir -p "$WORK/suite"
if [[ -d $SRC/.git || -f $SRC/HEAD ]]; then
  git -C "$SRC" archive HEAD | tar x -C "$WORK/suite"
else
  cp -r "$SRC"/. "$WORK/suite"
fi
(cd "$WORK/suite" && autoreconf -ifs && ./configure && make pjdfstest) >"$WORK/build.log" 2>&1 ||
  die "building pjdfstest failed: $(tail -3 "$WORK/build.log" | tr '\n' ' ')"
SUITE=$WORK/suite

chmod 0755 "$WORK"
mkdir -p "$WORK/store" "$WORK/mnt"
"$SHOAL" up --ufs "$WORK/store" --workers 1 --state-dir "$WORK/state" >"$WORK/up.out" 2>"$WORK/up.err" &
UP_PID=$!
for _ in $(seq 1 600); do
  grep -q '^ready: config=' "$WORK/up.out" && break
  kill -0 "$UP_PID" 2>/dev/null || die "shoal up exited: $(tail -1 "$WORK/up.err")"
  sleep 0.1
done
CONFIG=$(sed -n 's/^ready: config=//p' "$WORK/up.out")
[[ -n $CONFIG ]] || die "shoal up did not become ready in 60 s"
"$SHOAL" fuse "$WORK/mnt" --config "$CONFIG" -o allow_other --log "$WORK/fuse.log" >/dev/null ||
  die "the FUSE mount failed: $(tail -1 "$WORK/fuse.log")"

echo "| group | claimed by the README | tests | passed | failed | passed / tests |"
echo "|---|---|---|---|---|---|"
FAILED_LIST=""
for group in "${GROUPS_ALL[@]}"; do
  [[ -d $SUITE/tests/$group ]] || continue
  total=0 pass=0 fails=""
  for t in "$SUITE/tests/$group"/*.t; do
    dir="$WORK/mnt/data/$group-$(basename "$t" .t)"
    mkdir -p "$dir"
    out=$(cd "$dir" && timeout "$FILE_TIMEOUT" sh "$t" 2>/dev/null || true)
    planned=$(printf '%s\n' "$out" | sed -n 's/^1\.\.\([0-9]*\)$/\1/p' | head -1)
    ok=$(printf '%s\n' "$out" | grep -c '^ok ' || true)
    planned=${planned:-0}
    total=$((total + planned))
    pass=$((pass + ok))
    ((ok < planned)) && fails+=" $(basename "$t") $((planned - ok))/$planned,"
  done
  claimed=no
  [[ $CLAIMED == *" $group "* ]] && claimed=yes
  ratio=$(awk -v p="$pass" -v t="$total" 'BEGIN { if (t > 0) printf "%.2f", p / t }')
  echo "| $group | $claimed | $total | $pass | $((total - pass)) | $ratio |"
  [[ $claimed == yes && -n $fails ]] && FAILED_LIST+="- $group:${fails%,}"$'\n'
done
echo
if [[ -n $FAILED_LIST ]]; then
  echo "Failed tests of the claimed groups (file failed/planned; the test numbers: run the file in the mount):"
  echo
  printf '%s' "$FAILED_LIST"
else
  echo "Every test of the claimed groups passed."
fi
