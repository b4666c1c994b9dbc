#!/usr/bin/env python3
"""codectalk client, ONNX Runtime backend: asks a codectalk server for a codes stream
(response_format "codes", docs/CODES_WIRE.md) and decodes the frames with the exported windowed
codec programs of a manifest (`codectalk export codec`, docs/EXPORT.md) in ONNX Runtime: the
seed's ramp (chunk i has ramp[i] frames, the last size repeats), one program per chunk size, the
window = the utterance's last context + chunk frames (zeros before its start), the last n * hop
samples kept; the last partial chunk runs the smallest program >= n. The manifest is a contract:
its version, fields, program hashes and the programs' input/output shapes are checked, and its
codec id must equal the stream's. Writes WAV (PCM16, or float32 with --float) through PATH.partial
renamed when complete, or raw s16le to stdout with -o -. Prints time to first audio and the decode
ms per chunk. Exit 0 done, 1 refused or failed (nothing written), 2 usage.

usage: client.py --url URL --manifest DIR -t TEXT [-s SPEAKER] [-l LANG] [-i INSTRUCT] [--seed N]
                 [--temperature T] [--top-k K] [--top-p P] [--repetition-penalty R]
                 [--max-new-tokens N] [--api-key K] [--float] [--timeline FILE] -o out.wav
"""
import argparse
import hashlib
import http.client
import json
import os
import struct
import sys
import time
import urllib.parse

MANIFEST_VERSION = 1
WIRE_VERSION = 1
MAX_RECORD = 4096
REC_HEADER, REC_FRAME, REC_END, REC_ERROR, REC_UTTERANCE = 1, 2, 3, 4, 5


class Refused(Exception):
    """A stream, manifest or program that cannot be used: the message says why."""


# ---- the wire format (docs/CODES_WIRE.md; the C decoder is src/serve/codes_wire.c) ----------

