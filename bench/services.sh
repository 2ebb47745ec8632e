# s3rver's built-in credentials (S3RVER/S3RVER) are used by every S3 client here.
# Helpers for bench/run: start the servers and mounts the contenders need, and
# tear all of them down on exit. Sourced, not run. Every server listens on
# 127.0.0.1 on a port chosen at runtime; every child's pid is recorded in
# $WORK/pids and every mount in $WORK/mounts so cleanup finds them.

PIDS_FILE="$WORK/pids"
MOUNTS_FILE="$WORK/mounts"
: >"$PIDS_FILE"
: >"$MOUNTS_FILE"

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# A free loopback port (bound and released; the server binds it right after).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for_line FILE REGEX SECONDS PID: waits until FILE has a line matching
# REGEX, or fails when PID dies or time runs out. Prints the line.
wait_for_line() {
  local file=$1 re=$2 secs=$3 pid=$4 line
  local deadline=$((SECONDS + secs))
  while ((SECONDS < deadline)); do
    line=$(grep -m1 -E "$re" "$file" 2>/dev/null || true)
    if [[ -n $line ]]; then printf '%s\n' "$line"; return 0; fi
    kill -0 "$pid" 2>/dev/null || { log "process $pid exited before printing /$re/: $(tail -5 "$file")"; return 1; }
    sleep 0.1
  done
  log "timed out after ${secs}s waiting for /$re/ in $file"
  return 1
}

# bg NAME CMD...: starts CMD in its own process group, output in $WORK/NAME.log.
bg() {
  local name=$1; shift
  setsid "$@" >"$WORK/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid $name" >>"$PIDS_FILE"
  BG_PID=$pid
}

stop_pid() {
  local pid=$1
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local mnt pid name
  # Background jobs of the script itself (loadgen runs of the egress phase).
  local j
  for j in $(jobs -p); do kill -TERM "$j" 2>/dev/null || true; done
  if [[ -f $MOUNTS_FILE ]]; then
    while read -r mnt; do
      [[ -n $mnt ]] || continue
      mountpoint -q "$mnt" 2>/dev/null && { fusermount -u "$mnt" 2>/dev/null || fusermount -u -z "$mnt" 2>/dev/null || true; }
    done <"$MOUNTS_FILE"
  fi
  if [[ -f $PIDS_FILE ]]; then
    tac "$PIDS_FILE" | while read -r pid name; do stop_pid "$pid"; done
  fi
  if [[ -f $LOOP_MOUNTS_FILE ]]; then  # after the processes that used them
    while read -r mnt; do
      [[ -n $mnt ]] || continue
      mountpoint -q "$mnt" 2>/dev/null && { umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; }
    done <"$LOOP_MOUNTS_FILE"
  fi
  if [[ ${KEEP_WORK:-0} == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}

# cache_fs_dir KIND: where the contender's cache dirs go. KIND "here": under
# $WORK, on whatever file system holds it. KIND "ext4": a fresh ext4 as
# mkfs.ext4 makes it by default (with a journal), on a sparse loop file under
# $WORK, mounted for this run (root only): what a cache disk formatted with
# the defaults looks like. Why: this VM's root file system is ext4 without a
# journal, where creating a file scans the inodes deleted in the last ~30 s
# (ext4's recently_deleted), which costs a page-file-per-page store far more
# than it would on a journaled disk (docs/benchmarks.md).
LOOP_MOUNTS_FILE="$WORK/loop-mounts"
cache_fs_dir() {
  case $1 in
    here) echo "$WORK" ;;
    ext4)
      local img="$WORK/cache-fs.img" dir="$WORK/cache-fs"
      if [[ $(id -u) != 0 ]]; then log "--cache-fs ext4 needs root (a loop mount)"; return 1; fi
      mkdir -p "$dir"
      truncate -s 16G "$img" && mkfs.ext4 -q -F "$img" >&2 && mount -o loop "$img" "$dir" ||
        { log "could not make and mount an ext4 file system on $img"; return 1; }
      echo "$dir" >>"$LOOP_MOUNTS_FILE"
      echo "$dir"
      ;;
    *) log "unknown --cache-fs '$1' (here or ext4)"; return 1 ;;
  esac
}

