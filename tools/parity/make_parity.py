#!/usr/bin/env python3
# Purpose: build SMALL randomly initialised Qwen3-TTS models with the OFFICIAL qwen-tts 0.1.1
# code (transformers 4.57.3), save them through the official save path (BF16 safetensors +
# config.json, plus the published-format generation_config.json), and dump golden per-stage
# tensors (prefill embeddings, trailing overlay, greedy codes, talker hidden/logits, code
# predictor logits, decode-step inputs) from the official wrapper/model code in float32 (eager
# attention) and, teacher-forced, in bfloat16. Output: tests/data/parity/<model>/{config.json,
# generation_config.json,model.safetensors,ref.safetensors} and tests/data/parity/manifest.json.
# Nothing here reimplements model math: every reference tensor is captured with forward hooks
# on the official modules while the official Qwen3TTSModel.generate_* wrapper methods run.
# Run through tools/parity/make_parity.sh (which creates the pinned venv).

import argparse
import importlib.metadata as md
import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.numpy import save_file
from transformers import AutoConfig, AutoModel, AutoProcessor, PreTrainedModel

from qwen_tts import Qwen3TTSModel
from qwen_tts.core.models import (
    Qwen3TTSConfig,
    Qwen3TTSForConditionalGeneration,
    Qwen3TTSProcessor,
)
from qwen_tts.core.models.modeling_qwen3_tts import mel_spectrogram
from qwen_tts.inference.qwen3_tts_model import VoiceClonePromptItem

EOS = 2150
MAX_NEW_TOKENS = 24
S_ROWS = 12          # rows of hidden/logits/pred_logits recorded (S = min(F, 12))
BF16_PRED_ROWS = 4   # rows of bf16 predictor logits recorded

# ---------------------------------------------------------------------------------------------
# Id maps as published in the released checkpoints' config.json (talker_config codec_language_id,
# spk_id, spk_is_dialect).
LANG_BASE = {
    "chinese": 2055, "english": 2050, "german": 2053, "italian": 2070, "portuguese": 2071,
    "spanish": 2054, "japanese": 2058, "korean": 2064, "french": 2061, "russian": 2069,
}
LANG_CV = dict(LANG_BASE, beijing_dialect=2074, sichuan_dialect=2062)
SPK_CV = {
    "serena": 3066, "vivian": 3065, "uncle_fu": 3010, "ryan": 3061, "aiden": 2861,
    "ono_anna": 2873, "sohee": 2864, "eric": 2875, "dylan": 2878,
}
DIALECT_CV = {
    "serena": False, "vivian": False, "uncle_fu": False, "ryan": False, "aiden": False,
    "ono_anna": False, "sohee": False, "eric": "sichuan_dialect", "dylan": "beijing_dialect",
}
GENERATION_CONFIG = {  # the released generation_config.json, key order as published
    "do_sample": True,
    "temperature": 0.9,
    "top_k": 50,
    "top_p": 1.0,
    "repetition_penalty": 1.05,
    "subtalker_dosample": True,
    "subtalker_temperature": 0.9,
    "subtalker_top_k": 50,
    "subtalker_top_p": 1.0,
    "max_new_tokens": 8192,
}
PREPROCESSOR_CONFIG = {  # the released preprocessor_config.json (only needed to drive the official processor)
    "padding_side": "left",
    "padding_value": 0.0,
    "processor_class": "Qwen3TTSProcessor",
    "return_attention_mask": True,
}

# ---------------------------------------------------------------------------------------------
# Small model definitions. Widths are tiny, vocabularies and ids are the real ones.


def layer_cfg(hidden, inter, layers, heads, kv, head_dim):
    return dict(hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim)


