#!/usr/bin/env python3
# Purpose: golden references for voice cloning (x-vector-only and ICL) from the OFFICIAL
# qwen-tts 0.1.1 code: a small random Base model built with the official classes (weights drawn
# as tools/parity/make_parity.py draws them, saved through the official save path), then the
# official Qwen3TTSModel.generate_voice_clone run greedy in float32 (eager attention) for each
# case, with a given x-vector and, for ICL, given reference codes (a fixed random code array
# passed through the official VoiceClonePromptItem; no encoder involved). Dumped with forward
# hooks on the official modules (make_parity.Recorder): the prefill embeddings, the trailing
# text overlay, the free-run codes; for one ICL case also the official final PCM (reference
# codes + new codes decoded by the official speech tokenizer of tests/data/codec_parity/small,
# reference part cut by the wrapper). Nothing here reimplements model math.
# Output: tests/data/clone_parity/{README.md is hand-written, manifest.json, base32/...}.
# Run through tools/parity/make_clone_parity.sh (by hand; CI never runs it).

import argparse
import importlib.metadata as md
import json
import os
import sys

import numpy as np
import torch
from safetensors.numpy import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_parity as mp  # noqa: E402  (the official-model helpers: config, init, hooks)

from qwen_tts import Qwen3TTSModel  # noqa: E402
from qwen_tts.core.models import Qwen3TTSConfig, Qwen3TTSForConditionalGeneration, Qwen3TTSProcessor  # noqa: E402
from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import Qwen3TTSTokenizerV2Model  # noqa: E402
from qwen_tts.inference.qwen3_tts_model import VoiceClonePromptItem  # noqa: E402
from qwen_tts.inference.qwen3_tts_tokenizer import Qwen3TTSTokenizer  # noqa: E402
from transformers import AutoConfig, AutoModel, AutoProcessor  # noqa: E402

MAX_NEW_TOKENS = 26   # at most 25 frames per run
MIN_FRAMES = 20       # every case must run at least this many frames (no early EOS)
REF_FRAMES = 12
REF_CODES_SEED = 4401  # numpy RandomState(seed).randint(0, 2048, (REF_FRAMES, 16))
XVECTOR_SEED = 4402    # torch.randn(H, Generator(seed))
SEED_TRIES = 6         # weight seeds tried: seed, seed + 100, ...; the widest greedy margin wins
PCM_CASE = "c"         # the ICL case whose official PCM is stored

# Talker and predictor width 32: at 64 the 15 predictor embedding tables and 15 heads
# ([2048, width] each, bf16) alone are 7.9 MB, over this data set's 6 MB budget.
MODEL = dict(
    seed=1401, kind="base", size="0b6", text_hidden=4,
    talker=mp.layer_cfg(32, 64, 3, 4, 2, 16), mrope=[4, 2, 2],
    predictor=mp.layer_cfg(32, 64, 2, 4, 2, 16),
    speaker_encoder=dict(enc_dim=32, sample_rate=24000, mel_dim=128,
                         enc_channels=[16, 16, 16, 16, 48], enc_kernel_sizes=[5, 3, 3, 3, 1],
                         enc_dilations=[1, 2, 3, 4, 1], enc_attention_channels=8,
                         enc_res2net_scale=8, enc_se_channels=8),
)
REF_LONG = "This is the reference clip, spoken slowly and clearly for the cloning test."
CASES = [
    dict(letter="a", icl=False, non_streaming=False, language="English",
         text="I can speak in a borrowed voice."),
    dict(letter="b", icl=False, non_streaming=True, language="English",
         text="Call me at 555 0199 after 6 pm."),
    # ICL streaming, transcript items beyond the reference frames: trailing overlay
    dict(letter="c", icl=True, non_streaming=False, language="English", ref_text=REF_LONG,
         text="Good morning, how are you today?"),
    dict(letter="d", icl=True, non_streaming=True, language="English", ref_text=REF_LONG,
         text="Good morning, how are you today?"),
    # ICL streaming, fewer text items than reference frames + 1: text padded with tts_pad
    dict(letter="e", icl=True, non_streaming=False, language="Auto", ref_text="Hello.",
         text="Good night."),
]