# start_s3rver DIR BUCKET: sets S3_PORT.
start_s3rver() {
  local dir=$1 bucket=$2
  mkdir -p "$dir"
  # --openssl-legacy-provider: s3rver lists with MD5-based continuation tokens that OpenSSL 3 has only there.
  bg s3rver node --openssl-legacy-provider "$ROOT/tools/node_modules/s3rver/bin/s3rver.js" -d "$dir" -a 127.0.0.1 -p 0 \
    --configure-bucket "$bucket"
  local line
  line=$(wait_for_line "$WORK/s3rver.log" 'listening on 127\.0\.0\.1:[0-9]+' 60 "$BG_PID") ||
    { log "s3rver did not start; run scripts/bootstrap to install it"; return 1; }
  S3_PORT=${line##*:}
}

# start_proxy NAME UPSTREAM_PORT [wan_proxy flags]: sets ${NAME}_PORT and ${NAME}_STATS.
start_proxy() {
  local name=$1 up=$2; shift 2
  bg "$name" "$BIN/wan_proxy" --upstream "127.0.0.1:$up" "$@"
  local l s
  l=$(wait_for_line "$WORK/$name.log" '^listening: ' 10 "$BG_PID") || return 1
  s=$(wait_for_line "$WORK/$name.log" '^stats: ' 10 "$BG_PID") || return 1
  printf -v "${name}_PORT" '%s' "${l##*:}"
  printf -v "${name}_STATS" '%s' "${s#stats: }"
}

# proxy_counter STATS_ADDR FIELD: one counter of a running wan_proxy.
proxy_counter() {
  curl -s --noproxy '*' "http://$1/" | tr ' ' '\n' | awk -F= -v k="$2" '$1==k {print $2}'
}

# start_nginx ROOT [CERT KEY]: serves ROOT with sendfile; sets NGINX_PORT. With
# CERT and KEY it serves https instead (TLS 1.3, kTLS asked for) and sets
# NGINX_TLS_PORT.
start_nginx() {
  local root=$1 cert=${2:-} key=${3:-} name=nginx
  [[ -n $cert ]] && name=nginx_tls
  local d="$WORK/$name" port
  mkdir -p "$d/logs" "$d/tmp"
  port=$(free_port)
  local listen="listen 127.0.0.1:$port;" scheme=http
  if [[ -n $cert ]]; then
    listen="listen 127.0.0.1:$port ssl; ssl_certificate $cert; ssl_certificate_key $key; ssl_protocols TLSv1.3;
    ssl_session_cache shared:tls:10m; ssl_conf_command Options KTLS;"
    scheme=https
  fi
  # As root, nginx's workers would drop to nobody and could not read the 0700 work dir.
  local user=""
  [[ $(id -u) == 0 ]] && user="user root;"
  cat >"$d/nginx.conf" <<EOF
$user
worker_processes 2;
error_log $d/logs/error.log warn;
pid $d/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path $d/tmp;
  proxy_temp_path $d/tmp;
  fastcgi_temp_path $d/tmp;
  uwsgi_temp_path $d/tmp;
  scgi_temp_path $d/tmp;
  server {
    $listen
    root $root;
  }
}
EOF
  bg "$name" nginx -c "$d/nginx.conf" -p "$d" -g 'daemon off;'
  local pid=$BG_PID
  for _ in $(seq 100); do
    if curl -sk --noproxy '*' -o /dev/null "$scheme://127.0.0.1:$port/"; then
      if [[ -n $cert ]]; then NGINX_TLS_PORT=$port; else NGINX_PORT=$port; fi
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  log "$name did not start: $(cat "$WORK/$name.log" "$d/logs/error.log" 2>/dev/null | tail -3)"
  return 1
}

