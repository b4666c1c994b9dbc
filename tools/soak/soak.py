"""A bounded soak of `codectalk serve` (issue 19): N client threads (default 4) send speech
requests for D seconds (default 600) in every response mode (whole WAV, chunked PCM, SSE, MP3),
each with one of a few fixed (text, seed) pairs, and the run reports: requests, errors, the
server's stalls (underruns) and rejections from /metrics, the server's RSS at the start (after a
warm-up request) and at the end, and audio determinism (every answer to the same request is
the same bytes). Exit 1 on an error, a non-deterministic answer or RSS growth over --max-rss-mb.
Standard library only.

usage: soak.py CODECTALK_BIN MODEL_DIR [--streams N] [--seconds S] [--json FILE] [--max-rss-mb M]"""
import argparse
import base64
import hashlib
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

TEXTS = ["Hello there, this is a soak test.", "The quick brown fox jumps over the lazy dog.",
         "Numbers like 3.14 and 2048 are read one at a time."]
MODES = [{"response_format": "wav"}, {"response_format": "pcm", "stream_format": "audio"},
         {"response_format": "pcm", "stream": True}, {"response_format": "mp3"}]


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def metric(port: int, name: str) -> float:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    m = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def request(port: int, voice: str, k: int, mode: dict, frames: int) -> tuple:
    body = {"input": TEXTS[k % len(TEXTS)], "voice": voice, "seed": 100 + k, "max_new_tokens": frames} | mode
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/audio/speech", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        return r.status, data[:200]
    if mode.get("stream"):  # SSE: the audio of the delta events
        audio = b"".join(base64.b64decode(json.loads(line[6:])["audio"]) for line in data.decode().splitlines()
                         if line.startswith("data: ") and '"speech.audio.delta"' in line)
        data = audio
    return 200, hashlib.sha256(data).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("model")
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--json")
    ap.add_argument("--max-rss-mb", type=float, default=64)
    a = ap.parse_args()
    if not (1 <= a.streams <= 64 and a.seconds > 0 and 1 <= a.frames <= 2000):
        print("error: --streams in [1, 64], --seconds > 0, --frames in [1, 2000]", file=sys.stderr)
        return 2
    log = tempfile.NamedTemporaryFile(prefix="soak-serve-", suffix=".log", delete=False)
    srv = subprocess.Popen([a.bin, "serve", "-m", a.model, "--host", "127.0.0.1", "--port", "0", "--quiet",
                            "--max-streams", str(a.streams), "--queue", str(4 * a.streams)],
                           stdout=subprocess.DEVNULL, stderr=log)
    try:
        port = None
        for _ in range(600):
            text = open(log.name).read()
            m = re.search(r"on http://127\.0\.0\.1:([0-9]+) ", text)
            if m and re.search(r"^ready", text, re.M):
                port = int(m.group(1))
                break
            if srv.poll() is not None:
                break
            time.sleep(0.1)
        if not port:
            print("error: the server did not start:", open(log.name).read(), file=sys.stderr)
            return 1
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/v1/audio/voices")
        voices = json.loads(c.getresponse().read())["voices"]
        c.close()
        voice = voices[0] if voices else None
        request(port, voice, 0, MODES[0], a.frames)  # warm-up: caches, buffers
        rss0 = rss_kb(srv.pid)
        stalls0 = metric(port, "codectalk_underruns_total")
        lock = threading.Lock()
        stats = {"requests": 0, "errors": 0, "nondeterministic": 0, "by_mode": [0] * len(MODES)}
        seen: dict = {}
        errors: list = []
        stop = time.monotonic() + a.seconds

        def client(i: int) -> None:
            k = i
            while time.monotonic() < stop:
                mode_i = k % len(MODES)
                key = (k % len(TEXTS), 100 + k % len(TEXTS), mode_i)
                try:
                    st, digest = request(port, voice, k % len(TEXTS), MODES[mode_i], a.frames)
                except Exception as e:  # a dropped connection is an error of the server
                    st, digest = -1, str(e)
                with lock:
                    stats["requests"] += 1
                    stats["by_mode"][mode_i] += 1
                    if st != 200:
                        stats["errors"] += 1
                        errors.append(f"{MODES[mode_i]}: {st} {digest}")
                    elif seen.setdefault(key, digest) != digest:
                        stats["nondeterministic"] += 1
                k += a.streams

        threads = [threading.Thread(target=client, args=(i,)) for i in range(a.streams)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        rss1 = rss_kb(srv.pid)
        out = dict(stats, streams=a.streams, seconds=round(wall, 1), frames=a.frames,
                   distinct_requests=len(seen), stalls=metric(port, "codectalk_underruns_total") - stalls0,
                   rejected_503=metric(port, "codectalk_requests_rejected_total"),
                   rss_start_mb=round(rss0 / 1024, 1), rss_end_mb=round(rss1 / 1024, 1),
                   rss_growth_mb=round((rss1 - rss0) / 1024, 1), first_errors=errors[:5])
        print(json.dumps(out, indent=1))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
        bad = out["errors"] or out["nondeterministic"] or out["rss_growth_mb"] > a.max_rss_mb or not out["requests"]
        return 1 if bad else 0
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
        os.unlink(log.name)


if __name__ == "__main__":
    sys.exit(main())
