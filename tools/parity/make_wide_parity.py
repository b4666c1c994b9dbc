#!/usr/bin/env python3
# Purpose: official-implementation references at SIMD widths (>= 128 columns). The model is
# NOT built here and NOT committed: `codectalk make-model --preset parity128 --seed N` writes
# it (deterministically; the C test regenerates it and checks the sha256 recorded here), and
# the OFFICIAL qwen-tts 0.1.1 code loads that directory as is with
# Qwen3TTSModel.from_pretrained (the published layout, speech tokenizer included). Then, as
# tools/parity/make_parity.py does (its Recorder hooks and helpers are reused), the official
# generate_custom_voice runs greedy in float32 (eager attention) and, teacher-forced, in
# bfloat16, and forward hooks on the official modules capture the prefill embeddings, talker
# hidden states / codec logits of the first frames, code-predictor logits and the free-run
# codes. Nothing here reimplements model math.
# Output: tests/data/wide_parity/{manifest.json, ref.safetensors} (README.md is hand-written).
# Run by hand (CI never runs it), after building the CLI:
#   /work/main/.venv-parity/bin/python tools/parity/make_wide_parity.py \
#       --repo . --codectalk build-h/codectalk --work /tmp/wide-parity-work

import argparse
import hashlib
import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_parity as mp  # noqa: E402  (hooks, codec stub, greedy diagnostics)

from qwen_tts import Qwen3TTSModel  # noqa: E402

