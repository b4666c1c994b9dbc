#!/usr/bin/env python3
"""Runs codectalk's exported ONNX graphs in ONNX Runtime and compares them with reference
tensors dumped by our C runtime (tests/onnx/dump_ref.c). Subcommands:

  check  FILE.onnx...                      onnx.checker (full) + strict shape inference
  step   FILE.onnx REFDIR [--tol T]        one decode step: logits, hidden, k_new_i, v_new_i (NMSE)
  codec  FILE.onnx REFDIR [--tol T]        one codec window: wav (NMSE)
  greedy TALKER.onnx PRED.onnx REFDIR      free-running greedy loop vs the C runtime's greedy codes

Every check prints "PASS <what> ..." or "FAIL <what> ..."; the exit status is the number of
failures (capped at 100)."""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

FAILS = 0


def report(ok, what, detail=""):
    global FAILS
    print(("PASS " if ok else "FAIL ") + what + (" " + detail if detail else ""), flush=True)
    if not ok:
        FAILS += 1


def load_ref(d):
    meta = json.load(open(os.path.join(d, "meta.json")))
    out = {}
    for name, t in meta["tensors"].items():
        a = np.fromfile(os.path.join(d, t["file"]), dtype=np.dtype(t["dtype"]))
        out[name] = a.reshape(t["shape"])
    return meta, out


def nmse(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    den = float(np.sum(b * b))
    num = float(np.sum((a - b) ** 2))
    return num / den if den > 0 else num


def session(path):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def cmd_check(paths):
    for p in paths:
        try:
            onnx.checker.check_model(p, full_check=True)
            m = onnx.load(p)
            onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True, data_prop=True)
            static = all(d.HasField("dim_value") for v in list(m.graph.input) + list(m.graph.output)
                         for d in v.type.tensor_type.shape.dim)
            report(static, "check " + os.path.basename(p), "(checker full, strict shape inference, static io shapes)")
        except Exception as e:  # noqa: BLE001
            report(False, "check " + os.path.basename(p), str(e).splitlines()[0][:300])


def feed_for(sess, ref):
    feeds = {}
    for i in sess.get_inputs():
        if i.name in ("k_cache", "v_cache"):  # v1 layout: stacked over layers
            n = len([k for k in ref if k.startswith(i.name + "_")])
            a = np.stack([ref[f"{i.name}_{l}"] for l in range(n)])
        else:
            a = ref[i.name]
        feeds[i.name] = a.astype(np.float16) if i.type == "tensor(float16)" else a
    return feeds


def cmd_step(path, refdir, tol):
    meta, ref = load_ref(refdir)
    sess = session(path)
    names = [o.name for o in sess.get_outputs()]
    outs = dict(zip(names, sess.run(names, feed_for(sess, ref))))
    worst = 0.0
    for n in ("k_new", "v_new"):  # v1 layout: stacked over layers
        if n in outs:
            nl = outs[n].shape[0]
            ref["ref." + n] = np.stack([ref[f"ref.{n}_{l}"] for l in range(nl)])
    for n, v in outs.items():
        r = ref.get("ref." + n)
        if r is None:
            report(False, f"step {os.path.basename(path)} {n}", "no reference tensor")
            continue
        if v.shape != r.shape:
            report(False, f"step {os.path.basename(path)} {n}", f"shape {v.shape} vs {r.shape}")
            continue
        worst = max(worst, nmse(v, r))
    e_log = nmse(outs["logits"], ref["ref.logits"])
    kv = [nmse(outs[n], ref["ref." + n]) for n in names if n.startswith(("k_new", "v_new"))]
    report(worst <= tol, f"step {os.path.basename(path)} pos {meta['pos']}",
           f"nmse logits {e_log:.3e} kv max {max(kv):.3e} all max {worst:.3e} (tol {tol:g})")


def cmd_codec(path, refdir, tol):
    meta, ref = load_ref(refdir)
    sess = session(path)
    wav = sess.run(["wav"], {"codes": ref["codes"]})[0]
    ok = wav.shape == ref["ref.wav"].shape
    e = nmse(wav, ref["ref.wav"]) if ok else float("inf")
    mad = float(np.max(np.abs(wav - ref["ref.wav"]))) if ok else float("inf")
    report(ok and e <= tol, f"codec {os.path.basename(path)} ctx {meta['context']} chunk {meta['chunk']}",
           f"nmse {e:.3e} max_abs {mad:.3e} samples {wav.size} (tol {tol:g})")


