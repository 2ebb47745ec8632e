# Writes docs/benchmarks.md from bench/run's results. Sourced by bench/run, which
# defines RESULTS, EGRESS_TSV, NOTRUN, SPEC, median_of and the run's parameters.
# Only measured numbers are printed; a missing figure says why.

fmt() { awk -v v="$1" -v d="${2:-1}" 'BEGIN { if (v == "") print ""; else printf "%.*f", d, v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print ""; else printf "%.2f", a / b }'; }

# Why a contender has no figure for a row: "not run: ..." or "failed: ...".
why_missing() {
  local row=$1 c=$2
  if [[ -n ${NOTRUN[$c]:-} ]]; then echo "not run: ${NOTRUN[$c]}"; return; fi
  local f
  f=$(awk -F'\t' -v row="$row" -v c="$c" '$1==row && $2==c && $10=="failed" {print $11; exit}' "$RESULTS")
  if [[ -n $f ]]; then echo "failed: $f"; else echo "not run: skipped"; fi
}

# A table row: label, then MB/s, ops/s, p50, p99, CPU s/GB for (row, contender), medians over rounds.
# With "cold", medians over the cold rounds (one for s3fs and rclone) instead.
# The listing table: seconds per command, each contender on fresh mounts (see bench/run).
write_listing() {
  echo "### Listing a tree of $LIST_N files (1000 per directory) through each mount"
  echo
  echo "Seconds (files/s). Cold: the first command on a fresh mount (Shoal: a new FUSE daemon after"
  echo "\`shoal refresh -r\` dropped the cluster's cached metadata of the tree); warm: the same command again."
  echo "Every command must list all $LIST_N files. The store is s3rver behind the WAN emulator (20 ms per request)."
  echo
  echo "| contender | find, cold | find, warm | ls -lR, cold | ls -lR, warm |"
  echo "|---|---|---|---|---|"
  local c op ph cells secs n st note
  for c in s3fs rclone shoal_fuse; do
    cells=""
    for op in find ls-lR; do
      for ph in cold warm; do
        if IFS='|' read -r secs n st note < <(awk -F'\t' -v OFS='|' -v c="$c" -v op="$op" -v ph="$ph" \
            '$1==c && $2==op && $3==ph {print $4, $5, $6, $7}' "$LIST_TSV" 2>/dev/null); then
          if [[ $st == ok ]]; then
            cells+=" $(fmt "$secs" 2) ($(awk -v n="$n" -v s="$secs" 'BEGIN { if (s > 0) printf "%.0f", n / s }')) |"
          else cells+=" failed: $note |"; fi
        else
          local why; why=$(awk -F'\t' -v c="$c" '$1==c && $2=="mount" {print $7}' "$LIST_TSV" 2>/dev/null)
          cells+=" ${why:-not run${NOTRUN[$c]:+: ${NOTRUN[$c]}}} |"
        fi
      done
    done
    echo "| $c |$cells"
  done
  echo
  local sh r3 rc
  for op in find ls-lR; do
    for ph in cold warm; do
      sh=$(awk -F'\t' -v op="$op" -v ph="$ph" '$1=="shoal_fuse" && $2==op && $3==ph && $6=="ok" {print $4}' "$LIST_TSV" 2>/dev/null)
      r3=$(awk -F'\t' -v op="$op" -v ph="$ph" '$1=="s3fs" && $2==op && $3==ph && $6=="ok" {print $4}' "$LIST_TSV" 2>/dev/null)
      rc=$(awk -F'\t' -v op="$op" -v ph="$ph" '$1=="rclone" && $2==op && $3==ph && $6=="ok" {print $4}' "$LIST_TSV" 2>/dev/null)
      local v3 vc; v3=$(ratio "$r3" "$sh"); vc=$(ratio "$rc" "$sh")
      echo "- $op, $ph: Shoal through FUSE is ${v3:-n/a}x as fast as s3fs and ${vc:-n/a}x as fast as rclone (ratio of times)."
    done
  done
}

