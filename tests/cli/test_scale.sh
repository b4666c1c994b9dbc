#!/usr/bin/env bash
# Scale-out (docs/SERVE.md "Scale-out"): the deployment files (deploy/Dockerfile syntax, the
# Kubernetes manifests parsed, the container's serve arguments run here), /health as readiness
# (503 "full" + Retry-After while an instance cannot take a request), and nginx (Debian's
# nginx-light, run as this user from a temp prefix) with deploy/nginx/codectalk.conf over two
# `codectalk serve` instances on loopback: a burst larger than one instance's capacity is served
# by both with no failed request (a full instance's 503 is passed to the other).
# usage: test_scale.sh CODECTALK_BIN SRC_DIR
set -u
BIN=${1:?codectalk program}
SRC=${2:?source dir}
source "$SRC/tests/cli/lib.sh"
SRVS=()
NGX=""
cleanup() {
    [ -n "$NGX" ] && kill "$NGX" 2>/dev/null
    for p in "${SRVS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
if [ ! -x "$NGINX" ] || ! python3 -c "import yaml" 2>/dev/null; then
    case "${CI:-}" in "" | 0 | false) echo "SKIP: nginx (nginx-light) or python3-yaml missing"; exit 77 ;; esac
    echo "FAIL: nginx-light and python3-yaml are needed (scripts/install-deps.sh)"; exit 1
fi
"$BIN" make-model --preset tiny --seed 6 --out "$WORK/m" >/dev/null 2>&1 || { echo "FAIL: make-model"; exit 1; }