class Step:
    """One exported decode step with its host-side cache (float32 or float16 graph)."""

    def __init__(self, path):
        self.sess = session(path)
        self.side = json.load(open(os.path.splitext(path)[0] + ".json"))
        self.L = self.side["cache_len"]
        self.D = self.side["head_dim"]
        self.theta = self.side["rope_theta"]
        self.dt = np.float16 if self.side["dtype"] == "float16" else np.float32
        self.nl = self.side["layers"]
        self.kvh = self.side["kv_heads"]
        self.outs = [o.name for o in self.sess.get_outputs()]
        self.reset()

    def reset(self):
        self.k = [np.zeros((1, self.kvh, self.L, self.D), self.dt) for _ in range(self.nl)]
        self.v = [np.zeros((1, self.kvh, self.L, self.D), self.dt) for _ in range(self.nl)]
        self.pos = 0

    def angles(self, p):
        half = self.D // 2
        i = np.arange(half, dtype=np.float32)
        inv = (np.float32(1.0) / np.power(np.float32(self.theta), (2 * i).astype(np.float32) / np.float32(self.D))).astype(np.float32)
        ang = (np.float32(p) * inv).astype(np.float32)
        c = np.cos(ang).astype(np.float32)
        s = np.sin(ang).astype(np.float32)
        return np.concatenate([c, c]).reshape(1, 1, 1, -1), np.concatenate([s, s]).reshape(1, 1, 1, -1)

    def run(self, x):
        p = self.pos
        if p >= self.L:
            raise RuntimeError("cache full")
        c, s = self.angles(p)
        mask = np.zeros((1, 1, 1, self.L + 1), np.float32)
        mask[..., p:self.L] = -65504.0 / 4.0
        feeds = {"x": x.reshape(1, 1, -1).astype(self.dt), "cos": c.astype(self.dt), "sin": s.astype(self.dt),
                 "mask": mask.astype(self.dt)}
        for i in range(self.nl):
            feeds[f"k_cache_{i}"] = self.k[i]
            feeds[f"v_cache_{i}"] = self.v[i]
        r = dict(zip(self.outs, self.sess.run(self.outs, feeds)))
        for i in range(self.nl):
            self.k[i][:, :, p] = r[f"k_new_{i}"][:, :, 0]
            self.v[i][:, :, p] = r[f"v_new_{i}"][:, :, 0]
        self.pos += 1
        return r["logits"].astype(np.float32), r["hidden"].astype(np.float32).reshape(-1)


def cmd_greedy(tpath, ppath, refdir):
    meta, ref = load_ref(refdir)
    talker, pred = Step(tpath), Step(ppath)
    codes_ref = ref["ref.codes"]
    F, G = codes_ref.shape
    cemb, pemb = ref["codec_emb"], ref["pred_emb"]
    eos, cb, pen = meta["codec_eos"], meta["codebook"], np.float32(meta["repetition_penalty"])
    seen = np.zeros(meta["talker_vocab"], bool)
    ngen = 0

    def pick_c0(lg):
        nonlocal ngen
        lg = lg.reshape(-1).astype(np.float32).copy()
        if pen != 1.0:
            sv = lg[seen]
            lg[seen] = np.where(sv < 0, sv * pen, sv / pen)
        if ngen < meta["min_new_tokens"]:
            lg[eos] = -np.inf
        keep = lg[eos]
        lg[cb:] = -np.inf
        lg[eos] = keep
        lg[np.isnan(lg)] = -np.inf
        c = int(np.argmax(lg))
        seen[c] = True
        ngen += 1
        return c

    h = None
    for p in range(meta["prompt_len"]):
        lg, h = talker.run(ref["prompt"][p])
    c0 = pick_c0(lg)
    out = []
    for f in range(F):
        if c0 == eos:
            break
        pred.reset()
        codes = [c0]
        _, _ = pred.run(h)
        plg, _ = pred.run(cemb[c0])
        for g in range(1, G):
            c = int(np.argmax(plg[0, g - 1]))
            codes.append(c)
            if g == G - 1:
                break
            plg, _ = pred.run(pemb[g - 1][c])
        out.append(codes)
        if f == F - 1:
            break
        x = cemb[codes[0]].copy()
        for g in range(1, G):
            x = x + pemb[g - 1][codes[g]]
        overlay = ref["trailing"][f] if f < meta["n_trailing"] else ref["pad_row"]
        x = (overlay + x).astype(np.float32)
        lg, h = talker.run(x)
        c0 = pick_c0(lg)
    got = np.array(out, dtype=np.int32)
    same = got.shape == codes_ref.shape and bool(np.all(got == codes_ref))
    first_bad = -1
    if not same:
        n = min(len(got), len(codes_ref))
        bad = [i for i in range(n) if not np.array_equal(got[i], codes_ref[i])]
        first_bad = bad[0] if bad else n
    report(same, f"greedy {os.path.basename(tpath)} + {os.path.basename(ppath)}",
           f"{len(got)} frames vs the C runtime's {F}" + ("" if same else f", first mismatch at frame {first_bad}"))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd, args = argv[1], argv[2:]
    tol = None
    if "--tol" in args:
        i = args.index("--tol")
        tol = float(args[i + 1])
        args = args[:i] + args[i + 2:]
    if cmd == "check":
        cmd_check(args)
    elif cmd == "step":
        cmd_step(args[0], args[1], tol if tol is not None else 1e-9)
    elif cmd == "codec":
        cmd_codec(args[0], args[1], tol if tol is not None else 1e-8)
    elif cmd == "greedy":
        cmd_greedy(args[0], args[1], args[2])
    else:
        print(__doc__)
        return 2
    return min(FAILS, 100)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