def predictor_cfg(p):
    d = dict(
        model_type="qwen3_tts_talker_code_predictor",
        vocab_size=2048, num_code_groups=16, hidden_act="silu", rms_norm_eps=1e-6,
        rope_theta=1000000, rope_scaling=None, max_position_embeddings=65536,
        attention_bias=False, use_sliding_window=False, sliding_window=None,
        max_window_layers=p["num_hidden_layers"],
        layer_types=["full_attention"] * p["num_hidden_layers"],
        attention_dropout=0.0, tie_word_embeddings=False, use_cache=True,
        do_sample=False, top_k=50, temperature=1.0, repetition_penalty=1.0,
        initializer_range=0.02,
    )
    d.update(p)
    return d


def talker_cfg(t, p, mrope, text_hidden, kind):
    d = dict(
        model_type="qwen3_tts_talker",
        hidden_act="silu", rms_norm_eps=1e-6, rope_theta=1000000,
        rope_scaling={"rope_type": "default", "mrope_section": mrope, "interleaved": True},
        max_position_embeddings=32768, attention_bias=False, use_sliding_window=False,
        sliding_window=None, attention_dropout=0.0, tie_word_embeddings=False, use_cache=True,
        vocab_size=3072, text_vocab_size=151936, text_hidden_size=text_hidden,
        num_code_groups=16, position_id_per_seconds=13, pad_token_id=2148,
        codec_pad_id=2148, codec_bos_id=2149, codec_eos_token_id=EOS,
        codec_think_id=2154, codec_nothink_id=2155, codec_think_bos_id=2156,
        codec_think_eos_id=2157,
        codec_language_id=dict(LANG_CV if kind == "custom_voice" else LANG_BASE),
        spk_id=dict(SPK_CV) if kind == "custom_voice" else {},
        spk_is_dialect=dict(DIALECT_CV) if kind == "custom_voice" else {},
        initializer_range=0.02,
        code_predictor_config=predictor_cfg(p),
    )
    d.update(t)
    return d


MODELS = {
    # talker hidden == predictor hidden (no small_to_mtp_projection), like 0.6B
    "cv06": dict(
        seed=1001, kind="custom_voice", size="0b6", text_hidden=16,
        talker=layer_cfg(16, 40, 3, 4, 2, 8), mrope=[2, 1, 1],
        predictor=layer_cfg(16, 32, 2, 4, 2, 8),
    ),
    # talker hidden != predictor hidden -> small_to_mtp_projection, like 1.7B
    "vd17": dict(
        seed=1002, kind="voice_design", size="1b7", text_hidden=8,
        talker=layer_cfg(24, 48, 3, 4, 2, 16), mrope=[4, 2, 2],
        predictor=layer_cfg(16, 32, 2, 4, 2, 12),
    ),
    # Base with a (tiny) speaker encoder; enc_dim = talker hidden
    "base06": dict(
        seed=1003, kind="base", size="0b6", text_hidden=8,
        talker=layer_cfg(16, 40, 3, 4, 2, 12), mrope=[2, 2, 2],
        predictor=layer_cfg(16, 32, 2, 4, 2, 12),
        speaker_encoder=dict(enc_dim=16, sample_rate=24000, mel_dim=128,
                             enc_channels=[16, 16, 16, 16, 48], enc_kernel_sizes=[5, 3, 3, 3, 1],
                             enc_dilations=[1, 2, 3, 4, 1], enc_attention_channels=8,
                             enc_res2net_scale=8, enc_se_channels=8),
    ),
}

INSTRUCT_VD = "A calm, low male voice."
CASES = [
    dict(letter="a", model="cv06", speaker="Vivian", language="English", non_streaming=True,
         text="Hello world, this is a small parity test."),
    dict(letter="b", model="cv06", speaker="Eric", language="Chinese", non_streaming=True,
         text="今天天气很好，我们去公园散步吧。"),
    dict(letter="c", model="cv06", speaker="Ryan", language="Auto", non_streaming=True,
         text="The meeting starts at 10:45 on May 3rd, 2024."),
    dict(letter="d", model="cv06", speaker="Serena", language="English", non_streaming=False,
         text="Streaming text layout, short and simple."),
    dict(letter="e", model="vd17", instruct=INSTRUCT_VD, language="English", non_streaming=True,
         text="Good evening, and welcome to the show."),
    dict(letter="f", model="vd17", instruct=INSTRUCT_VD, language="English", non_streaming=False,
         text="Please keep your seat belt fastened."),
    dict(letter="g", model="base06", xvector_seed=2001, language="English", non_streaming=False,
         text="I can speak in a borrowed voice."),
    dict(letter="h", model="base06", xvector_seed=2001, language="English", non_streaming=True,
         text="Call me at 555 0199 after 6 pm."),
]
WEIGHT_STD = 0.2      # linear / embedding / conv weights
HEAD_STD = 0.5        # codec_head and predictor lm_heads (peaked logits)
BIAS_STD = 0.05
NORM_STD = 0.1        # norm weights ~ N(1, 0.1)
SPK_WAV_SEED = 3001
SEED_TRIES = 1     # weight seeds tried per model: seed, seed+100, ...