wait_mounted() {
  local mnt=$1 pid=$2
  for _ in $(seq 200); do
    mountpoint -q "$mnt" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

# mount_s3fs MNT CACHE_DIR PROXY_PORT BUCKET
mount_s3fs() {
  local mnt=$1 cache=$2 port=$3 bucket=$4
  mkdir -p "$mnt" "$cache"
  printf 'S3RVER:S3RVER\n' >"$WORK/s3fs.passwd"
  chmod 600 "$WORK/s3fs.passwd"
  echo "$mnt" >>"$MOUNTS_FILE"
  bg "s3fs-$(basename "$mnt")" s3fs "$bucket" "$mnt" -f -o "url=http://127.0.0.1:$port" -o use_path_request_style \
    -o "passwd_file=$WORK/s3fs.passwd" -o "use_cache=$cache" -o ro -o endpoint=us-east-1 -o stat_cache_expire=3600
  wait_mounted "$mnt" "$BG_PID" || { log "s3fs mount at $mnt failed: $(tail -3 "$WORK/s3fs-$(basename "$mnt").log")"; return 1; }
}

# mount_rclone MNT CACHE_DIR PROXY_PORT BUCKET
mount_rclone() {
  local mnt=$1 cache=$2 port=$3 bucket=$4
  mkdir -p "$mnt" "$cache"
  echo "$mnt" >>"$MOUNTS_FILE"
  # rclone refuses to start while AWS_CA_BUNDLE is set.
  bg "rclone-$(basename "$mnt")" env -u AWS_CA_BUNDLE RCLONE_CONFIG="$WORK/rclone.conf" \
    RCLONE_S3_PROVIDER=Other RCLONE_S3_ENDPOINT="http://127.0.0.1:$port" RCLONE_S3_ACCESS_KEY_ID=S3RVER \
    RCLONE_S3_SECRET_ACCESS_KEY=S3RVER RCLONE_S3_FORCE_PATH_STYLE=true RCLONE_S3_ENV_AUTH=false \
    rclone mount ":s3:$bucket" "$mnt" --vfs-cache-mode full --cache-dir "$cache" --read-only \
    --dir-cache-time 1h --vfs-cache-max-age 24h --vfs-cache-max-size 100G
  wait_mounted "$mnt" "$BG_PID" || { log "rclone mount at $mnt failed: $(tail -3 "$WORK/rclone-$(basename "$mnt").log")"; return 1; }
}

# upload DIR PREFIX S3_PORT BUCKET [TRANSFERS]: copies DIR/PREFIX into the bucket, directly (not via the proxy).
upload() {
  local dir=$1 prefix=$2 port=$3 bucket=$4 transfers=${5:-8}
  env -u AWS_CA_BUNDLE RCLONE_CONFIG="$WORK/rclone.conf" RCLONE_S3_PROVIDER=Other \
    RCLONE_S3_ENDPOINT="http://127.0.0.1:$port" RCLONE_S3_ACCESS_KEY_ID=S3RVER RCLONE_S3_SECRET_ACCESS_KEY=S3RVER \
    RCLONE_S3_FORCE_PATH_STYLE=true RCLONE_S3_ENV_AUTH=false \
    rclone copy "$dir/$prefix" ":s3:$bucket/$prefix" --transfers "$transfers" --s3-upload-cutoff 1G --s3-chunk-size 512M \
    >>"$WORK/upload.log" 2>&1 || { log "uploading $prefix to s3rver failed: $(tail -3 "$WORK/upload.log")"; return 1; }
}

# stop_shoal: stops the `shoal up` that start_shoal started (and its workers).
stop_shoal() {
  [[ -n ${SHOAL_PID:-} ]] || return 0
  stop_pid "$SHOAL_PID"
  SHOAL_PID=""
}

# mount_shoal_fuse MNT [NAME [SUBTREE]]: `shoal fuse --foreground` over the running cluster
# ($SHOAL_CONFIG), of the whole namespace or of SUBTREE (--path); its log is $WORK/NAME.log
# (default shoal_fuse).
mount_shoal_fuse() {
  local mnt=$1 name=${2:-shoal_fuse} subtree=${3:-}
  mkdir -p "$mnt"
  echo "$mnt" >>"$MOUNTS_FILE"
  bg "$name" "$BUILD_DIR/shoal" fuse "$mnt" --config "$SHOAL_CONFIG" --foreground ${subtree:+--path "$subtree"}
  wait_for_line "$WORK/$name.log" '^mounted: ' 60 "$BG_PID" >/dev/null
}

# unmount_and_stop MNT PID: unmounts a FUSE mount this script made and stops its daemon.
unmount_and_stop() {
  local mnt=$1 pid=$2
  mountpoint -q "$mnt" 2>/dev/null && { fusermount -u "$mnt" 2>/dev/null || fusermount -u -z "$mnt" 2>/dev/null || true; }
  stop_pid "$pid"
}

# start_shoal UFS WORKERS CACHE_DIR [FLAG...]: starts `shoal up` (with FLAGs) against the proxied S3; sets SHOAL_CONFIG,
# and writes SHOAL_TCP_CONFIG: the same cluster with client.short_circuit off (a reader on another host).
# The endpoint is a mount option, so it is in the client config too: a client
# that falls back to the UFS reads through the same emulator. The 1 h metadata
# TTL matches the 1 h stat caches given to s3fs and rclone.
# SHOAL_NAME (default shoal) names its log ($WORK/NAME.log), state dir and
# tree_cpu name, and SHOAL_BIN (default $BUILD_DIR/shoal) the binary: a script
# that runs two clusters side by side (another build's binary) sets both.
start_shoal() {
  local ufs=$1 workers=$2 cache=$3 name=${SHOAL_NAME:-shoal}
  shift 3  # the rest: more `shoal up` flags
  bg "$name" env AWS_ENDPOINT_URL="http://127.0.0.1:$PROXY_PORT" AWS_ACCESS_KEY_ID=S3RVER \
    AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 \
    "${SHOAL_BIN:-$BUILD_DIR/shoal}" up --ufs "$ufs" --workers "$workers" --cache-dir "$cache" \
    --cache-size "$SHOAL_CACHE_SIZE" --state-dir "$WORK/$name-state" --consistency ttl=1h \
    -o "endpoint=http://127.0.0.1:$PROXY_PORT" \
    -o region=us-east-1 -o access_key_id=S3RVER -o secret_access_key=S3RVER -o path_style=true "$@"
  SHOAL_PID=$BG_PID
  local line
  line=$(wait_for_line "$WORK/$name.log" '^ready: config=' 60 "$BG_PID") || return 1
  SHOAL_CONFIG=${line#ready: config=}
  SHOAL_TCP_CONFIG="$WORK/$name-tcp.yaml"
  grep -q 'short_circuit: true' "$SHOAL_CONFIG" || { log "$SHOAL_CONFIG does not say short_circuit: true"; return 1; }
  sed 's/short_circuit: true/short_circuit: false/' "$SHOAL_CONFIG" >"$SHOAL_TCP_CONFIG"
}

# tree_cpu NAME...: CPU seconds (user + system) used so far by the processes
# bench started under these names (see services.sh: bg) and all their
# descendants: the contender's own daemons (nginx, the proxy, s3fs, rclone,
# `shoal up` and its workers). s3rver is the remote store and is not counted.
tree_cpu() {
  (($#)) || { echo 0; return; }
  local roots
  roots=$(awk -v names=" $* " '{ n = $2; sub(/-.*/, "", n); if (index(names, " " n " ")) print $1 }' "$PIDS_FILE" | tr '\n' ' ')
  python3 - "$roots" <<'PY'
import os, sys
hz = os.sysconf("SC_CLK_TCK")
roots = set(int(p) for p in sys.argv[1].split())
parent, ticks = {}, {}
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        with open(f"/proc/{d}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    parent[int(d)] = int(fields[1])
    ticks[int(d)] = int(fields[11]) + int(fields[12])
def counted(p):
    while p > 1:
        if p in roots:
            return True
        p = parent.get(p, 0)
    return False
print("%.3f" % (sum(t for p, t in ticks.items() if counted(p)) / hz))
PY
}