# ---- deployment files ------------------------------------------------------------------------
if python3 "$SRC/tests/cli/check_deploy.py" "$SRC" >"$WORK/args.json" 2>"$WORK/err"; then ok; else bad "deploy files: $(cat "$WORK/err")"; fi
# the container's serve arguments, run here (model dir, host and port swapped for the test's)
mapfile -t ARGS < <(python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
a[a.index("-m") + 1] = sys.argv[2]; a[a.index("--host") + 1] = "127.0.0.1"; a[a.index("--port") + 1] = "0"
print("\n".join(a))' "$WORK/args.json" "$WORK/m")
if start_serve "${ARGS[@]:4}" -m "$WORK/m" --host 127.0.0.1 && curl -sf "http://127.0.0.1:$PORT/health" | grep -q '"ok"'; then
    ok
else
    bad "the container's serve arguments (${ARGS[*]}) do not start a ready server: $(tail -3 "$WORK/srv.log")"
fi
kill $SRV 2>/dev/null; wait $SRV 2>/dev/null

# ---- two instances ---------------------------------------------------------------------------
# 2 streams + 2 queued each: capacity 4 per instance, 8 in all (a finished request's slot is
# freed a moment after its client has the last byte, so the burst keeps a margin under 8);
# --buffer-ms 500 so a slow reader keeps its slot; --no-throttle so that admission depends on
# slots and queue alone (not on this machine's load), which makes "full" a steady state here
declare -a PORTS
for i in 0 1; do
    start_serve -m "$WORK/m" --max-streams 2 --queue 2 --buffer-ms 500 --no-throttle --profile none || { bad "instance $i: $(cat "$WORK/srv.log")"; finish scale; exit 1; }
    SRVS+=("$SRV"); PORTS[$i]=$PORT
    mv "$WORK/srv.log" "$WORK/srv$i.log"
done
U0="http://127.0.0.1:${PORTS[0]}"

# readiness: full while every slot and the queue place are taken by slow readers, ok again after
LONG="$(printf 'This sentence keeps a stream slot busy for a good while. %.0s' 1 2 3 4 5 6 7 8)"
BODY="{\"input\":\"$LONG\",\"response_format\":\"pcm\",\"stream\":true,\"stream_format\":\"audio\",\"seed\":3}"
SLOW=()
for _ in 1 2 3 4; do
    curl -s --limit-rate 4k --max-time 60 -o /dev/null -H 'Content-Type: application/json' -d "$BODY" "$U0/v1/audio/speech" &
    SLOW+=($!)
done
full=""
for _ in $(seq 1 400); do
    code="$(curl -s -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' "$U0/health")"
    if [ "$code" = 503 ] && grep -q '"full"' "$WORK/b"; then full=1; break; fi
    sleep 0.05
done
if [ -n "$full" ] && grep -qi '^Retry-After: [0-9]' "$WORK/h"; then ok; else bad "/health never said 503 full with Retry-After under load ($code $(cat "$WORK/b"); $(curl -s "$U0/metrics" | grep -E '^codectalk_(streams_active|requests_waiting|requests_rejected_total|requests_queued_total) '); $(tail -4 "$WORK/srv0.log"))"; fi
code="$(curl -s --max-time 5 -o "$WORK/b" -w '%{http_code}' -H 'Content-Type: application/json' -d "$BODY" "$U0/v1/audio/speech")"
if [ "$code" = 503 ] || [ -z "$full" ]; then ok; else bad "a speech request while /health says full: $code (want 503)"; fi
kill "${SLOW[@]}" 2>/dev/null # the slow clients leave: their streams are cancelled
wait "${SLOW[@]}" 2>/dev/null
wait_ready=""
for _ in $(seq 1 200); do
    curl -sf "$U0/health" | grep -q '"ok"' && { wait_ready=1; break; }
    sleep 0.1
done
[ -n "$wait_ready" ] && ok || bad "/health did not return to ok once the slow clients left"

# ---- nginx over both ---------------------------------------------------------------------------
NP="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
mkdir -p "$WORK/nginx"
sed -e "s|127\.0\.0\.1:8001|127.0.0.1:${PORTS[0]}|" -e "s|127\.0\.0\.1:8002|127.0.0.1:${PORTS[1]}|" \
    -e "s|listen 127\.0\.0\.1:8000;|listen 127.0.0.1:$NP;|" "$SRC/deploy/nginx/codectalk.conf" >"$WORK/nginx/codectalk.conf"
grep -q ":${PORTS[1]} max_fails" "$WORK/nginx/codectalk.conf" && grep -q "listen 127.0.0.1:$NP;" "$WORK/nginx/codectalk.conf" \
    && ok || bad "deploy/nginx/codectalk.conf no longer has the 8001/8002/8000 lines this test rewrites"
USERLINE=""
[ "$(id -u)" = 0 ] && USERLINE="user root;"
cat >"$WORK/nginx/nginx.conf" <<NGINX
$USERLINE
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log;
events { worker_connections 256; }
http {
    access_log $WORK/nginx/access.log;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    include $WORK/nginx/codectalk.conf;
}
NGINX
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" -g 'daemon off;' 2>"$WORK/nginx/stderr" &
NGX=$!
up=""
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$NP/health" >/dev/null && { up=1; break; }; sleep 0.1; done
[ -n "$up" ] && ok || { bad "nginx did not start: $(cat "$WORK/nginx/stderr" "$WORK/nginx/error.log" 2>/dev/null | tail -5)"; finish scale; exit 1; }

# one request through nginx streams: first audio long before the end
"$BIN" bench serve --url "http://127.0.0.1:$NP" --concurrency 1 --requests 2 --max-new-tokens 60 --json "$WORK/one.json" >/dev/null 2>&1
if python3 - "$WORK/one.json" <<'PY'
import json, sys
lv = json.load(open(sys.argv[1]))["levels"][0]
sys.exit(0 if lv["ok"] == 2 and lv["ttfa_ms"]["p50"] < 0.5 * lv["latency_ms"]["p50"] else 1)
PY
then ok; else bad "through nginx the audio did not stream (TTFA vs latency): $(cat "$WORK/one.json")"; fi

# the burst: 6 clients at once (one instance holds 4), 24 requests; each instance's access log
# from here on says what it served (200) and what it refused for nginx to pass on (503)
REQ=24; CONC=6
m0=$(wc -l <"$WORK/srv0.log"); m1=$(wc -l <"$WORK/srv1.log")
"$BIN" bench serve --url "http://127.0.0.1:$NP" --concurrency $CONC --requests $REQ --max-new-tokens 40 \
    --json "$WORK/burst.json" >/dev/null 2>"$WORK/burst.err"
sleep 0.3 # the access-log lines of the last requests
s0=$(tail -n +$((m0 + 1)) "$WORK/srv0.log" | grep -c 'POST /v1/audio/speech 200')
s1=$(tail -n +$((m1 + 1)) "$WORK/srv1.log" | grep -c 'POST /v1/audio/speech 200')
r0=$(tail -n +$((m0 + 1)) "$WORK/srv0.log" | grep -c 'POST /v1/audio/speech 503')
r1=$(tail -n +$((m1 + 1)) "$WORK/srv1.log" | grep -c 'POST /v1/audio/speech 503')
python3 - "$WORK/burst.json" "$REQ" "$CONC" "$s0" "$s1" "$r0" "$r1" <<'PY'
import json, sys
lv = json.load(open(sys.argv[1]))["levels"][0]
req, conc, s0, s1, r0, r1 = map(int, sys.argv[2:])
print(f"burst through nginx: {req} requests, {conc} at once (one instance holds 4): {lv['ok']} ok, "
      f"{lv['rejected_503']} x 503, {lv['errors']} errors; served by instance 0: {s0}, instance 1: {s1} "
      f"(503s passed on to the other by nginx: {r0} + {r1}); "
      f"latency p50 {lv['latency_ms']['p50']:.0f} p95 {lv['latency_ms']['p95']:.0f} ms; "
      f"TTFA p50 {lv['ttfa_ms']['p50']:.0f} p95 {lv['ttfa_ms']['p95']:.0f} ms")
PY
if python3 -c "import json,sys; lv=json.load(open('$WORK/burst.json'))['levels'][0]; sys.exit(0 if lv['ok']==$REQ and lv['rejected_503']==0 and lv['errors']==0 else 1)"; then
    ok
else
    bad "burst: not every request succeeded: $(cat "$WORK/burst.err") $(tail -5 "$WORK/nginx/error.log")"
fi
[ "$s0" -gt 0 ] && [ "$s1" -gt 0 ] && [ $((s0 + s1)) = $REQ ] && ok \
    || bad "burst: both instances should serve some, $REQ in all (got $s0 and $s1)"
finish scale