def build_config(m):
    talker = talker_cfg(m["talker"], m["predictor"], m["mrope"], m["text_hidden"], m["kind"])
    kw = dict(
        architectures=["Qwen3TTSForConditionalGeneration"],
        talker_config=talker, tokenizer_type="qwen3_tts_tokenizer_12hz",
        tts_model_size=m["size"], tts_model_type=m["kind"],
        im_start_token_id=151644, im_end_token_id=151645, assistant_token_id=77091,
        tts_pad_token_id=151671, tts_bos_token_id=151672, tts_eos_token_id=151673,
    )
    if "speaker_encoder" in m:
        kw["speaker_encoder_config"] = dict(m["speaker_encoder"])
    return Qwen3TTSConfig(**kw)


@torch.no_grad()
def reinit(model, seed):
    """Deterministic re-initialisation with a larger std than the official init."""
    g = torch.Generator().manual_seed(seed)
    for name, p in sorted(model.named_parameters()):
        if name.endswith("bias"):
            v = torch.randn(p.shape, generator=g) * BIAS_STD
        elif "norm" in name and p.dim() == 1:
            v = 1.0 + torch.randn(p.shape, generator=g) * NORM_STD
        elif "codec_head" in name or "lm_head" in name:
            v = torch.randn(p.shape, generator=g) * HEAD_STD
        else:
            v = torch.randn(p.shape, generator=g) * WEIGHT_STD
        p.copy_(v.to(p.dtype))


def fix_saved_config(path, kind):
    """save_pretrained in qwen-tts 0.1.1 writes speaker_encoder_config with "model_type": ""
    (Qwen3TTSSpeakerEncoderConfig never calls PretrainedConfig.__init__ yet is serialised as
    one), which its own Qwen3TTSConfig cannot load back (unexpected keyword 'model_type').
    Published configs have no speaker_encoder_config for CustomVoice/VoiceDesign and a plain
    dict for Base, so: drop that key for non-Base models, drop only "model_type" for Base."""
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    if kind == "base":
        d["speaker_encoder_config"].pop("model_type", None)
    else:
        d.pop("speaker_encoder_config", None)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(d, f, indent=2, sort_keys=True)
        f.write("\n")


def load_official(model_dir, dtype):
    """HF PreTrainedModel.from_pretrained for the official class. The class' own override also
    loads speech_tokenizer/ (not built here); we bypass only that part and then attach the
    published generation_config.json exactly as the override does."""
    model = super(Qwen3TTSForConditionalGeneration, Qwen3TTSForConditionalGeneration).from_pretrained(
        model_dir, dtype=dtype, attn_implementation="eager", local_files_only=True)
    with open(os.path.join(model_dir, "generation_config.json"), encoding="utf-8") as f:
        model.load_generate_config(json.load(f))
    model.eval()
    return model


class CodecStub:
    """Stands in for the speech tokenizer (codec) the wrapper decodes with; keeps the codes."""

    def __init__(self):
        self.codes = None

    def decode(self, items):
        self.codes = [it["audio_codes"].detach().cpu() for it in items]
        return [np.zeros(1, dtype=np.float32) for _ in items], 24000