PRESET = "parity128"
SEEDS = [128, 228, 328, 428]  # weight seeds tried; the widest smallest greedy margin wins
MAX_NEW_TOKENS = 24           # 24 frames per case
MIN_FRAMES = 20               # a seed whose run stops earlier (EOS) is not used
S_ROWS = 6                    # rows of talker hidden/logits kept (f32 and bf16)
PRED_ROWS = 1                 # frames of predictor logits kept (f32 and bf16): 15 x 2048 each
CASES = [
    dict(letter="a", speaker="Vivian", language="English", non_streaming=True,
         text="Hello world, this is a wide parity test."),
    dict(letter="b", speaker="Eric", language="Chinese", non_streaming=False,
         text="今天天气很好，我们去公园散步吧。"),
    dict(letter="c", speaker="Ryan", language="Auto", non_streaming=False,
         text="The meeting starts at 10:45 on May 3rd, 2024."),
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def make_model(codectalk, seed, out):
    if os.path.exists(out):
        shutil.rmtree(out)
    subprocess.run([codectalk, "make-model", "--preset", PRESET, "--seed", str(seed), "-o", out],
                   check=True, stdout=subprocess.DEVNULL)
    return sha256(os.path.join(out, "model.safetensors"))


def load(model_dir):
    """The official loader, exactly as a user calls it on a published checkpoint; then checks
    that every parameter came from the file bit for bit (nothing left at its init)."""
    w = Qwen3TTSModel.from_pretrained(model_dir, dtype=torch.bfloat16, attn_implementation="eager",
                                      local_files_only=True)
    m = w.model
    m.eval()
    stored = load_file(os.path.join(model_dir, "model.safetensors"))
    params = dict(m.named_parameters())
    assert set(params) == set(stored), (sorted(set(params) ^ set(stored)))[:10]
    for k, p in params.items():
        assert p.dtype == torch.bfloat16 and torch.equal(p.detach(), stored[k]), k
    assert m.talker.config._attn_implementation == "eager"
    assert m.talker.code_predictor.config._attn_implementation == "eager"
    m.speech_tokenizer = mp.CodecStub()  # keep the codes; no decoding needed
    return w


def run(w, case, force=None):
    rec = mp.Recorder(w.model, force=force)
    w.generate_custom_voice(text=case["text"], speaker=case["speaker"], language=case["language"],
                            non_streaming_mode=case["non_streaming"], do_sample=False,
                            subtalker_dosample=False, max_new_tokens=MAX_NEW_TOKENS)
    rec.close()
    return rec, w.model.speech_tokenizer.codes[0].to(torch.int64)


def f32_case(w32, case):
    rec, codes = run(w32, case)
    seq = rec.gen_seq[0]
    F = codes.shape[0]
    assert len(rec.pred_logits) == F and len(rec.talker_logits) == len(seq)
    assert torch.equal(seq[:F], codes[:, 0])
    for k, lg in enumerate(rec.talker_logits):
        assert int(torch.argmax(mp.processed(lg, seq, k))) == int(seq[k]), "diagnostic mismatch"
    for f, fr in enumerate(rec.pred_logits):
        for g, lg in enumerate(fr):
            assert int(torch.argmax(lg)) == int(codes[f, g + 1]), "predictor greedy mismatch"
    return rec, codes, seq


def margins(rec, seq):
    mt = min(mp.top2_margin(mp.processed(lg, seq, k)) for k, lg in enumerate(rec.talker_logits))
    mpr = min(mp.top2_margin(lg) for fr in rec.pred_logits for lg in fr)
    return mt, mpr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--codectalk", required=True, help="the built CLI (its make-model)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", default=None, help="default: <repo>/tests/data/wide_parity")
    args = ap.parse_args()
    out = args.out or os.path.join(args.repo, "tests", "data", "wide_parity")
    torch.manual_seed(0)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(out, exist_ok=True)

    # 1. seed search: every case must run >= MIN_FRAMES; widest smallest margin wins
    search = {}
    for seed in SEEDS:
        d = os.path.join(args.work, "seed%d" % seed)
        make_model(args.codectalk, seed, d)
        w = load(d)
        w.model.float()
        worst, frames = float("inf"), MAX_NEW_TOKENS
        for case in CASES:
            rec, codes, seq = f32_case(w, case)
            worst = min(worst, *margins(rec, seq))
            frames = min(frames, codes.shape[0])
        search[seed] = dict(min_margin=worst, min_frames=frames)
        print("seed %d: min frames %d, min greedy margin %.5f" % (seed, frames, worst), flush=True)
        del w
    ok = [s for s in SEEDS if search[s]["min_frames"] >= MIN_FRAMES]
    assert ok, "no seed runs %d frames in every case" % MIN_FRAMES
    seed = max(ok, key=lambda s: search[s]["min_margin"])

    # 2. the chosen model: f32 (bf16 values, f32 math) and bf16
    mdir = os.path.join(args.work, "model")
    digest = make_model(args.codectalk, seed, mdir)
    w32 = load(mdir)
    w32.model.float()
    w16 = load(mdir)
    with open(os.path.join(mdir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    ref = {}
    manifest = dict(
        generator="tools/parity/make_wide_parity.py",
        versions={"qwen-tts": md.version("qwen-tts"), "transformers": md.version("transformers"),
                  "torch": torch.__version__, "safetensors": md.version("safetensors"),
                  "python": sys.version.split()[0]},
        make_model=dict(preset=PRESET, seed=seed, model_safetensors_sha256=digest,
                        seed_search={str(k): v for k, v in search.items()}),
        loader="Qwen3TTSModel.from_pretrained(dir, dtype=bfloat16, attn_implementation='eager') "
               "on the make-model directory as written; f32 = that model .float()",
        talker={k: cfg["talker_config"][k] for k in (
            "text_hidden_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "head_dim")},
        predictor={k: cfg["talker_config"]["code_predictor_config"][k] for k in (
            "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim")},
        max_new_tokens=MAX_NEW_TOKENS, S_rows=S_ROWS, f32_pred_rows=PRED_ROWS,
        bf16_pred_rows=PRED_ROWS, cases=[],
    )
    for case in CASES:
        X = case["letter"]
        rec, codes, seq = f32_case(w32, case)
        F = codes.shape[0]
        S = min(F, S_ROWS)
        input_ids = rec.model_gen_args["input_ids"][0][0]
        prefill = rec.talker_in[0]
        has_trailing = not case["non_streaming"]
        ref[X + ".input_ids"] = input_ids.numpy().astype(np.int32)
        ref[X + ".prefill"] = prefill.numpy()
        if has_trailing:
            ref[X + ".trailing"] = rec.gen_kwargs["trailing_text_hidden"][0].float().numpy()
        ref[X + ".codes"] = codes.numpy().astype(np.int32)
        ref[X + ".f32.hidden"] = torch.stack(rec.talker_h[:S]).numpy()
        ref[X + ".f32.logits"] = torch.stack(rec.talker_logits[:S]).numpy()
        ref[X + ".f32.pred_logits"] = torch.stack(
            [torch.stack(fr) for fr in rec.pred_logits[:PRED_ROWS]]).numpy()
        ref[X + ".f32.step_input"] = torch.stack([v[0] for v in rec.talker_in[1:S]]).numpy()
        mt, mpr = margins(rec, seq)

        rec16, codes16 = run(w16, case, force=dict(c0=seq, codes=codes))
        assert torch.equal(codes16, codes), "bf16 teacher forcing did not reproduce the codes"
        ref[X + ".bf16.prefill"] = rec16.talker_in[0].numpy()
        ref[X + ".bf16.hidden"] = torch.stack(rec16.talker_h[:S]).numpy()
        ref[X + ".bf16.logits"] = torch.stack(rec16.talker_logits[:S]).numpy()
        ref[X + ".bf16.pred_logits"] = torch.stack(
            [torch.stack(fr) for fr in rec16.pred_logits[:PRED_ROWS]]).numpy()

        entry = dict(
            letter=X, model="make-model %s seed %d" % (PRESET, seed), kind="custom_voice",
            text=case["text"], target_string=w32._build_assistant_text(case["text"]),
            speaker=case["speaker"], language=case["language"], instruct=None,
            non_streaming=case["non_streaming"], L=int(prefill.shape[0]),
            T=int(ref[X + ".trailing"].shape[0]) if has_trailing else 0, S=S, F=F,
            stopped_on_eos=bool(int(seq[-1]) == mp.EOS), c0_sequence=[int(v) for v in seq],
            wrapper_method="Qwen3TTSModel.generate_custom_voice",
            wrapper_kwargs_passed=dict(do_sample=False, subtalker_dosample=False,
                                       max_new_tokens=MAX_NEW_TOKENS,
                                       non_streaming_mode=case["non_streaming"]),
            talker_generate_kwargs={k: v for k, v in rec.gen_kwargs.items()
                                    if k not in ("inputs_embeds", "attention_mask",
                                                 "trailing_text_hidden", "tts_pad_embed",
                                                 "suppress_tokens")},
            min_talker_greedy_margin=mt, min_predictor_greedy_margin=mpr,
        )
        manifest["cases"].append(entry)
        print("case %s: L=%d F=%d margins t=%.4f p=%.4f" % (X, entry["L"], F, mt, mpr), flush=True)

    for k, v in ref.items():
        assert v.dtype in (np.float32, np.int32), (k, v.dtype)
        ref[k] = np.ascontiguousarray(v)
    rpath = os.path.join(out, "ref.safetensors")
    save_file(ref, rpath, metadata={"generator": "tools/parity/make_wide_parity.py"})
    manifest["ref_safetensors_bytes"] = os.path.getsize(rpath)
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print("seed %d sha256 %s, ref.safetensors %d bytes" % (seed, digest,
                                                           manifest["ref_safetensors_bytes"]))


if __name__ == "__main__":
    main()