perf_row() {
  local label=$1 row=$2 c=$3 which=${4:-warm}
  local mbps ops p50 p99 cpu
  if [[ $which == cold ]]; then
    mbps=$(cold_median_of "$row" "$c" 5); ops=$(cold_median_of "$row" "$c" 6)
    p50=$(cold_median_of "$row" "$c" 7); p99=$(cold_median_of "$row" "$c" 8); cpu=$(cold_median_of "$row" "$c" 14)
  else
    mbps=$(median_of "$row" "$c" 5); ops=$(median_of "$row" "$c" 6)
    p50=$(median_of "$row" "$c" 7); p99=$(median_of "$row" "$c" 8); cpu=$(median_of "$row" "$c" 14)
  fi
  if [[ -z ${mbps:-} ]]; then
    echo "| $label | $(why_missing "$row" "$c") | | | | |"
  else
    echo "| $label | $(fmt "$mbps") | $(fmt "$ops") | $(fmt "$p50" 2) | $(fmt "$p99" 2) | $(fmt "$cpu" 2) |"
  fi
}

cold_mbps() { cold_median_of "$1" "$2" 5; }

# target_row NAME MEASURED_RATIO GOAL(>= or <=) THRESHOLD WHAT_LIMITS
target_row() {
  local name=$1 got=$2 op=$3 goal=$4 limit=$5 verdict
  if [[ -z $got ]]; then
    verdict="not measured (a side did not run; see the tables)"
  elif awk -v g="$got" -v t="$goal" -v op="$op" 'BEGIN { exit !((op == ">=") ? g >= t : g <= t) }'; then
    verdict="met"
  else
    verdict="missed by $(awk -v g="$got" -v t="$goal" 'BEGIN { printf "%.0f%%", 100 * (g > t ? g / t - 1 : 1 - g / t) }'). $limit"
  fi
  echo "| $name | $op $goal | ${got:-—} | $verdict |"
}