class Recorder:
    """Forward hooks on the official modules. force=None: record only. force=dict: record raw
    outputs and return logits that make greedy pick the teacher codes (bf16 teacher forcing)."""

    def __init__(self, model, force=None):
        self.model = model
        self.force = force
        self.talker_in = []      # inputs_embeds given to talker.model, per call
        self.talker_h = []       # last_hidden_state[:, -1] per call (post final norm)
        self.talker_logits = []  # codec_head output at last position per call
        self.pred_logits = []    # per frame: list of 15 [2048]
        self.gen_kwargs = None   # kwargs of talker.generate (trailing overlay, pad embed, ...)
        self.gen_seq = None
        self.model_gen_args = None
        self.handles = []
        t = model.talker
        self.handles.append(t.model.register_forward_pre_hook(self._pre_talker, with_kwargs=True))
        self.handles.append(t.model.register_forward_hook(self._post_talker))
        self.handles.append(t.codec_head.register_forward_hook(self._codec_head))
        for g, head in enumerate(t.code_predictor.lm_head):
            self.handles.append(head.register_forward_hook(self._make_pred(g)))
        self._orig_tgen = t.generate
        self._orig_mgen = model.generate

        def tgen(*a, **kw):
            self.gen_kwargs = {k: v for k, v in kw.items()}
            res = self._orig_tgen(*a, **kw)
            self.gen_seq = res.sequences.detach().cpu()
            return res

        def mgen(*a, **kw):
            self.model_gen_args = kw
            return self._orig_mgen(*a, **kw)

        t.generate = tgen
        model.generate = mgen

    def close(self):
        for h in self.handles:
            h.remove()
        del self.model.talker.generate
        del self.model.generate

    def _pre_talker(self, mod, args, kwargs):
        self.talker_in.append(kwargs["inputs_embeds"][0].detach().float().cpu().clone())

    def _post_talker(self, mod, args, out):
        self.talker_h.append(out.last_hidden_state[0, -1].detach().float().cpu().clone())

    def _codec_head(self, mod, args, out):
        k = len(self.talker_logits)
        self.talker_logits.append(out[0, -1].detach().float().cpu().clone())
        if self.force is not None:
            forced = torch.full_like(out, -1e4)
            forced[0, -1, int(self.force["c0"][k])] = 1e4
            return forced
        return None

    def _make_pred(self, g):
        def hook(mod, args, out):
            if g == 0:
                self.pred_logits.append([])
            self.pred_logits[-1].append(out[0, -1].detach().float().cpu().clone())
            if self.force is not None:
                frame = len(self.pred_logits) - 1
                forced = torch.full_like(out, -1e4)
                forced[0, -1, int(self.force["codes"][frame, g + 1])] = 1e4
                return forced
            return None
        return hook


def run_case(wrapper, case, gen_kwargs, xvec=None):
    """Drive the official wrapper method for this case kind."""
    if case["model"] == "cv06":
        return wrapper.generate_custom_voice(
            text=case["text"], speaker=case["speaker"], language=case["language"],
            non_streaming_mode=case["non_streaming"], **gen_kwargs)
    if case["model"] == "vd17":
        return wrapper.generate_voice_design(
            text=case["text"], instruct=case["instruct"], language=case["language"],
            non_streaming_mode=case["non_streaming"], **gen_kwargs)
    item = VoiceClonePromptItem(ref_code=None, ref_spk_embedding=xvec, x_vector_only_mode=True,
                                icl_mode=False, ref_text=None)
    return wrapper.generate_voice_clone(
        text=case["text"], language=case["language"], voice_clone_prompt=[item],
        non_streaming_mode=case["non_streaming"], **gen_kwargs)


def make_processor(model_dir, tok_dir, work):
    """Temp dir holding config + tokenizer files, loaded the way Qwen3TTSModel.from_pretrained does."""
    pdir = os.path.join(work, "proc_" + os.path.basename(model_dir))
    os.makedirs(pdir, exist_ok=True)
    shutil.copy(os.path.join(model_dir, "config.json"), pdir)
    for f in ("vocab.json", "merges.txt", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok_dir, f), pdir)
    with open(os.path.join(pdir, "preprocessor_config.json"), "w") as f:
        json.dump(PREPROCESSOR_CONFIG, f, indent=2)
    return AutoProcessor.from_pretrained(pdir, fix_mistral_regex=True)