class RecordingTokenizer:
    """The official speech tokenizer; remembers the codes each decode call gets."""

    def __init__(self, tok):
        self.tok = tok
        self.codes = None
        self.full = None

    def decode(self, items):
        self.codes = [torch.as_tensor(it["audio_codes"]).detach().cpu() for it in items]
        wavs, fs = self.tok.decode(items)
        self.full = [np.asarray(w, dtype=np.float32).copy() for w in wavs]
        return wavs, fs


def official_tokenizer(path):
    """Qwen3TTSTokenizer around the official Qwen3TTSTokenizerV2Model loaded from path (the
    codec_parity/small checkpoint has no preprocessor_config.json, which only encode needs)."""
    tok = Qwen3TTSTokenizer()
    tok.model = Qwen3TTSTokenizerV2Model.from_pretrained(
        path, attn_implementation="eager", local_files_only=True, dtype=torch.float32).eval()
    for m in tok.model.modules():
        cfg = getattr(m, "config", None)
        if cfg is not None and hasattr(cfg, "_attn_implementation"):
            cfg._attn_implementation = "eager"
    tok.config = tok.model.config
    tok.device = torch.device("cpu")
    return tok


def ref_codes():
    return torch.from_numpy(np.random.RandomState(REF_CODES_SEED).randint(0, 2048, (REF_FRAMES, 16))).long()


def xvector():
    H = MODEL["talker"]["hidden_size"]
    return torch.randn(H, generator=torch.Generator().manual_seed(XVECTOR_SEED))


def run(model, proc, tok, case):
    """One greedy free run of the official generate_voice_clone with hooks; returns the recorder,
    the new codes [F, 16], the talker c0 sequence and the returned (cut) wav."""
    w = Qwen3TTSModel(model=model, processor=proc, generate_defaults=model.generate_config)
    model.speech_tokenizer = RecordingTokenizer(tok)
    rec = mp.Recorder(model)
    if case["icl"]:
        item = VoiceClonePromptItem(ref_code=ref_codes(), ref_spk_embedding=xvector(), x_vector_only_mode=False,
                                    icl_mode=True, ref_text=case["ref_text"])
    else:
        item = VoiceClonePromptItem(ref_code=None, ref_spk_embedding=xvector(), x_vector_only_mode=True,
                                    icl_mode=False, ref_text=None)
    wavs, fs = w.generate_voice_clone(text=case["text"], language=case["language"], voice_clone_prompt=[item],
                                      non_streaming_mode=case["non_streaming"], do_sample=False,
                                      subtalker_dosample=False, max_new_tokens=MAX_NEW_TOKENS)
    rec.close()
    assert fs == 24000
    dec = model.speech_tokenizer.codes[0].to(torch.int64)
    nref = REF_FRAMES if case["icl"] else 0
    if nref:
        assert torch.equal(dec[:nref], ref_codes()), "the wrapper did not prepend the reference codes"
    codes = dec[nref:]
    seq = rec.gen_seq[0]
    F = codes.shape[0]
    assert len(rec.pred_logits) == F and torch.equal(seq[:F], codes[:, 0])
    for k, lg in enumerate(rec.talker_logits):
        assert int(torch.argmax(mp.processed(lg, seq, k))) == int(seq[k]), "diagnostic mismatch"
    for f, fr in enumerate(rec.pred_logits):
        for g, lg in enumerate(fr):
            assert int(torch.argmax(lg)) == int(codes[f, g + 1]), "predictor greedy mismatch"
    full = model.speech_tokenizer.full[0]
    return rec, codes, seq, np.asarray(wavs[0], dtype=np.float32), full


