#!/usr/bin/env bash
# bench/fuse_ls_lr.sh [FILES] [SHOAL]: `ls -lR` beside `find` over a tree of FILES files (default
# 100000, 1000 per directory) through a Shoal FUSE mount over `shoal up --ufs DIR` (a local store),
# and prints their times and ratio (issue 32 item 11: the target is ls -lR <= 3x find).
#
# The cluster's metadata is warmed by one untimed find; each timed command then runs on a fresh
# FUSE daemon (so the kernel caches nothing), so the figures are the mount's own cost per entry:
# find reads the listings (readdirplus); ls -lR also asks every file's attributes, ACL and
# security label (getxattr: answered ENOSYS once, then by the kernel).
set -euo pipefail
FILES=${1:-100000}
SHOAL=${2:-$(dirname "$0")/../build/shoal}
SHOAL=$(realpath "$SHOAL")
WORK=$(mktemp -d /tmp/shoal-ls-lr.XXXXXX)
UP_PID=""
cleanup() {
  for m in "$WORK"/mnt*; do mountpoint -q "$m" 2>/dev/null && "$SHOAL" fuse --unmount "$m" >/dev/null 2>&1 || true; done
  if [ -n "$UP_PID" ]; then kill -INT "$UP_PID" 2>/dev/null || true; wait "$UP_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/store" "$WORK/mnt-up"
python3 - "$WORK/store" "$FILES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%04d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%06d" % i), "wb") as f:
        f.write(b"x" * (i % 97))
PY

"$SHOAL" up --ufs "$WORK/store" --workers 2 --state-dir "$WORK/state" >"$WORK/up.out" 2>"$WORK/up.err" &
UP_PID=$!
for _ in $(seq 1 600); do grep -q '^ready: config=' "$WORK/up.out" && break; kill -0 "$UP_PID" || { cat "$WORK/up.err"; exit 1; }; sleep 0.1; done
CONFIG=$(sed -n 's/^ready: config=//p' "$WORK/up.out")

# timed NAME CMD...: mounts afresh, runs CMD with MNT set, prints seconds; checks the entry count.
run_on_fresh_mount() {
  local name=$1 cmd=$2 mnt="$WORK/mnt-$1"
  mkdir -p "$mnt"
  "$SHOAL" fuse "$mnt" --config "$CONFIG" >/dev/null
  local start end lines
  start=$(date +%s.%N)
  lines=$(MNT="$mnt" sh -c "$cmd" | wc -l)
  end=$(date +%s.%N)
  "$SHOAL" fuse --unmount "$mnt" >/dev/null
  echo "$name $(echo "$end - $start" | bc) $lines"
}

run_on_fresh_mount warm 'find "$MNT/data"' >/dev/null
read -r _ FIND_S FIND_N < <(run_on_fresh_mount find 'find "$MNT/data"')
read -r _ LS_S LS_N < <(run_on_fresh_mount ls 'ls -lR "$MNT/data"')
echo "| command over $FILES files through FUSE | seconds | lines |"
echo "|---|---|---|"
echo "| find | $FIND_S | $FIND_N |"
echo "| ls -lR | $LS_S | $LS_N |"
echo "ls -lR / find: $(echo "scale=2; $LS_S / $FIND_S" | bc)x (target <= 3x)"
