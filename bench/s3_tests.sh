#!/usr/bin/env bash
# bench/s3_tests.sh: the upstream S3 conformance suite, ceph/s3-tests, against
# Shoal's S3 endpoint (issue 32 item 7). The suite is not in this repository:
# give its checkout (a clone of github.com/ceph/s3-tests) with --suite DIR.
# It runs with Debian's /usr/bin/python3 (pytest, boto3, munch, gevent,
# isodate, pytz, lxml: scripts/bootstrap), unchanged; bench/s3_tests_adapter.py
# maps its per-test buckets onto fixed ones (see there).
#
#   bench/s3_tests.sh --suite DIR [-k EXPR] [--tests FILE::...] [--pool N]
#
# DIR may be a bare clone (what the session tool `fetch github:ceph/s3-tests`
# leaves): its HEAD is unpacked into the work dir.
#
# The endpoint is `shoal s3` over a 1-worker `shoal up` on a fresh directory,
# with the suite's three keys (main, alt, tenant) and a pool of N buckets
# (default 4000; a test takes one to three; each cleanup lists them all).
# Prints the pass/fail/skip counts, overall and per test-name family, and
# leaves the per-test results in $WORK/results.txt (the path is printed).
{
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUITE=""
KEXPR=""
TESTS="s3tests/functional/test_s3.py"
POOL=4000
while (($#)); do
  case $1 in
    --suite) SUITE=$2; shift ;;
    -k) KEXPR=$2; shift ;;
    --tests) TESTS=$2; shift ;;
    --pool) POOL=$2; shift ;;
    *) echo "usage: bench/s3_tests.sh --suite DIR [-k EXPR] [--tests FILE] [--pool N]" >&2; exit 2 ;;
  esac
  shift
done
[[ -d $SUITE/s3tests ]] || git --git-dir "$SUITE" rev-parse --verify -q HEAD:s3tests >/dev/null ||
  { echo "bench/s3_tests.sh: --suite DIR must be a checkout (or a bare clone) of ceph/s3-tests" >&2; exit 2; }
# shellcheck source=bench/standalone.sh
source "$ROOT/bench/standalone.sh" s3tests
if [[ ! -d $SUITE/s3tests ]]; then  # a bare clone: its HEAD, unpacked here
  mkdir -p "$WORK/suite"
  git --git-dir "$SUITE" archive HEAD | tar -x -C "$WORK/suite"
  SUITE_REV=$(git --git-dir "$SUITE" rev-parse --short HEAD)
  SUITE="$WORK/suite"
fi

PREFIX=shoaltest-
# The suite's own keys (its sample config): main, alt and tenant.
mapfile -t KEYS < <(/usr/bin/python3 -c '
import configparser, sys
c = configparser.RawConfigParser()
c.read(sys.argv[1])
for s in ("s3 main", "s3 alt", "s3 tenant"):
    print(c.get(s, "access_key")); print(c.get(s, "secret_key"))' "$SUITE/s3tests.conf.SAMPLE")

mkdir -p "$WORK/ufs"
bg shoal "$BUILD_DIR/shoal" up --ufs "$WORK/ufs" --workers 1 --cache-dir "$WORK/cache" --cache-size 1GiB \
  --state-dir "$WORK/state"
line=$(wait_for_line "$WORK/shoal.log" '^ready: config=' 60 "$BG_PID")
CONFIG=${line#ready: config=}
# The cluster's client config with the suite's keys and the bucket pool added
# to its s3 section (which `shoal up` already writes).
/usr/bin/python3 - "$CONFIG" "$WORK/s3.yaml" "$PREFIX" "$POOL" "$WORK/s3-uploads" "${KEYS[@]}" <<'PY'
import sys, yaml
src, dst, prefix, pool, staging, keys = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6:]
with open(src) as f:
    cfg = yaml.safe_load(f)
s3 = cfg.setdefault("s3", {}) or {}
cfg["s3"] = s3
s3["credentials"] = dict(zip(keys[0::2], keys[1::2]))
# The suite leaves uploads it never completes or aborts: staged in the work
# dir, removed with it (the default, $TMPDIR/shoal-s3-uploads-UID, outlives the run).
s3["staging_dir"] = staging
s3["buckets"] = {f"{prefix}{i}": f"/data/{prefix}{i}" for i in range(1, pool + 1)}
with open(dst, "w") as f:
    yaml.safe_dump(cfg, f, sort_keys=False)
PY
bg shoal_s3 "$BUILD_DIR/shoal" s3 --config "$WORK/s3.yaml" --listen 127.0.0.1:0
line=$(wait_for_line "$WORK/shoal_s3.log" '^s3: endpoint=' 60 "$BG_PID")
HOSTPORT=${line#s3: endpoint=http://}
HOSTPORT=${HOSTPORT%% *}

sed -e "s/^host = .*/host = ${HOSTPORT%:*}/" -e "s/^port = .*/port = ${HOSTPORT##*:}/" \
  -e "s/^bucket prefix = .*/bucket prefix = $PREFIX/" "$SUITE/s3tests.conf.SAMPLE" >"$WORK/s3tests.conf"
log "shoal s3 $HOSTPORT; suite $SUITE (${SUITE_REV:-$(git -C "$SUITE" rev-parse --short HEAD 2>/dev/null || echo '?')})"

args=(-q -rA -p no:cacheprovider -p s3_tests_adapter "$TESTS")
[[ -n $KEXPR ]] && args+=(-k "$KEXPR")
(cd "$SUITE" && S3TEST_CONF="$WORK/s3tests.conf" SHOAL_S3TESTS_PREFIX=$PREFIX PYTHONPATH="$ROOT/bench:$SUITE" \
  timeout 3000 /usr/bin/python3 -m pytest "${args[@]}" >"$WORK/pytest.out" 2>&1) || true
grep -E '^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) ' "$WORK/pytest.out" >"$WORK/results.txt" || true
echo "results: $WORK/results.txt (pytest output: $WORK/pytest.out)"
awk '{n[$1]++} END {for (k in n) printf "%s %d\n", k, n[k]}' "$WORK/results.txt" | sort
tail -1 "$WORK/pytest.out"
# Keep the work dir (results) past cleanup.
cp "$WORK/results.txt" "$WORK/pytest.out" /tmp/ 2>/dev/null || true
exit 0
}