def margins(rec, seq):
    mt = min(mp.top2_margin(mp.processed(lg, seq, k)) for k, lg in enumerate(rec.talker_logits))
    mpred = min(mp.top2_margin(lg) for fr in rec.pred_logits for lg in fr)
    return mt, mpred


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    torch.use_deterministic_algorithms(True)
    AutoConfig.register("qwen3_tts", Qwen3TTSConfig)
    AutoModel.register(Qwen3TTSConfig, Qwen3TTSForConditionalGeneration)
    AutoProcessor.register(Qwen3TTSConfig, Qwen3TTSProcessor)
    tok_dir = os.path.join(args.repo, "assets", "qwen3-tokenizer")
    codec_dir = os.path.join(args.repo, "tests", "data", "codec_parity", "small", "speech_tokenizer")
    tok = official_tokenizer(codec_dir)

    os.makedirs(args.out, exist_ok=True)
    mp.make_model_dir(MODEL, MODEL["seed"], os.path.join(args.work, "clone_proc_model"))
    proc = mp.make_processor(os.path.join(args.work, "clone_proc_model"), tok_dir, args.work)

    # 1. weight seed: every case runs >= MIN_FRAMES frames; then the widest min greedy margin
    search = {}
    for seed in [MODEL["seed"] + 100 * i for i in range(SEED_TRIES)]:
        sdir = os.path.join(args.work, "clone_search", str(seed))
        mp.make_model_dir(MODEL, seed, sdir)
        ms = mp.load_official(sdir, torch.bfloat16).float()
        worst, short = float("inf"), None
        for case in CASES:
            rec, codes, seq, _, _ = run(ms, proc, tok, case)
            if codes.shape[0] < MIN_FRAMES:
                short = (case["letter"], int(codes.shape[0]))
            worst = min(worst, *margins(rec, seq))
        search[seed] = dict(min_margin=worst, too_short=short)
        print("seed %d: min greedy margin %.5f%s" % (seed, worst, " short %s" % (short,) if short else ""),
              flush=True)
        del ms
    ok = [s for s in search if search[s]["too_short"] is None]
    assert ok, "no seed ran every case for %d frames" % MIN_FRAMES
    seed = max(ok, key=lambda s: search[s]["min_margin"])
    mdir = os.path.join(args.out, "base32")
    mp.make_model_dir(MODEL, seed, mdir)

    # 2. the f32 references from the saved (bf16) checkpoint
    m32 = mp.load_official(mdir, torch.bfloat16).float()
    assert m32.talker.config._attn_implementation == "eager"
    ref = {"xvector": xvector().numpy().astype(np.float32),
           "ref_codes": ref_codes().numpy().astype(np.int32)}
    cases = []
    for case in CASES:
        X = case["letter"]
        rec, codes, seq, wav, full = run(m32, proc, tok, case)
        prefill = rec.talker_in[0]
        trailing = rec.gen_kwargs["trailing_text_hidden"][0].float()
        pad = rec.gen_kwargs["tts_pad_embed"][0, 0].float()
        # the overlay is "P for every step" when the official trailing is the pad row alone
        has_trailing = not (trailing.shape[0] == 1 and torch.equal(trailing[0], pad))
        ref[X + ".prefill"] = prefill.numpy()
        if has_trailing:
            ref[X + ".trailing"] = trailing.numpy()
        ref[X + ".codes"] = codes.numpy().astype(np.int32)
        entry = dict(letter=X, mode="icl" if case["icl"] else "xvector_only", text=case["text"],
                     language=case["language"], non_streaming=case["non_streaming"],
                     ref_text=case.get("ref_text"), L=int(prefill.shape[0]),
                     T=int(trailing.shape[0]) if has_trailing else 0, F=int(codes.shape[0]),
                     stopped_on_eos=bool(int(seq[-1]) == mp.EOS), c0_sequence=[int(v) for v in seq])
        mt, mpred = margins(rec, seq)
        entry.update(min_talker_greedy_margin=mt, min_predictor_greedy_margin=mpred)
        if X == PCM_CASE:
            total = REF_FRAMES + int(codes.shape[0])
            cut = full.shape[0] - wav.shape[0]
            assert full.shape[0] == total * 1920 and np.array_equal(full[cut:], wav)
            ref[X + ".pcm"] = wav
            entry.update(pcm_samples=int(wav.shape[0]), official_cut=int(cut),
                         official_cut_minus_ref_frames_x1920=int(cut - REF_FRAMES * 1920))
        cases.append(entry)
        print("case %s: L=%d T=%d F=%d eos=%s margins t=%.4f p=%.4f" % (
            X, entry["L"], entry["T"], entry["F"], entry["stopped_on_eos"], mt, mpred), flush=True)
    for k, v in ref.items():
        assert v.dtype in (np.float32, np.int32), (k, v.dtype)
        ref[k] = np.ascontiguousarray(v)
    save_file(ref, os.path.join(mdir, "ref.safetensors"),
              metadata={"generator": "tools/parity/make_clone_parity.py"})

    sizes = {}
    for root, _, files in os.walk(args.out):
        for f in files:
            p = os.path.join(root, f)
            os.chmod(p, 0o644)
            rel = os.path.relpath(p, args.out)
            if rel not in ("manifest.json", "README.md"):
                sizes[rel] = os.path.getsize(p)
    manifest = dict(
        generator="tools/parity/make_clone_parity.py",
        versions={"qwen-tts": md.version("qwen-tts"), "transformers": md.version("transformers"),
                  "torch": torch.__version__, "python": sys.version.split()[0]},
        model=dict(dir="base32", seed=seed, seed_search={str(k): v for k, v in search.items()},
                   tts_model_type=MODEL["kind"], tts_model_size=MODEL["size"],
                   text_hidden_size=MODEL["text_hidden"], talker=MODEL["talker"],
                   mrope_section=MODEL["mrope"], predictor=MODEL["predictor"],
                   speaker_encoder=MODEL["speaker_encoder"],
                   init="as tools/parity/make_parity.py (reinit: weights N(0, %g), heads N(0, %g), biases "
                        "N(0, %g), norms 1 + N(0, %g)), cast to bfloat16, official save_pretrained"
                        % (mp.WEIGHT_STD, mp.HEAD_STD, mp.BIAS_STD, mp.NORM_STD)),
        speech_tokenizer="tests/data/codec_parity/small/speech_tokenizer (official Qwen3TTSTokenizerV2Model, "
                         "float32, eager)",
        precision="the bf16 checkpoint loaded and cast to float32, eager attention, CPU",
        wrapper="Qwen3TTSModel.generate_voice_clone(text, language, voice_clone_prompt=[VoiceClonePromptItem], "
                "non_streaming_mode, do_sample=False, subtalker_dosample=False, max_new_tokens=%d)"
                % MAX_NEW_TOKENS,
        xvector="torch.randn(%d, generator=torch.Generator().manual_seed(%d))"
                % (MODEL["talker"]["hidden_size"], XVECTOR_SEED),
        ref_codes="numpy.random.RandomState(%d).randint(0, 2048, (%d, 16))" % (REF_CODES_SEED, REF_FRAMES),
        ref_frames=REF_FRAMES, max_new_tokens=MAX_NEW_TOKENS, min_frames=MIN_FRAMES,
        keys=["xvector [32]", "ref_codes [ref_frames, 16]", "X.prefill [L, 32]", "X.trailing [T, 32] (streaming "
              "layouts with text left over)", "X.codes [F, 16] (new frames)", "%s.pcm [F * 1920 - official_cut_minus_ref_frames_x1920] (the "
              "wrapper's returned audio)" % PCM_CASE],
        cases=cases,
        file_sizes_bytes=dict(sorted(sizes.items())),
    )
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print("total bytes (without manifest/README):", sum(sizes.values()))


if __name__ == "__main__":
    main()