def processed(lg, seq, k):
    """DIAGNOSTIC ONLY (not a reference): the greedy talker scores at step k after the HF
    processors the official kwargs install (repetition penalty 1.05 over distinct earlier c0,
    EOS masked for the first 2 steps, 2048..3071 except EOS masked)."""
    v = lg.double().clone()
    for tok in set(int(x) for x in seq[:k]):
        v[tok] = v[tok] / 1.05 if v[tok] > 0 else v[tok] * 1.05
    mask = torch.full_like(v, float("-inf"))
    mask[:2048] = 0
    if k >= 2:
        mask[EOS] = 0
    return v + mask


def top2_margin(v):
    t = torch.topk(v.double(), 2).values
    return float(t[0] - t[1])


def make_model_dir(m, seed, mdir):
    """Build the official model from the small config, re-init with `seed`, cast to BF16 and
    save with save_pretrained; then write the published generation_config.json."""
    os.makedirs(mdir, exist_ok=True)
    model = Qwen3TTSForConditionalGeneration(build_config(m))
    reinit(model, seed)
    model = model.to(torch.bfloat16)
    for f in ("model.safetensors", "config.json", "generation_config.json"):
        if os.path.exists(os.path.join(mdir, f)):
            os.remove(os.path.join(mdir, f))
    model.save_pretrained(mdir, safe_serialization=True)
    fix_saved_config(os.path.join(mdir, "config.json"), m["kind"])
    with open(os.path.join(mdir, "generation_config.json"), "w", encoding="utf-8") as f:
        json.dump(GENERATION_CONFIG, f, indent=2)
        f.write("\n")


def case_xvector(case, m):
    if m["kind"] != "base":
        return None
    H = m["talker"]["hidden_size"]
    return torch.randn(H, generator=torch.Generator().manual_seed(case["xvector_seed"]))


def f32_greedy(m32, proc, case, gen_kwargs, m):
    """One free-running greedy run through the official wrapper with recording hooks."""
    w32 = Qwen3TTSModel(model=m32, processor=proc, generate_defaults=m32.generate_config)
    m32.speech_tokenizer = CodecStub()
    rec = Recorder(m32)
    run_case(w32, case, gen_kwargs, case_xvector(case, m))
    rec.close()
    codes = m32.speech_tokenizer.codes[0].to(torch.int64)
    seq = rec.gen_seq[0]
    F = codes.shape[0]
    assert len(rec.pred_logits) == F, (len(rec.pred_logits), F)
    assert len(rec.talker_logits) == len(seq)
    assert torch.equal(seq[:F], codes[:, 0])
    for k, lg in enumerate(rec.talker_logits):
        assert int(torch.argmax(processed(lg, seq, k))) == int(seq[k]), "diagnostic mismatch"
    for f, fr in enumerate(rec.pred_logits):
        for g, lg in enumerate(fr):
            assert int(torch.argmax(lg)) == int(codes[f, g + 1]), "predictor greedy mismatch"
    return rec, codes, seq, bool(int(seq[-1]) == EOS)