class CodesReader:
    """Incremental decoder of the codes stream: feed(bytes) calls on_header(dict),
    on_frame(index, codes) and on_utterance(index); finish() checks the stream ended."""

    def __init__(self, on_header, on_frame, on_utterance):
        self.cb = (on_header, on_frame, on_utterance)
        self.buf = bytearray()
        self.offset = 0
        self.header = None
        self.next_frame = 0
        self.next_utt = 1
        self.ended = False
        self.end = None

    def feed(self, data):
        self.buf += data
        while len(self.buf) >= 4:
            n = struct.unpack_from("<I", self.buf, 0)[0]
            if n > MAX_RECORD:
                raise Refused("codes stream: record at byte %d declares %d bytes (at most %d)" % (self.offset, n, MAX_RECORD))
            if len(self.buf) < 4 + n:
                return
            self._record(bytes(self.buf[4:4 + n]))
            del self.buf[:4 + n]
            self.offset += 4 + n

    def _record(self, p):
        at = self.offset
        if len(p) < 2:
            raise Refused("codes stream: record at byte %d has %d payload bytes (at least 2: version, kind)" % (at, len(p)))
        if p[0] != WIRE_VERSION:
            raise Refused("codes stream: record at byte %d has wire version %d; this reader knows version %d" % (at, p[0], WIRE_VERSION))
        kind = p[1]
        if self.ended:
            raise Refused("codes stream: record at byte %d comes after the end record" % at)
        if kind == REC_ERROR:
            raise Refused("codes stream failed at the server: %s" % p[2:402].decode("utf-8", "replace"))
        if kind != REC_HEADER and self.header is None:
            raise Refused("codes stream: record at byte %d (kind %d) comes before the header record" % (at, kind))
        if kind == REC_HEADER:
            if self.header is not None:
                raise Refused("codes stream: a second header record at byte %d" % at)
            if len(p) < 20:
                raise Refused("codes stream: header record at byte %d is %d bytes, too short" % (at, len(p)))
            g, cb1, sr, spf, fr = struct.unpack_from("<HHIII", p, 2)
            lc = p[18]
            if len(p) < 20 + lc:
                raise Refused("codes stream: header record at byte %d: codec_id runs past the record" % at)
            lm = p[19 + lc]
            if len(p) != 20 + lc + lm:
                raise Refused("codes stream: header record at byte %d is %d bytes; its ids say %d" % (at, len(p), 20 + lc + lm))
            if not 1 <= g <= 64 or sr < 1 or spf < 1 or fr != (sr * 1000 + spf // 2) // spf:
                raise Refused("codes stream: header n_groups %d / rates %d Hz, %d samples per frame, %d mHz out of range or inconsistent" % (g, sr, spf, fr))
            self.header = dict(n_groups=g, codebook_size=cb1 + 1, sample_rate=sr, samples_per_frame=spf,
                               frame_rate_mhz=fr, codec_id=p[19:19 + lc].decode("ascii", "replace"),
                               model_id=p[20 + lc:].decode("utf-8", "replace"))
            self.cb[0](self.header)
        elif kind == REC_FRAME:
            g = self.header["n_groups"]
            if len(p) != 6 + 2 * g:
                raise Refused("codes stream: frame record at byte %d is %d bytes; %d codes need %d" % (at, len(p), g, 6 + 2 * g))
            idx = struct.unpack_from("<I", p, 2)[0]
            if idx != self.next_frame:
                raise Refused("codes stream: frame %d at byte %d out of order (expected frame %d)" % (idx, at, self.next_frame))
            codes = struct.unpack_from("<%dH" % g, p, 6)
            for k, v in enumerate(codes):
                if v >= self.header["codebook_size"]:
                    raise Refused("codes stream: frame %d group %d: code %d outside [0, %d)" % (idx, k, v, self.header["codebook_size"]))
            self.next_frame += 1
            self.cb[1](idx, codes)
        elif kind == REC_UTTERANCE:
            if len(p) != 6:
                raise Refused("codes stream: utterance record at byte %d is %d bytes (6)" % (at, len(p)))
            u = struct.unpack_from("<I", p, 2)[0]
            if u != self.next_utt:
                raise Refused("codes stream: utterance %d at byte %d out of order (expected utterance %d)" % (u, at, self.next_utt))
            self.next_utt += 1
            self.cb[2](u)
        elif kind == REC_END:
            if len(p) != 7:
                raise Refused("codes stream: end record at byte %d is %d bytes (7)" % (at, len(p)))
            frames, stop = struct.unpack_from("<IB", p, 2)
            if frames != self.next_frame:
                raise Refused("codes stream: the end record counts %d frames; %d arrived" % (frames, self.next_frame))
            self.ended, self.end = True, (frames, stop)
        else:
            raise Refused("codes stream: record at byte %d has unknown kind %d" % (at, kind))

    def finish(self):
        if self.buf:
            raise Refused("codes stream truncated: it ends inside the record at byte %d" % self.offset)
        if self.header is None:
            raise Refused("codes stream truncated: no header record")
        if not self.ended:
            raise Refused("codes stream truncated: no end record after %d frames" % self.next_frame)


# ---- the manifest (docs/EXPORT.md; the C reader is src/export/codec_manifest.c) -------------

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(d):
    """The validated manifest of directory d (programs' hashes checked)."""
    path = os.path.join(d, "manifest.json")
    try:
        m = json.load(open(path))
    except OSError as e:
        raise Refused("manifest %s: cannot be opened (%s)" % (path, e.strerror))
    except ValueError as e:
        raise Refused("manifest %s: %s" % (path, e))
    if not isinstance(m, dict):
        raise Refused("manifest %s: not a JSON object" % path)
    if "manifest_version" not in m:
        raise Refused("manifest %s: no manifest_version (written before manifests were versioned: re-export)" % path)
    if m["manifest_version"] != MANIFEST_VERSION:
        raise Refused("manifest %s: version %r; this client reads version %d" % (path, m["manifest_version"], MANIFEST_VERSION))

    def integer(o, where, k, lo, hi):
        v = o.get(k)
        if not isinstance(v, int) or isinstance(v, bool):
            raise Refused("manifest: %s'%s' %s" % (where, k, "is missing" if v is None else "is not an integer"))
        if not lo <= v <= hi:
            raise Refused("manifest: %s'%s' = %d is outside [%d, %d]" % (where, k, v, lo, hi))
        return v

    cid = m.get("codec_id")
    if not isinstance(cid, str) or not cid.startswith("sha256:") or len(cid) != 71:
        raise Refused("manifest: 'codec_id' %r is not sha256:<64 hex digits>" % (cid,))
    ctx = integer(m, "", "context_frames", 0, 4096)
    nq = integer(m, "", "num_quantizers", 1, 64)
    integer(m, "", "codebook_size", 1, 65536)
    hop = integer(m, "", "hop", 1, 1 << 20)
    integer(m, "", "sample_rate", 1, 1000000)
    ramp = m.get("ramp")
    if not isinstance(ramp, list) or not 1 <= len(ramp) <= 16 or not all(isinstance(r, int) and 1 <= r <= 4096 for r in ramp):
        raise Refused("manifest: 'ramp' must be an array of 1..16 chunk sizes in [1, 4096]")
    progs = m.get("programs")
    if not isinstance(progs, dict) or not progs:
        raise Refused("manifest: 'programs' must be an object of programs")
    for key, p in progs.items():
        where = "program '%s': " % key
        if not isinstance(p, dict):
            raise Refused("manifest: %snot an object" % where)
        ch = integer(p, where, "chunk_frames", 1, 4096)
        if str(ch) != key:
            raise Refused("manifest: %schunk_frames is %d" % (where, ch))
        w = integer(p, where, "window_frames", 1, 8192)
        o = integer(p, where, "out_samples", 1, 1 << 31)
        if w != ctx + ch or o != ch * hop:
            raise Refused("manifest: %swindow_frames %d / out_samples %d; context %d + chunk %d frames at hop %d need %d / %d"
                          % (where, w, o, ctx, ch, hop, ctx + ch, ch * hop))
        for io, name, dtype, shape in (("input", "codes", "int64", [1, nq, w]), ("output", "wav", "float32", [1, o])):
            x = p.get(io)
            if not isinstance(x, dict) or x.get("name") != name or x.get("dtype") != dtype or x.get("shape") != shape:
                raise Refused("manifest: %s'%s' does not describe %s %s %s" % (where, io, name, dtype, shape))
        files = [("path", "sha256")] + ([("data_path", "data_sha256")] if p.get("external_data") is True else [])
        for fk, hk in files:
            fn, want = p.get(fk), p.get(hk)
            if not isinstance(fn, str) or not fn or "/" in fn or fn in (".", ".."):
                raise Refused("manifest: %s'%s' %r is not a plain file name in the manifest's directory" % (where, fk, fn))
            if not isinstance(want, str) or len(want) != 64:
                raise Refused("manifest: %s'%s' is not 64 hex digits" % (where, hk))
            fp = os.path.join(d, fn)
            if not os.path.isfile(fp):
                raise Refused("manifest: %sprogram file '%s' is missing" % (where, fn))
            got = sha256_file(fp)
            if got != want:
                raise Refused("manifest: %s'%s' has SHA-256 %s; the manifest says %s (a changed or replaced program: re-export)"
                              % (where, fn, got, want))
    for r in ramp:
        if str(r) not in progs:
            raise Refused("manifest: the ramp's chunk size %d has no program" % r)
    return m


# ---- decoding ---------------------------------------------------------------------------------

class OnnxDecoder:
    """The manifest's programs in ONNX Runtime, run by the ramp."""

    def __init__(self, d, man, timeline):
        import numpy as np
        import onnxruntime as ort
        self.np = np
        self.man = man
        self.ctx, self.hop, self.G = man["context_frames"], man["hop"], man["num_quantizers"]
        self.ramp = man["ramp"]
        self.sizes = sorted(int(k) for k in man["programs"])
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        self.sess = {}
        for k, p in man["programs"].items():
            s = ort.InferenceSession(os.path.join(d, p["path"]), opts, providers=["CPUExecutionProvider"])
            ins, outs = s.get_inputs(), s.get_outputs()
            got = [(i.name, i.type, list(i.shape)) for i in ins], [(o.name, o.type, list(o.shape)) for o in outs]
            want = ([("codes", "tensor(int64)", p["input"]["shape"])], [("wav", "tensor(float)", p["output"]["shape"])])
            if got != want:
                raise Refused("manifest: program '%s' (%s) has inputs %s and outputs %s; the manifest says %s and %s"
                              % (k, p["path"], got[0], got[1], want[0], want[1]))
            self.sess[int(k)] = s
        self.hist_len = self.ctx + max(self.sizes)
        self.timeline = timeline
        self.reset()

    def reset(self):
        self.hist = self.np.zeros((self.hist_len, self.G), dtype=self.np.int64)
        self.ramp_i = 0

    def target(self):
        return self.ramp[min(self.ramp_i, len(self.ramp) - 1)]

    def decode(self, frames):
        """frames [n][G] (n <= the largest program) -> float32 samples [n * hop]."""
        np = self.np
        n = len(frames)
        P = min(s for s in self.sizes if s >= n)
        new = np.asarray(frames, dtype=np.int64)
        window = np.concatenate([self.hist[self.hist_len - (self.ctx + P - n):], new])
        wav = self.sess[P].run(None, {"codes": window.T[None, :, :]})[0]
        self.hist = np.concatenate([self.hist[n:], new])
        self.ramp_i += 1
        return wav[0, (P - n) * self.hop:]


def pcm16(np, x):
    """The quantiser of src/audio/pcm.h: clamp to [-1, 1] (NaN -> -1), * 32767, round half away from zero."""
    x = np.where(np.isnan(x), -1.0, np.clip(x.astype(np.float64), -1.0, 1.0)) * 32767.0
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype("<i2")


def wav_header(rate, samples, use_float):
    bits, fmt = (32, 3) if use_float else (16, 1)
    data = samples * bits // 8
    return (b"RIFF" + struct.pack("<I", 36 + data) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, fmt, 1, rate, rate * bits // 8, bits // 8, bits) + b"data" + struct.pack("<I", data))


def parser():
    ap = argparse.ArgumentParser(description="codes stream -> audio with the exported codec programs (ONNX Runtime)")
    ap.add_argument("--url", required=True)
    ap.add_argument("--manifest", required=True, help="`codectalk export codec` directory")
    ap.add_argument("-t", "--text", required=True)
    ap.add_argument("-s", "--speaker")
    ap.add_argument("-l", "--language")
    ap.add_argument("-i", "--instruct")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--temperature", type=float)
    ap.add_argument("--top-k", type=int)
    ap.add_argument("--top-p", type=float)
    ap.add_argument("--repetition-penalty", type=float)
    ap.add_argument("--max-new-tokens", type=int)
    ap.add_argument("--api-key")
    ap.add_argument("--float", action="store_true", help="32-bit float WAV")
    ap.add_argument("--timeline", help="one JSON line per decoded chunk: t_ms, frames, decode_ms")
    ap.add_argument("-o", "--output", required=True, help="out.wav, or - for raw s16le on stdout")
    return ap


def request(a):
    """The POST /v1/audio/speech body and headers of parsed arguments a."""
    body = {"input": a.text, "response_format": "codes", "stream": True, "stream_format": "audio", "seed": a.seed}
    for k, v in (("voice", a.speaker), ("language", a.language), ("instructions", a.instruct),
                 ("temperature", a.temperature), ("top_k", a.top_k), ("top_p", a.top_p),
                 ("repetition_penalty", a.repetition_penalty), ("max_new_tokens", a.max_new_tokens)):
        if v is not None:
            body[k] = v
    hdrs = {"Content-Type": "application/json"}
    if a.api_key:
        hdrs["Authorization"] = "Bearer " + a.api_key
    return body, hdrs


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    raw = a.output == "-"
    if raw and a.float:
        ap.error("--float writes a WAV file, not raw s16le")
    tmp = None
    try:
        man = read_manifest(a.manifest)
        try:
            import numpy as np
            dec = OnnxDecoder(a.manifest, man, a.timeline)
        except ImportError as e:
            raise Refused("ONNX Runtime is not installed (pip install onnxruntime numpy): %s" % e)
        u = urllib.parse.urlparse(a.url if "://" in a.url else "http://" + a.url)
        if u.scheme != "http" or not u.hostname:
            raise Refused("--url %r: expected http://HOST:PORT" % a.url)
        body, hdrs = request(a)
        if raw:
            out = sys.stdout.buffer
        else:
            tmp = a.output + ".partial"
            out = open(tmp, "wb")
        st = dict(pend=[], samples=0, chunks=0, ms=[], ttfa=None, hdr=None)
        tl = open(a.timeline, "w") if a.timeline else None
        t0 = time.monotonic()

        def write(x):
            b = x.astype("<f4").tobytes() if a.float else pcm16(np, x).tobytes()
            if st["samples"] == 0 and not raw:
                out.write(wav_header(st["hdr"]["sample_rate"], 0, a.float))  # sizes patched at the end
            out.write(b)
            st["samples"] += len(x)

        def run(flush):
            while st["pend"]:
                n = dec.target()
                if len(st["pend"]) < n and not flush:
                    return
                chunk, st["pend"] = st["pend"][:n], st["pend"][n:]
                t = time.monotonic()
                write(dec.decode(chunk))
                now = time.monotonic()
                ms = (now - t) * 1e3
                st["ms"].append(ms)
                if st["ttfa"] is None:
                    st["ttfa"] = (now - t0) * 1e3
                if tl:
                    tl.write(json.dumps({"t_ms": round((now - t0) * 1e3, 3), "frames": len(chunk), "decode_ms": round(ms, 3)}) + "\n")

        def on_header(h):
            if h["codec_id"] != man["codec_id"]:
                raise Refused("the manifest is for codec %s; the server's codec is %s (export the server's model)"
                              % (man["codec_id"], h["codec_id"] or "(none)"))
            if (h["n_groups"], h["samples_per_frame"], h["sample_rate"]) != (man["num_quantizers"], man["hop"], man["sample_rate"]):
                raise Refused("the stream (%d codes, %d samples per frame, %d Hz) does not fit the manifest (%d, %d, %d)"
                              % (h["n_groups"], h["samples_per_frame"], h["sample_rate"], man["num_quantizers"], man["hop"], man["sample_rate"]))
            st["hdr"] = h

        def on_utterance(i):
            run(True)
            dec.reset()

        rd = CodesReader(on_header, lambda i, c: st["pend"].append(c), on_utterance)
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=120)
        try:
            conn.request("POST", "/v1/audio/speech", json.dumps(body), hdrs)
            resp = conn.getresponse()
        except OSError as e:
            raise Refused("%s: %s" % (a.url, e))
        if resp.status != 200:
            text = resp.read()
            try:
                msg = json.loads(text)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                msg = text[:200].decode("utf-8", "replace")
            raise Refused("the server answered %d: %s" % (resp.status, msg))
        if resp.getheader("Content-Type") != "application/vnd.codectalk.codes":
            raise Refused("the server answered %r, not a codes stream" % resp.getheader("Content-Type"))
        wire = 0
        while True:
            try:
                data = resp.read1(65536)
            except (OSError, http.client.HTTPException) as e:
                raise Refused("%s: the connection failed: %s" % (a.url, e))
            if not data:
                break
            wire += len(data)
            rd.feed(data)
            run(False)
        rd.finish()
        run(True)
        if not raw:
            out.seek(0)
            out.write(wav_header(st["hdr"]["sample_rate"], st["samples"], a.float))
            out.close()
            os.replace(tmp, a.output)
            tmp = None
        else:
            out.flush()
        if tl:
            tl.close()
        audio = st["samples"] / st["hdr"]["sample_rate"]
        ms = st["ms"]
        print("%s: %.2f s of audio in %.2f s, time to first audio %.3f s; %d frames in %d bytes on the wire "
              "(%.0f B per audio second); onnx decode: %d chunks, %.2f ms per chunk (max %.2f)"
              % ("stdout" if raw else a.output, audio, time.monotonic() - t0, (st["ttfa"] or 0) / 1e3, rd.end[0], wire,
                 wire / audio if audio else 0, len(ms), sum(ms) / len(ms) if ms else 0, max(ms) if ms else 0),
              file=sys.stderr)
        return 0
    except Refused as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    finally:
        if tmp and os.path.exists(tmp):
            os.remove(tmp)


if __name__ == "__main__":
    sys.exit(main())