write_report() {
  set +u  # bash reports an empty associative array (NOTRUN) as unbound
  local mem cpu
  mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
  cpu=$(awk -F: '/model name/ {gsub(/^ +/, "", $2); print $2; exit}' /proc/cpuinfo)
  cat <<EOF
# Benchmarks

Written by \`bench/run$( ((QUICK)) && echo " --quick")\` (see bench/README.md). Every figure below was
measured in this one run; nothing is carried over from elsewhere.

| | |
|---|---|
| date | $START_TIME |
| source | commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), programs from ${BUILD_DIR#"$ROOT"/} |
| machine | nproc $(nproc), memory $mem, kernel $(uname -r), CPU ${cpu:-unknown} |
| mode | $( ((QUICK)) && echo quick || echo full), scale $SCALE, $ROUNDS rounds, interleaved A B A B; figures are medians over rounds; run took ${ELAPSED}s |
| datasets (random bytes) | small: $SMALL_N files of 110-150 KiB ($(fmt "$(awk "BEGIN{print $(manifest_bytes "$WORK/small.manifest")/1e6}")") MB); large: $LARGE_N shards of $LARGE_MIN-$LARGE_MAX ($(fmt "$(awk "BEGIN{print $(manifest_bytes "$WORK/large.manifest")/1e6}")") MB); ranges: $RANGES_N reads of 4 KiB-1 MiB per round |
| readers | small files: $SMALL_READERS threads; large shards: $LARGE_READERS; ranges: $RANGE_READERS |
| WAN emulator | bench/wan_proxy in front of s3rver: 20 ms first-byte delay per request, 25 MB/s per connection, 200 MB/s in total |
| checks | every read of every figure was checked against the source (xxh3 per file, content function per range); a failed check fails the run |

Contenders: **page cache** (the same files read locally), **TCP loopback** (iperf3), **nginx** (sendfile, HTTP on
loopback), **nginx via proxy(0)** (nginx through the emulator with no delay and no cap: the emulator's own cost),
**direct** (S3 GETs through the emulator every epoch), **s3fs** (\`use_cache\`) and **rclone**
(\`mount --vfs-cache-mode full\`) through the emulator, **Shoal** (native client, \`shoal up\` with 2 workers,
UFS = s3rver through the emulator; the reader is on the workers' host, so it reads cached pages short-circuit,
from the page files, as any same-host client does by default; **Shoal over TCP** is the same cluster read with
\`client.short_circuit: false\`, as a reader on another host, or any page another node's worker holds, is served). "cold" is a first epoch on data nobody has read: for Shoal and direct, the
median of $ROUNDS rounds, each on its own dataset with Shoal just started on an empty cache, the two in alternating
order (large shards: one round); s3fs and rclone once, on their fresh mounts. The others are warm.

CPU s/GB is the CPU time (user + system, all threads) of the reading process (the load generator with its
reader threads, its checksums and, for Shoal, the client library) plus the contender's own local daemons
(nginx, the zero proxy, s3fs, rclone, \`shoal up\` and its workers) during the run, per GB read. The object
store (s3rver) and the WAN emulator stand for the remote side and are not counted. The checksum of every read
is in every contender's figure alike.

EOF
  local w title
  for w in small large ranges; do
    case $w in
      small) title="Small files (whole-file reads, random order per epoch)" ;;
      large) title="Large shards (sequential reads, random shard order)" ;;
      ranges) title="Random ranges (4 KiB-1 MiB at random offsets of the shards)" ;;
    esac
    echo "## $title"
    echo
    echo "| contender | MB/s | files (or reads)/s | p50 ms | p99 ms | CPU s/GB |"
    echo "|---|---|---|---|---|---|"
    perf_row "page cache (limit)" "$w" pagecache
    if [[ $w == large ]]; then
      local tcp; tcp=$(median_of tcp loopback 5)
      if [[ -n $tcp ]]; then echo "| TCP loopback, iperf3 (limit) | $(fmt "$tcp") | | | | |"
      else echo "| TCP loopback, iperf3 (limit) | failed: iperf3 gave no result | | | | |"; fi
    fi
    perf_row "nginx sendfile (limit)" "$w" nginx
    perf_row "nginx via proxy(0)" "$w" nginx_proxy0
    perf_row "direct S3 via WAN" "$w" direct
    perf_row "s3fs warm" "$w" s3fs
    perf_row "rclone warm" "$w" rclone
    perf_row "**Shoal warm**" "$w" shoal
    perf_row "Shoal warm, over TCP (short circuit off)" "$w" shoal_tcp
    perf_row "Shoal through FUSE, kernel cache dropped each epoch" "$w" shoal_fuse_dropped
    perf_row "Shoal through FUSE, kernel cache kept" "$w" shoal_fuse
    if [[ $w != ranges ]]; then
      perf_row "direct, first epoch" "$w" direct cold
      perf_row "s3fs cold" "$w" s3fs cold
      perf_row "rclone cold" "$w" rclone cold
      perf_row "**Shoal cold**" "$w" shoal cold
    fi
    echo
  done

  echo "## Accelerator utilisation (small files + accelerator model)"
  echo
  if [[ -n ${COMPUTE_MS:-} ]]; then
    echo "One simulated accelerator takes batches of $BATCH samples and computes each for $COMPUTE_MS ms, chosen as a third"
    echo "of what direct can feed ($(fmt "$DIRECT_FPS") files/s). AU = compute time / wall time, first batch's I/O excluded."
    echo
    echo "| contender | AU |"
    echo "|---|---|"
    local c au
    for c in pagecache direct s3fs rclone shoal shoal_fuse_dropped; do
      au=$(median_of au "$c" 9)
      if [[ -n $au ]]; then echo "| $c | $(fmt "$(awk -v a="$au" 'BEGIN{print 100*a}')")% |"
      else echo "| $c | $(why_missing au "$c") |"; fi
    done
  else
    echo "not run: direct produced no small-file figure, so the compute time could not be set."
  fi
  echo

  echo "## PyTorch DataLoader (small files + accelerator model)"
  echo
  cat "$DL_SECTION" 2>/dev/null || echo "not run: this run had no DataLoader step"
  echo

  echo "## Egress (3 epochs x 2 clients, a dataset not read before)"
  echo
  echo "Unique dataset bytes: $EGRESS_BYTES (shoal_fuse reads a dataset of its own: $EGRESSF_BYTES). UFS bytes are response bytes through the emulator (headers included);"
  echo "requests are request turns it counted (GET, HEAD, LIST). The two clients run at the same time and read in"
  echo "the same order, the hardest case for a shared cache (concurrent misses on the same file)."
  echo
  echo "| contender | UFS bytes | UFS requests | bytes / unique | expected |"
  echo "|---|---|---|---|---|"
  local c bytes reqs ufs st note exp
  for c in direct s3fs rclone shoal shoal_fuse; do
    case $c in direct) exp="6 (E x C)" ;; s3fs | rclone) exp="2 (C)" ;; shoal | shoal_fuse) exp="1.00" ;; esac
    # "|"-separated: with tabs, read would merge empty fields.
    if IFS='|' read -r bytes reqs ufs st note < <(awk -F'\t' -v OFS='|' -v c="$c" '$1==c {print $2, $3, $4, $5, $6}' "$EGRESS_TSV"); then
      if [[ $st == ok ]]; then
        local unique=$EGRESS_BYTES
        [[ $c == shoal_fuse ]] && unique=$EGRESSF_BYTES  # its own dataset
        echo "| $c | $bytes | $reqs | $(ratio "$bytes" "$unique") | $exp |"
        [[ $c == shoal && -n $ufs ]] && SHOAL_UFS_RATIO=$(ratio "$ufs" "$EGRESS_BYTES")
      else
        echo "| $c | failed: $note | | | $exp |"
      fi
    else
      echo "| $c | $(why_missing egress "$c") | | | $exp |"
    fi
  done
  [[ -n ${SHOAL_UFS_RATIO:-} ]] && { echo; echo "Shoal's own metric (shoal_ufs_read_bytes_total over workers) / unique bytes: $SHOAL_UFS_RATIO."; }
  echo

  echo "## The emulator's own overhead"
  echo
  echo "nginx through bench/wan_proxy with zero delay and no cap, against nginx directly (same run, medians):"
  echo
  echo "| workload | via proxy(0) / direct |"
  echo "|---|---|"
  for w in small large ranges; do
    echo "| $w | $(ratio "$(median_of "$w" nginx_proxy0 5)" "$(median_of "$w" nginx 5)") |"
  done
  echo

  echo "## Targets (Shoal warm, native client)"
  echo
  echo "| target | goal | measured | verdict |"
  echo "|---|---|---|---|"
  local sh_l sh_s ng_l di_l di_s s3_s rc_s best au_sh au_di egr sh_cold di_cold
  sh_l=$(median_of large shoal 5); ng_l=$(median_of large nginx 5); di_l=$(median_of large direct 5)
  sh_s=$(median_of small shoal 5); di_s=$(median_of small direct 5)
  s3_s=$(median_of small s3fs 5); rc_s=$(median_of small rclone 5)
  best=$(printf '%s\n%s\n' "$s3_s" "$rc_s" | sort -g | tail -1)
  # What limits a missed target, from this run's own figures where there are any.
  local p50_sl p50_nl sh_req
  p50_sl=$(median_of large shoal 7); p50_nl=$(median_of large nginx 7)
  target_row "large shards vs nginx" "$(ratio "$sh_l" "$ng_l")" ">=" 0.8 \
    "Per shard, Shoal's p50 is $(fmt "$p50_sl" 0) ms against nginx's $(fmt "$p50_nl" 0) ms. The reader is on the workers' host and reads cached pages short-circuit (pread of page files); the core benchmark below has the same client over TCP as well."
  target_row "large shards vs direct" "$(ratio "$sh_l" "$di_l")" ">=" 5 "Direct is capped by the emulator at 25 MB/s per connection."
  target_row "small files vs better of s3fs/rclone warm" "$(ratio "$sh_s" "$best")" ">=" 2 \
    "Each file is one short-circuit open (stat and page fds over a UNIX socket) plus a pread, against a local FUSE cache file."
  target_row "small files vs direct" "$(ratio "$sh_s" "$di_s")" ">=" 10 "Bounded by the per-request cost on 2 cores."
  au_sh=$(median_of au shoal 9); au_di=$(median_of au direct 9)
  target_row "AU where direct < 50% (direct: ${au_di:+$(fmt "$(awk -v a="$au_di" 'BEGIN{print 100*a}')")%})" \
    "$(awk -v a="$au_sh" 'BEGIN { if (a != "") printf "%.3f", a }')" ">=" 0.95 "Readers could not keep the batch queue full."
  egr=$(awk -F'\t' '$1=="shoal" && $5=="ok" {print $2}' "$EGRESS_TSV")
  sh_req=$(awk -F'\t' -v n="$EGRESS_N" '$1=="shoal" && $5=="ok" && n > 0 {printf "%.1f", $3 / n}' "$EGRESS_TSV")
  target_row "egress ratio (3 epochs x 2 clients)" "$(ratio "$egr" "$EGRESS_BYTES")" "<=" 1.05 \
    "Bytes fetched more than once: read-ahead past the end, or the same page missed by two clients at once."
  local p50_sc p50_dc
  sh_cold=$(cold_mbps small shoal); di_cold=$(cold_mbps small direct)
  p50_sc=$(cold_median_of small shoal 7); p50_dc=$(cold_median_of small direct 7)
  target_row "Shoal cold epoch vs direct (small files)" "$(ratio "$sh_cold" "$di_cold")" ">=" 1.0 \
    "Shoal's cold p50 is $(fmt "$p50_sc" 1) ms against direct's $(fmt "$p50_dc" 1) ms (the emulator adds 20 ms per request); in the egress phase Shoal sent ${sh_req:-?} UFS requests per file, as direct does. Both pay one 20 ms WAN request per file; Shoal adds a local hop (reader to worker and back) and the worker's work around the request (request signing, two thread hand-offs, sending the body, the client: where a separate profile found the time, not measured in this run), which grows when the 2 cores are also busy with s3rver. Beating direct on a cold small file would need fewer WAN requests than direct makes (e.g. fetching a directory's files ahead of the reader), which is a design decision left open. Same reader count (${SMALL_READERS}) for both."
  sh_cold=$(cold_mbps large shoal); di_cold=$(cold_mbps large direct)
  target_row "Shoal cold epoch vs direct (large shards)" "$(ratio "$sh_cold" "$di_cold")" ">=" 1.0 \
    "A cold read pays the WAN plus the cache fill."
  echo

  echo "## Targets (Shoal through its FUSE mount, warm)"
  echo
  echo "\"kernel cache dropped\": every read is followed by POSIX_FADV_DONTNEED, so each epoch goes through the FUSE"
  echo "daemon and the cluster; \"kept\": the kernel's page cache holds the files between epochs (keep_cache); each"
  echo "kept run reads the set three times and its third epoch counts (the steady state of a job re-reading a dataset"
  echo "that fits in RAM; see bench/run: WARMUP_EPOCHS)."
  echo
  echo "| target | goal | measured | verdict |"
  echo "|---|---|---|---|"
  local fu_s fu_l fu_lk au_fu
  fu_s=$(median_of small shoal_fuse_dropped 5); fu_l=$(median_of large shoal_fuse_dropped 5)
  fu_lk=$(median_of large shoal_fuse 5)
  target_row "small files vs rclone warm" "$(ratio "$fu_s" "$rc_s")" ">=" 5 \
    "Each file costs the kernel a lookup, an open and a read through the daemon (entries are cached for the mount's ttl)."
  target_row "small files vs Shoal's native client" "$(ratio "$fu_s" "$sh_s")" ">=" 0.6 \
    "The FUSE round trips and a copy through the kernel on 2 cores."
  target_row "large shards vs nginx, kernel cache dropped" "$(ratio "$fu_l" "$ng_l")" ">=" 0.8 \
    "1 MiB FUSE requests with 4 MiB kernel read-ahead; each byte is copied once more than with sendfile."
  target_row "large shards vs nginx, kernel cache kept" "$(ratio "$fu_lk" "$ng_l")" ">=" 0.8 "—"
  au_fu=$(median_of au shoal_fuse_dropped 9)
  target_row "AU through FUSE where direct < 50%" "$(awk -v a="$au_fu" 'BEGIN { if (a != "") printf "%.3f", a }')" \
    ">=" 0.99 "Readers could not keep the batch queue full."
  local egr_fu
  egr_fu=$(awk -F'\t' '$1=="shoal_fuse" && $5=="ok" {print $2}' "$EGRESS_TSV")
  target_row "egress through two FUSE mounts (3 epochs x 2 mounts, its own dataset)" \
    "$(ratio "$egr_fu" "$EGRESSF_BYTES")" "<=" 1.01 "Bytes fetched more than once (see the egress table)."
  echo
  write_listing
  echo
  echo "### fio through the FUSE mount (the large shards), beside the same jobs on the local copy"
  echo
  if [[ -n ${FUSE_FIO_NOTRUN:-} ]]; then echo "not run: $FUSE_FIO_NOTRUN"
  elif [[ -s $WORK/fuse_fio.md ]]; then cat "$WORK/fuse_fio.md"
  else echo "not run: this run had no fio step"; fi
  echo
  if ((${#NOTRUN[@]} > 0)); then
    echo "## Not run"
    echo
    for c in "${!NOTRUN[@]}"; do echo "- $c: ${NOTRUN[$c]}"; done
    echo
  fi
  echo "## Core benchmark (bench/core_bench)"
  echo
  if [[ -f $WORK/core.out ]]; then cat "$WORK/core.out"; else echo "not run: $CORE_NOTRUN"; fi
  echo
  echo "## Restart to serving (bench/restart_bench)"
  echo
  if [[ -f $WORK/restart.out ]]; then cat "$WORK/restart.out"; else echo "not run: $RESTART_NOTRUN"; fi
  echo
  echo "## A hung worker (bench/failover_bench)"
  echo
  if [[ -f $WORK/failover.out ]]; then
    echo "Three workers on loopback over a file:// store, one frozen with SIGSTOP; small files it owns are read. Targets (issue 8 D): the first call of a client to the frozen worker at most 2.5 s (it waits one client.response_timeout, 1.5 s, then reads the store directly), later calls at most 50 ms (the worker is marked down until a health probe sees it again)."
    echo
    cat "$WORK/failover.out"
  else
    echo "not run: $FAILOVER_NOTRUN"
  fi
  echo
  echo "## A worker host's link cut (tests/netns_test.cc, issue 14)"
  echo
  if [[ -s $WORK/netns.out ]]; then
    echo "Not a benchmark: what the multi-host test \`e2e_netns_test\` prints, one row per run. Three worker hosts in network namespaces on a bridge, s3rver behind a counting proxy (no delay, no cap), etcd (lease 5 s) and one reader thread in the test's namespace; 24 files of 200-292 KiB, \`replicas: 2\`, a first epoch read before the cut. The reader reads every file in turn throughout; one host's veth is set down, then up once the ring has dropped it and the reader has made a full pass. The test asserts 0 failed reads, outage egress below a sixth of the dataset, rejoin egress and misses below a twentieth."
    echo
    echo "| run | dataset / cold egress (bytes) | ring dropped the host after | reads during the outage | failed reads | store egress during the outage | rejoined after link up | store egress after the rejoin | rejoined host's misses (bytes) |"
    echo "|---|---|---|---|---|---|---|---|---|"
    # Fields by position in the line tests/netns_test.cc prints; a line of another shape is shown as it is.
    awk '{
      n++
      if ($13 != "after" || $20 != "egress" || $23 != "over" || $27 != "after" || $33 != "misses") {
        printf "| %d | (unexpected line: %s) | | | | | | | |\n", n, $0; next
      }
      ds=$3; ce=$7; sub(/;$/, "", ce); dr=$14; oe=$21; rd=$24; rj=$28; re=$32; sub(/,$/, "", re); mi=$34
      printf "| %d | %s / %s | %s s | %s | 0 | %s B | %s s | %s B | %s |\n", n, ds, ce, dr, rd, oe, rj, re, mi }' "$WORK/netns.out"
  else
    echo "not run: $NETNS_NOTRUN"
  fi
  echo
  echo "## Cluster changes (bench/cluster_bench)"
  echo
  if [[ -f $WORK/cluster.out ]]; then
    echo "Issue 14's two measured epochs. Workers on loopback in one etcd over s3rver behind the WAN emulator; UFS bytes are what the emulator saw the store send. Readers: threads with a client each (short circuit off), every file of a small-files dataset once per epoch in a new random order, every byte checked; each variant on a fresh cluster, interleaved round by round. Join: two workers read the dataset once, a third joins, and once every reader's client sees the 3-member ring one more epoch is read; with \`worker.peer_fetch\` the new worker takes its share from the previous owners' caches. Target: UFS bytes / dataset bytes <= 0.05 with peer fetch. Node loss: three workers, warm; one is killed with SIGKILL a third of the way into the next epoch; \`replicas: 2\` against one copy plus the clients' rate-limited store fallback. Target: no failed read in either; the table shows what the loss costs in throughput, latency and store bytes, and how long the ring took to drop the worker (its etcd lease)."
    echo
    cat "$WORK/cluster.out"
  else
    echo "not run: ${CLUSTER_NOTRUN:-this run had no cluster benchmark}"
  fi
  echo
  echo "## Hot shards (bench/hot_shards_bench)"
  echo
  if [[ -f $WORK/hot_shards.out ]]; then
    echo "Two clusters of three workers on loopback over one file:// directory (membership in one etcd, so workers know their peers), hot shards off and on; 8 readers (each its own client, short circuit off) read one 1 MiB file whole in a loop, interleaved off/on round by round. With hot shards on, the file's owner marks it hot and the readers spread over the owner and the next worker on the ring, which fills its copy from the owner's cache (under-store bytes stay at one copy). On this 2-core machine all workers and readers share the same cores, so the figure to read is the split of the load; the throughput gain needs the owner to be the limit (its NIC, disk or cores), which one host cannot show."
    echo
    cat "$WORK/hot_shards.out"
  else
    echo "not run: $HOT_NOTRUN"
  fi
  echo
  echo "## Checkpoints: write modes (bench/checkpoint_bench)"
  echo
  if [[ -f $WORK/checkpoint.out ]]; then
    echo "Three workers on loopback over s3rver behind the WAN emulator. Save: every file written at once (one thread per file), timed until every Close returned; direct is the same C++ S3 store (multipart) without Shoal. Restore: right after the save, all files read back at once. Targets (issue 12): restore cache-through >= 10x direct; save and small writes: write-back >= 5x direct; the "limit" row (two copies fdatasync'd, no network) bounds any write-back save on this disk. Every byte read back is checked."
    echo
    cat "$WORK/checkpoint.out"
  else
    echo "not run: $CKPT_NOTRUN"
  fi
  echo
  echo "## The S3 endpoint (bench/s3_endpoint_bench.sh)"
  echo
  if [[ -f $WORK/s3_endpoint.out ]]; then
    echo "GETs through \`shoal s3\` (proxy mode, over a 2-worker \`shoal up\` on a local directory, warm) against nginx serving the same files with sendfile, and against direct S3 (s3rver behind the WAN emulator). Targets (issue 11): large objects >= 0.8x nginx; small objects >= 0.7x nginx and >= 10x direct. Every byte is checked."
    echo
    cat "$WORK/s3_endpoint.out"
  else
    echo "not run: $S3EP_NOTRUN"
  fi
  echo
  echo "## Authorization (bench/authz_bench, bench/authz_overhead.py)"
  echo
  if [[ -f $WORK/authz_bench.out ]]; then
    echo "One decision of the policy engine (src/authz/policy_engine.h) with 1,000 Ranger policies of mixed wildcards, each call timed alone; 1 thread, then 8 at once. Target (issue 28): p99 <= 1 us (1000 ns)."
    echo
    cat "$WORK/authz_bench.out"
    echo
  fi
  if [[ -f $WORK/authz_overhead.out ]]; then
    echo "Warm reads through two 2-worker \`shoal up\` clusters on the same files, one enforcing 1,000 policies (audit of denials on) and one without, by the same user (a token; an S3 key). Target (issue 28): >= 0.97x of authorization off."
    echo
    cat "$WORK/authz_overhead.out"
    if [[ -f $WORK/authz_control.out ]]; then
      echo
      echo "The same method with both clusters without policies (A/A control): the spread of the method itself."
      echo
      cat "$WORK/authz_control.out"
    fi
  fi
  [[ -n ${AUTHZ_NOTRUN:-} ]] && echo "not run: $AUTHZ_NOTRUN"
  echo
  echo "## TLS (bench/tls_bench.sh)"
  echo
  if [[ -f $WORK/tls_bench.out ]]; then
    echo "Warm reads through two 2-worker \`shoal up\` clusters on the same files, one plain and one with \`--tls\`, over TCP (short circuit off), against nginx serving the same files over http and https with the same certificate. Targets (issue 27): large >= 0.9x plain; small >= 0.8x plain; a new client's first read <= 5 ms more. Every byte is checked."
    echo
    cat "$WORK/tls_bench.out"
  else
    echo "not run: $TLSB_NOTRUN"
  fi
  echo
  echo "## Preloading: \`shoal load\` (bench/load_bench.sh)"
  echo
  if [[ -f $WORK/load_bench.out ]]; then
    echo "\`shoal load -r\` of the small-files dataset over a 3-worker \`shoal up\` (each worker fetching the shards it owns) against one epoch of direct reads, both from s3rver behind the WAN emulator. Target (issue 13): the load >= 2x faster than the direct epoch with the same concurrency. The direct row with 3x the readers shows what the store side allows on this machine."
    echo
    cat "$WORK/load_bench.out"
  else
    echo "not run: $LOADB_NOTRUN"
  fi
  echo
  echo "## Epochs on a real cluster (bench/epoch_bench.sh)"
  echo
  if [[ -f $WORK/epoch_bench.out ]]; then
    echo "Issue 13's experiment: the small-files dataset (3000 objects of 110-150 KiB) in s3rver behind the WAN emulator; per policy a fresh \`shoal up --eviction NAME\` of 3 workers whose caches hold 2/3 of the dataset in all; 3 epochs, each in a new random order, 8 readers, every byte checked. An epoch's hit ratio is 1 - (bytes the emulator saw the store send) / dataset bytes; the ideal for a cache of 2/3 is 0.667. Hit ratios do not depend on the machine's load. Target (issue 13): the epoch policy >= 0.9 of the ideal."
    echo
    cat "$WORK/epoch_bench.out"
  else
    echo "not run: $EPOCH_NOTRUN"
  fi
  echo
  echo "## Page store layouts on a cold epoch of small files (bench/cold_pages.sh)"
  echo
  if [[ -f $WORK/cold_pages.out ]]; then
    echo "Each round, for each contender, a dataset nobody has read (600 files of 110-150 KiB), 8 readers, whole files, random order, behind the WAN emulator; Shoal is \`shoal up --workers 2\` on an empty cache with \`--page-store files\` (a file per page) or \`--page-store blocks\` (slots of block files reused in place), no prefetch; order rotated per round. CPU s/GB = loadgen + \`shoal up\` and its workers. Targets (issue 13): CPU <= 3 s/GB, cold epoch >= 1.0x direct."
    echo
    cat "$WORK/cold_pages.out"
  else
    echo "not run: $COLD_NOTRUN"
  fi
  echo
  echo "## Page checksums by chunk size (bench/page_format_bench)"
  echo
  if [[ -f $WORK/page_format.out ]]; then
    echo "Reads of 1 MiB page files (64 of them, in the page cache) through page_format::PageFileReader at random"
    echo '4 KiB-aligned offsets: `verify:0` is the plain pread of the same bytes, `verify:1` reads the header and'
    echo "the whole chunks the range touches and checks them. CPU time per read (median); read_amplification is"
    echo "the bytes read from the file per byte asked for. The page store writes kChunkSize chunks (src/cache/page_format.h)."
    echo
    echo '```'
    grep -E '^(Benchmark|BM_.*_median)' "$WORK/page_format.out" | sed 's/_median//'
    echo '```'
  else
    echo "not run: $PF_NOTRUN"
  fi
  echo
  echo "## Eviction policies (bench/policy_sim)"
  echo
  if [[ -f $WORK/policy_sim.out ]]; then
    echo "Trace-driven, no disks: the machine above only sets how long it took; the ratios are the same anywhere."
    echo
    cat "$WORK/policy_sim.out"
  else
    echo "not run: $PS_NOTRUN"
  fi
  echo

  echo "## The ring router (bench/ring_sim)"
  echo
  if [[ -f $WORK/ring_sim.out ]]; then
    echo "The real cluster/hash_ring.h at 10, 100 and 1,000 workers, equal capacities and mixed 1/2/4 TiB ones; one worker of 2 TiB joins, the middle one leaves."
    echo
    cat "$WORK/ring_sim.out"
  else
    echo "not run: ${RING_NOTRUN:-}"
  fi
  echo

  echo "## Fuzzing (make fuzz)"
  echo
  echo "Executions, coverage and findings of every fuzz harness are in [fuzzing.md](fuzzing.md) (not part of this run)."
  echo
}