def min_margins(rec, seq):
    mt = min(top2_margin(processed(lg, seq, k)) for k, lg in enumerate(rec.talker_logits))
    mp = min(top2_margin(lg) for fr in rec.pred_logits for lg in fr)
    return min(mt, mp)


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
    fixture_tok = os.path.join(os.path.dirname(args.repo), "shared", "fixtures", "qwen3-tokenizer",
                               "tokenizer.json")
    if not os.path.exists(fixture_tok):
        fixture_tok = "/work/shared/fixtures/qwen3-tokenizer/tokenizer.json"
    from tokenizers import Tokenizer
    hf_tok = Tokenizer.from_file(fixture_tok)

    os.makedirs(args.out, exist_ok=True)
    manifest = dict(
        generator="tools/parity/make_parity.py",
        versions={"qwen-tts": md.version("qwen-tts"), "transformers": md.version("transformers"),
                  "torch": torch.__version__, "safetensors": md.version("safetensors"),
                  "tokenizers": md.version("tokenizers"), "python": sys.version.split()[0]},
        init=dict(weight_std=WEIGHT_STD, head_std=HEAD_STD, bias_std=BIAS_STD,
                  norm_weight="1 + N(0, %g)" % NORM_STD,
                  note="torch.Generator(seed) draws over sorted(named_parameters()) in float32, "
                       "then the model is cast to bfloat16 and saved"),
        tokenizer_files="assets/qwen3-tokenizer (vocab.json, merges.txt, tokenizer_config.json)",
        tokenizer_compare_with=os.path.relpath(fixture_tok, os.path.dirname(args.repo))
        if fixture_tok.startswith(os.path.dirname(args.repo)) else fixture_tok,
        max_new_tokens=MAX_NEW_TOKENS, S_rows=S_ROWS, bf16_pred_rows=BF16_PRED_ROWS,
        models={}, cases=[],
    )
    gen_kwargs = dict(do_sample=False, subtalker_dosample=False, max_new_tokens=MAX_NEW_TOKENS)

    proc = None
    for mname, m in MODELS.items():
        if proc is None:  # one processor (text tokenizer) serves all models
            make_model_dir(m, m["seed"], os.path.join(args.work, "proc_model"))
            proc = make_processor(os.path.join(args.work, "proc_model"), tok_dir, args.work)
        mdir = os.path.join(args.out, mname)
        # 1. pick the weight seed (deterministic search for the widest greedy margins), then
        #    build, re-init and save in BF16 with the official save path
        search = {}
        for seed in [m["seed"] + 100 * i for i in range(SEED_TRIES)]:
            sdir = os.path.join(args.work, "search", "%s_%d" % (mname, seed))
            make_model_dir(m, seed, sdir)
            ms = load_official(sdir, torch.bfloat16).float()
            worst = float("inf")
            for case in [c for c in CASES if c["model"] == mname]:
                rec, _, seq, _ = f32_greedy(ms, proc, case, gen_kwargs, m)
                worst = min(worst, min_margins(rec, seq))
            search[seed] = worst
            print("model %s seed %d: min greedy margin %.5f" % (mname, seed, worst), flush=True)
            del ms
        seed = max(search, key=lambda k: search[k])
        make_model_dir(m, seed, mdir)
        manifest["models"][mname] = dict(
            seed=seed, seed_search={str(k): v for k, v in search.items()},
            tts_model_type=m["kind"], tts_model_size=m["size"],
            text_hidden_size=m["text_hidden"], talker=m["talker"], mrope_section=m["mrope"],
            predictor=m["predictor"], speaker_encoder=m.get("speaker_encoder"),
            small_to_mtp_projection=m["talker"]["hidden_size"] != m["predictor"]["hidden_size"],
        )

        # 2. load back (bf16 file) -> f32 model and bf16 model, both eager
        m32 = load_official(mdir, torch.bfloat16).float()
        m16 = load_official(mdir, torch.bfloat16)
        assert m32.talker.config._attn_implementation == "eager"
        assert m32.talker.code_predictor.config._attn_implementation == "eager"
        H = m["talker"]["hidden_size"]
        ref = {}

        if m["kind"] == "base":
            # Speaker-encoder reference through the official extract_speaker_embedding.
            rng = np.random.default_rng(SPK_WAV_SEED)
            n = 12000
            tt = np.arange(n) / 24000.0
            wav = (0.3 * np.sin(2 * np.pi * 220 * tt) + 0.2 * np.sin(2 * np.pi * 523 * tt)
                   + 0.05 * rng.standard_normal(n)).astype(np.float32)
            mel = mel_spectrogram(torch.from_numpy(wav).unsqueeze(0), n_fft=1024, num_mels=128,
                                  sampling_rate=24000, hop_size=256, win_size=1024, fmin=0,
                                  fmax=12000).transpose(1, 2)[0]
            xv = m32.extract_speaker_embedding(wav, 24000)
            ref["spk.wav"] = wav
            ref["spk.mel"] = mel.float().numpy()
            ref["spk.xvector"] = xv.float().cpu().numpy()
            manifest["models"][mname]["speaker_encoder_ref"] = dict(
                wav="0.3 sin(2pi 220 t) + 0.2 sin(2pi 523 t) + 0.05 N(0,1), 12000 samples @24k, "
                    "numpy default_rng(%d)" % SPK_WAV_SEED,
                keys=["spk.wav [N]", "spk.mel [frames,128]", "spk.xvector [enc_dim]"],
                how="Qwen3TTSForConditionalGeneration.extract_speaker_embedding (f32 model); "
                    "spk.mel from the official mel_spectrogram with the same arguments")

        for case in [c for c in CASES if c["model"] == mname]:
            X = case["letter"]
            xvec = case_xvector(case, m)
            # ---- f32 free-running greedy run
            rec, codes, seq, stopped = f32_greedy(m32, proc, case, gen_kwargs, m)
            F = codes.shape[0]
            S = min(F, S_ROWS)
            assert len(rec.pred_logits) == F, (len(rec.pred_logits), F)
            assert len(rec.talker_logits) == len(seq)
            assert torch.equal(seq[:F], codes[:, 0])
            input_ids = rec.model_gen_args["input_ids"][0][0]
            instruct = rec.model_gen_args.get("instruct_ids")
            instruct_ids = instruct[0][0] if instruct and instruct[0] is not None else None
            prefill = rec.talker_in[0]
            trailing = rec.gen_kwargs["trailing_text_hidden"][0].float()
            pad = rec.gen_kwargs["tts_pad_embed"][0, 0].float()
            ref[X + ".input_ids"] = input_ids.numpy().astype(np.int32)
            if instruct_ids is not None:
                ref[X + ".instruct_ids"] = instruct_ids.numpy().astype(np.int32)
            ref[X + ".prefill"] = prefill.numpy()
            has_trailing = not case["non_streaming"]
            if has_trailing:
                ref[X + ".trailing"] = trailing.numpy()
            ref[X + ".tts_pad"] = pad.numpy()
            if xvec is not None:
                ref[X + ".xvector"] = xvec.numpy().astype(np.float32)
            ref[X + ".codes"] = codes.numpy().astype(np.int32)
            ref[X + ".f32.hidden"] = torch.stack(rec.talker_h[:S]).numpy()
            ref[X + ".f32.logits"] = torch.stack(rec.talker_logits[:S]).numpy()
            ref[X + ".f32.pred_logits"] = torch.stack(
                [torch.stack(fr) for fr in rec.pred_logits[:S]]).numpy()
            ref[X + ".f32.step_input"] = torch.stack(
                [v[0] for v in rec.talker_in[1:S]]).numpy()

            # greedy margins (diagnostic only)
            margins_t = [top2_margin(processed(lg, seq, k)) for k, lg in enumerate(rec.talker_logits)]
            margins_p = [top2_margin(lg) for fr in rec.pred_logits for lg in fr]

            # ---- bf16 run, teacher-forced with the same codes
            w16 = Qwen3TTSModel(model=m16, processor=proc, generate_defaults=m16.generate_config)
            m16.speech_tokenizer = CodecStub()
            rec16 = Recorder(m16, force=dict(c0=seq, codes=codes))
            run_case(w16, case, gen_kwargs, xvec)
            rec16.close()
            codes16 = m16.speech_tokenizer.codes[0].to(torch.int64)
            assert torch.equal(codes16, codes), "bf16 teacher forcing did not reproduce the codes"
            ref[X + ".bf16.prefill"] = rec16.talker_in[0].numpy()
            ref[X + ".bf16.hidden"] = torch.stack(rec16.talker_h[:S]).numpy()
            ref[X + ".bf16.logits"] = torch.stack(rec16.talker_logits[:S]).numpy()
            ref[X + ".bf16.pred_logits"] = torch.stack(
                [torch.stack(fr) for fr in rec16.pred_logits[:BF16_PRED_ROWS]]).numpy()
            bf16_free_argmax = [int(torch.argmax(processed(v, seq, k)))
                                for k, v in enumerate(rec16.talker_logits[:S])]

            # tokenizer agreement with HF tokenizers on the fixture tokenizer.json
            wt = Qwen3TTSModel(model=m32, processor=proc, generate_defaults=m32.generate_config)
            target = wt._build_assistant_text(case["text"])
            tok_ok = hf_tok.encode(target, add_special_tokens=False).ids == input_ids.tolist()
            ins_ok = None
            if instruct_ids is not None:
                ins_ok = (hf_tok.encode(wt._build_instruct_text(case["instruct"]),
                                        add_special_tokens=False).ids == instruct_ids.tolist())

            entry = dict(
                letter=X, model=mname, kind=m["kind"], text=case["text"],
                target_string=target, speaker=case.get("speaker"), language=case["language"],
                instruct=case.get("instruct"), non_streaming=case["non_streaming"],
                L=int(prefill.shape[0]), T=int(trailing.shape[0]) if has_trailing else 0,
                S=S, F=F, stopped_on_eos=stopped, n_talker_c0=int(len(seq)),
                c0_sequence=[int(v) for v in seq],
                n_input_ids=int(input_ids.numel()),
                n_instruct_ids=int(instruct_ids.numel()) if instruct_ids is not None else 0,
                wrapper_method={"cv06": "Qwen3TTSModel.generate_custom_voice",
                                "vd17": "Qwen3TTSModel.generate_voice_design",
                                "base06": "Qwen3TTSModel.generate_voice_clone"}[mname],
                wrapper_kwargs_passed=dict(gen_kwargs, non_streaming_mode=case["non_streaming"]),
                talker_generate_kwargs={k: v for k, v in rec.gen_kwargs.items()
                                        if k not in ("inputs_embeds", "attention_mask",
                                                     "trailing_text_hidden", "tts_pad_embed",
                                                     "suppress_tokens")},
                suppress_tokens="2048..3071 except 2150 (%d ids)"
                                % len(rec.gen_kwargs["suppress_tokens"]),
                xvector_seed=case.get("xvector_seed"),
                weight_seed=manifest["models"][mname]["seed"],
                tokenizer_matches_hf_tokenizers=tok_ok,
                instruct_tokenizer_matches_hf_tokenizers=ins_ok,
                min_talker_greedy_margin=min(margins_t),
                min_predictor_greedy_margin=min(margins_p),
                bf16_teacher_forced_greedy_c0_agrees_with_f32=[a == int(b) for a, b in zip(bf16_free_argmax, seq)],
            )
            manifest["cases"].append(entry)
            print("case %s: L=%d F=%d eos=%s tok=%s margins t=%.4f p=%.4f" % (
                X, entry["L"], F, stopped, tok_ok, entry["min_talker_greedy_margin"],
                entry["min_predictor_greedy_margin"]), flush=True)

        for k, v in ref.items():
            assert v.dtype in (np.float32, np.int32), (k, v.dtype)
            ref[k] = np.ascontiguousarray(v)
        save_file(ref, os.path.join(mdir, "ref.safetensors"),
                  metadata={"generator": "tools/parity/make_parity.py", "model": mname})
        del m32, m16

    sizes = {}
    for root, _, files in os.walk(args.out):
        for f in files:
            p = os.path.join(root, f)
            os.chmod(p, 0o644)
            if os.path.relpath(p, args.out) == "manifest.json":
                continue
            sizes[os.path.relpath(p, args.out)] = os.path.getsize(p)
    manifest["file_sizes_bytes_excluding_manifest"] = dict(sorted(sizes.items()))
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print("total bytes (without manifest):", sum(sizes.values()))


if __name__ == "__main__":
    main()
