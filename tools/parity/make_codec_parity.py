#!/usr/bin/env python3
# Purpose: golden references for the codec decoder ("Code2Wav") from the OFFICIAL qwen-tts 0.1.1
# Qwen3-TTS-Tokenizer-12Hz code (transformers 4.57.3, torch, f32, eager attention).
#  1. "small": an official Qwen3TTSTokenizerV2Model (encoder + decoder) built from a reduced
#     config, official init (post_init) followed by a documented deterministic scale-up, saved with
#     the official save_pretrained and reloaded with the official from_pretrained; references are
#     the official decoder forward (one-shot) and the official chunked_decode for fixed codes.
#  2. "tiny" / "full06": the random checkpoints our `codectalk make-model` writes (presets tiny
#     and 0.6b-customvoice, seed 5) loaded BY NAME into the official Qwen3TTSTokenizerV2Decoder
#     (strict: every tensor consumed, nothing missing, shapes as the official modules expect);
#     only the codes and the official outputs are committed, the C test regenerates the weights.
# Output: tests/data/codec_parity/{small/speech_tokenizer/{config.json,model.safetensors},
# small/ref.safetensors, tiny/ref.safetensors, full06/ref.safetensors, manifest.json}.
# Nothing here reimplements decoder math. Run through tools/parity/make_codec_parity.sh.

import argparse
import hashlib
import importlib.metadata as md
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import save_file

import qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 as official
import transformers.models.mimi.modeling_mimi as mimi
from qwen_tts.core.tokenizer_12hz.configuration_qwen3_tts_tokenizer_v2 import (
    Qwen3TTSTokenizerV2Config,
)
from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import (
    Qwen3TTSTokenizerV2Decoder,
    Qwen3TTSTokenizerV2Model,
)

# ---------------------------------------------------------------------------------------------
# Eager attention check: count calls of the official eager attention function.
EAGER_CALLS = [0]
_orig_eager = official.eager_attention_forward


def _counting_eager(*a, **k):
    EAGER_CALLS[0] += 1
    return _orig_eager(*a, **k)


official.eager_attention_forward = _counting_eager

# ---------------------------------------------------------------------------------------------
# Small official model.
SMALL_SEED = 4242          # torch.manual_seed before construction (official init draws)
SMALL_SCALE_SEED = 4343    # generator for the scale-up of constant-initialised parameters
SMALL_CODES_SEED = 7001
SMALL_FRAMES = 120
SMALL_CHUNKS = [(300, 25), (32, 25), (20, 72)]   # (chunk_size, left_context_size)

SMALL_DECODER = dict(
    codebook_size=2048, codebook_dim=32, vector_quantization_hidden_dimension=32,
    num_quantizers=16, num_semantic_quantizers=1, semantic_codebook_size=4096,
    latent_dim=48, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
    num_key_value_heads=2, head_dim=12,           # explicit: hidden/heads would be 8; GQA 4/2
    intermediate_size=64, hidden_act="silu", rms_norm_eps=1e-5, rope_theta=10000,
    max_position_embeddings=8000, sliding_window=72, layer_scale_initial_scale=0.01,
    upsample_rates=[8, 5, 4, 3], upsampling_ratios=[2, 2], decoder_dim=64,
    attention_bias=False, attention_dropout=0.0,
)
SMALL_ENCODER = dict(   # a reduced MimiConfig (the speech-tokenizer encoder, enc_ref.safetensors)
    audio_channels=1, codebook_dim=16, codebook_size=2048, compress=2, dilation_growth_rate=2,
    frame_rate=12.5, head_dim=24, hidden_act="gelu", hidden_size=64, intermediate_size=128,
    kernel_size=7, last_kernel_size=3, layer_scale_initial_scale=0.01,
    max_position_embeddings=8000, norm_eps=1e-5, num_attention_heads=4, num_filters=8,
    num_hidden_layers=2, num_key_value_heads=2, num_quantizers=18, num_residual_layers=1,
    num_semantic_quantizers=1, pad_mode="constant", residual_kernel_size=3, rope_theta=10000.0,
    sampling_rate=24000, sliding_window=250, upsample_groups=64, upsampling_ratios=[8, 6, 5, 4],
    use_causal_conv=True, use_conv_shortcut=False, vector_quantization_hidden_dimension=16,
)
# The encoder config the model was first built with: constructing with it under SMALL_SEED keeps
# the decoder's official init draws (and so small/ref.safetensors) as they were; the encoder is
# then replaced by one built from SMALL_ENCODER under SMALL_ENC_SEED.
SMALL_ENCODER_INIT = dict(SMALL_ENCODER, head_dim=16, hidden_size=32, intermediate_size=64,
                          num_attention_heads=2, num_filters=4, num_hidden_layers=1,
                          num_quantizers=16, upsample_groups=32)
SMALL_ENC_SEED = 4441         # torch.manual_seed before building the encoder
SMALL_ENC_SCALE_SEED = 4444   # generator for the encoder scale-up (after the decoder's)
SMALL_CLIP_SEED = 7101
# (name, samples): 3 s, 10.24 s (256 steps at 25 Hz > the config's sliding_window 250), a length
# that is no multiple of 960 or 1920, and one shorter than a 25 Hz step.
ENC_CLIPS = [("a3s", 72000), ("b10s", 245760), ("c_odd", 48611), ("d_short", 700)]
MM_ENC_CLIP = ("a3s", 72000)

# make-model checkpoints
MM_SEED = 5
MM_CASES = [
    dict(name="tiny", preset="tiny", frames=60, codes_seed=7002, chunks=[(20, 25)]),
    dict(name="full06", preset="0.6b-customvoice", frames=30, codes_seed=7003, chunks=[]),
]


def versions():
    out = {}
    for p in ("qwen-tts", "transformers", "torch", "safetensors", "numpy"):
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = None
    out["torch"] = torch.__version__
    out["python"] = sys.version.split()[0]
    return out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def git_head(repo):
    try:
        return subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


@torch.no_grad()
def scale_up(model, seed):
    """After the official init (Linear/Conv N(0, 0.02), zero biases, unit norms, zero codebooks,
    zero SnakeBeta logs, LayerScale 0.01, ConvNeXt gamma 1e-6) the decoder output is all zeros.
    Deterministically rescale/perturb so that every parameter matters:
      * Linear/Conv/ConvTranspose weights: the official N(0, 0.02) draw times g / (0.02 sqrt(fan_in))
        (fan_in = in_channels * kernel per output for convs; g = 1, 0.5 for 1x1 residual convs,
        0.04 for the final conv);
      * biases and norm biases: N(0, 0.05); norm weights: 1 + N(0, 0.1);
      * codebooks: cluster_usage U(0.5, 100), embedding_sum = usage * N(0, 1);
      * SnakeBeta alpha/beta: N(0, 0.1); LayerScale U(0.05, 0.15); ConvNeXt gamma U(0.05, 0.15).
    Draws come from torch.Generator(seed) over sorted(named_parameters())."""
    g = torch.Generator().manual_seed(seed)
    mods = dict(model.named_modules())
    for name, p in sorted(model.named_parameters()):
        mod_name, leaf = name.rsplit(".", 1)
        mod = mods[mod_name]
        if isinstance(mod, (torch.nn.Linear, torch.nn.Conv1d, torch.nn.ConvTranspose1d)) and leaf == "weight":
            if isinstance(mod, torch.nn.ConvTranspose1d):
                fan = p.shape[0] * math.ceil(p.shape[2] / mod.stride[0])
            elif isinstance(mod, torch.nn.Conv1d):
                fan = p.shape[1] * p.shape[2]
            else:
                fan = p.shape[1]
            gain = 1.0
            if ".conv2.conv" in name:
                gain = 0.5
            if name == f"decoder.{len(model.config.upsample_rates) + 2}.conv.weight":
                gain = 0.04  # the final conv (decoder.decoder.6 in the file)
            p.mul_(gain / (0.02 * math.sqrt(fan)))
        elif leaf == "bias":
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
        elif leaf == "cluster_usage":
            p.copy_(0.5 + torch.rand(p.shape, generator=g) * 99.5)
        elif leaf == "embedding_sum":
            usage = mods[mod_name].cluster_usage
            p.copy_(torch.randn(p.shape, generator=g) * usage[:, None])
        elif leaf in ("alpha", "beta"):
            p.copy_(torch.randn(p.shape, generator=g) * 0.1)
        elif leaf in ("scale", "gamma"):
            p.copy_(0.05 + torch.rand(p.shape, generator=g) * 0.1)
        elif leaf == "weight" and p.dim() == 1:   # RMSNorm / LayerNorm
            p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)
        else:
            raise RuntimeError(f"scale_up: unhandled parameter {name} {tuple(p.shape)}")


@torch.no_grad()
def clip_pcm(seed, n):
    """A deterministic speech-like int16 clip: a harmonic voice (f0 gliding 90-260 Hz, 12
    partials with a formant-like tilt) under a 3-6 Hz syllable envelope, plus breath noise and
    short unvoiced bursts; peak about 0.5 full scale."""
    rs = np.random.RandomState(seed)
    t = np.arange(n) / 24000.0
    f0 = 170 + 80 * np.sin(2 * np.pi * 0.7 * t + rs.uniform(0, 6.3)) + 10 * np.sin(2 * np.pi * 5.3 * t)
    ph = 2 * np.pi * np.cumsum(f0) / 24000.0
    formant = rs.uniform(400, 900)
    v = sum(np.sin(k * ph + rs.uniform(0, 6.3)) * np.exp(-((k * 170 - formant) / 900.0) ** 2) / k
            for k in range(1, 13))
    env = np.clip(np.sin(2 * np.pi * rs.uniform(3, 6) * t + rs.uniform(0, 6.3)), 0, None) ** 1.5
    noise = rs.randn(n) * (0.02 + 0.15 * (rs.rand(n // 2400 + 1).repeat(2400)[:n] > 0.8))
    x = v * env + noise
    x = 0.5 * x / max(np.max(np.abs(x)), 1e-9)
    return np.round(x * 32767).astype(np.int16)


@torch.no_grad()
def replace_encoder(model, enc_cfg, seed, scale_seed):
    """Swaps model.encoder for an official encoder built from enc_cfg after
    torch.manual_seed(seed), with every parameter redrawn from torch.Generator(scale_seed) over
    sorted(named_parameters()): conv/linear weights N(0, 1/fan_in) (x0.5 for the 1x1 residual
    convs), biases and LayerNorm biases N(0, 0.05^2), LayerNorm weights 1 + N(0, 0.1^2),
    LayerScale U(0.05, 0.15). Codebooks are then set in RVQ order on the long calibration clip
    (official modules only): cluster_usage U(0.5, 100), embed_sum = usage x N(0, s^2) with s the
    std of that codebook's input (the projected embedding, then each residual)."""
    torch.manual_seed(seed)
    cfg2 = Qwen3TTSTokenizerV2Config(encoder_config=dict(enc_cfg), decoder_config=dict(SMALL_DECODER))
    enc = official.Qwen3TTSTokenizerV2Encoder._from_config(cfg2.encoder_config, dtype=torch.float32)
    enc = enc.float().eval()
    g = torch.Generator().manual_seed(scale_seed)
    for name, p in sorted(enc.named_parameters()):
        leaf = name.rsplit(".", 1)[1]
        if leaf == "weight" and p.dim() >= 2:
            fan = p.shape[1] * (p.shape[2] if p.dim() == 3 else 1)
            gain = 0.5 if ".block.3." in name else 1.0
            p.copy_(torch.randn(p.shape, generator=g) * (gain / math.sqrt(fan)))
        elif leaf == "bias":
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
        elif leaf == "weight":          # LayerNorm
            p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)
        elif leaf == "scale":
            p.copy_(0.05 + torch.rand(p.shape, generator=g) * 0.1)
        else:
            raise RuntimeError(f"replace_encoder: unhandled parameter {name} {tuple(p.shape)}")
    pcm = torch.from_numpy(clip_pcm(SMALL_CLIP_SEED + 1, ENC_CLIPS[1][1]).astype(np.float32) / 32768.0)
    emb = enc.encoder(pcm[None, None])
    emb = enc.encoder_transformer(emb.transpose(1, 2), return_dict=True).last_hidden_state.transpose(1, 2)
    emb = enc.downsample(emb)
    stds = []
    for rvq in (enc.quantizer.semantic_residual_vector_quantizer, enc.quantizer.acoustic_residual_vector_quantizer):
        x = rvq.input_proj(emb) if rvq.input_proj is not None else emb
        for layer in rvq.layers:
            cb = layer.codebook
            sd = float(x.std())
            stds.append(sd)
            cb.cluster_usage.copy_(0.5 + torch.rand(cb.cluster_usage.shape, generator=g) * 99.5)
            cb.embed_sum.copy_(torch.randn(cb.embed_sum.shape, generator=g) * sd * cb.cluster_usage[:, None])
            cb._embed = None
            x = x - layer.decode(layer.encode(x))
    model.encoder = enc
    model.config.encoder_config = cfg2.encoder_config
    return dict(codebook_input_std=[round(v, 5) for v in stds])


@torch.no_grad()
def rvq_margins(model, pcm_f32):
    """Smallest relative gap (d2nd^2 - d1^2) / d1^2 over every frame and every used codebook
    (semantic 0, acoustic 0..14) of one clip, in float64 from the codebook inputs the official
    encode passes to MimiEuclideanCodebook.quantize (captured, not recomputed)."""
    q = model.encoder.quantizer
    used = [q.semantic_residual_vector_quantizer.layers[0].codebook] + \
           [layer.codebook for layer in q.acoustic_residual_vector_quantizer.layers[:15]]
    inputs = []
    orig = mimi.MimiEuclideanCodebook.quantize

    def capture(self, hs):
        inputs.append((self, hs.detach().clone()))
        return orig(self, hs)

    mimi.MimiEuclideanCodebook.quantize = capture
    try:
        model.encode(torch.from_numpy(pcm_f32)[None], padding_mask=torch.ones(1, len(pcm_f32), dtype=torch.long))
    finally:
        mimi.MimiEuclideanCodebook.quantize = orig
    worst = math.inf
    for cb, hs in inputs:
        if not any(cb is u for u in used):
            continue
        d2 = ((hs.double()[:, None, :] - cb.embed.double()[None, :, :]) ** 2).sum(-1)
        two = torch.topk(d2, 2, largest=False).values
        worst = min(worst, float(((two[:, 1] - two[:, 0]) / two[:, 0].clamp(min=1e-30)).min()))
    return worst


@torch.no_grad()
def official_enc_refs(model, clips, clip_seed, taps):
    """Per clip (name, samples): the int16 PCM (clip_pcm(clip_seed + i)), the codes of the
    official public Qwen3TTSTokenizerV2Model.encode (I32 [F, 16]) and, with taps, the official
    SEANet / transformer / downsample outputs captured by forward hooks (F32, time-major).
    Also checks that MimiModel.encode (the layer below) gives the same codes."""
    enc = model.encoder
    out, info = {}, {}
    cap = {}
    hooks = [enc.encoder.register_forward_hook(lambda m, a, o: cap.__setitem__("seanet", o)),
             enc.encoder_transformer.register_forward_hook(lambda m, a, o: cap.__setitem__("transformer", o[0])),
             enc.downsample.register_forward_hook(lambda m, a, o: cap.__setitem__("downsample", o))]
    try:
        for i, (name, n) in enumerate(clips):
            i16 = clip_pcm(clip_seed + i, n)
            x = i16.astype(np.float32) / 32768.0
            cap.clear()
            res = model.encode(torch.from_numpy(x)[None], padding_mask=torch.ones(1, n, dtype=torch.long),
                               return_dict=True)
            codes = np.ascontiguousarray(res.audio_codes[0].numpy(), dtype=np.int32)   # [F, 16] frame-major
            frames = -(-n // 1920)
            assert codes.shape == (frames, 16), codes.shape
            low = enc.encode(torch.from_numpy(x)[None, None], return_dict=True).audio_codes[0, :16, :frames]
            assert np.array_equal(low.T.numpy(), codes), "MimiModel.encode disagrees with the wrapper"
            out[f"{name}_pcm"] = i16.astype(np.int32)   # our safetensors reader has no I16
            out[f"{name}_codes"] = codes
            if taps:
                out[f"{name}_seanet"] = cap["seanet"][0].T.contiguous().numpy().astype(np.float32)
                out[f"{name}_transformer"] = cap["transformer"][0].contiguous().numpy().astype(np.float32)
                out[f"{name}_downsample"] = cap["downsample"][0].T.contiguous().numpy().astype(np.float32)
            info[name] = dict(samples=n, frames=frames, seconds=n / 24000.0,
                              min_relative_rvq_margin=rvq_margins(model, x),
                              distinct_codes_per_group=[int(len(set(codes[:, k]))) for k in range(16)],
                              seanet_steps=int(cap["seanet"].shape[-1]))
    finally:
        for h in hooks:
            h.remove()
    return out, info


def set_eager(model):
    for m in model.modules():
        cfg = getattr(m, "config", None)
        if cfg is not None and hasattr(cfg, "_attn_implementation"):
            cfg._attn_implementation = "eager"


def stats(w):
    w = np.asarray(w, dtype=np.float64)
    return dict(rms=float(np.sqrt(np.mean(w * w))), max_abs=float(np.max(np.abs(w))),
                clipped_frac=float(np.mean(np.abs(w) >= 1.0)))


@torch.no_grad()
def official_refs(decoder, codes_tc, chunks):
    """codes_tc: int64 [T, 16]. Returns dict of f32 numpy arrays (official outputs)."""
    x = torch.from_numpy(codes_tc.T.copy())[None]          # [1, 16, T]
    before = EAGER_CALLS[0]
    out = {"pcm": decoder(x)[0, 0].float().numpy().copy()}
    assert EAGER_CALLS[0] > before, "eager attention was not used"
    for cs, ctx in chunks:
        out[f"pcm_chunked_{cs}_{ctx}"] = (
            decoder.chunked_decode(x, chunk_size=cs, left_context_size=ctx)[0, 0].float().numpy().copy())
    return out


def save_ref(tensors, path):
    tensors = {k: np.ascontiguousarray(v) for k, v in tensors.items()}   # save_file ignores strides
    save_file(tensors, path, metadata={"generator": "tools/parity/make_codec_parity.py"})
    os.chmod(path, 0o644)


def nmse(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.sum((a - b) ** 2) / max(np.sum(b * b), 1e-30))


def rand_codes(seed, frames, groups=16, size=2048):
    return np.random.RandomState(seed).randint(0, size, size=(frames, groups)).astype(np.int64)


# ---------------------------------------------------------------------------------------------
def make_small(out_root, work, manifest):
    torch.manual_seed(SMALL_SEED)
    cfg = Qwen3TTSTokenizerV2Config(
        encoder_config=dict(SMALL_ENCODER_INIT), decoder_config=dict(SMALL_DECODER),
        encoder_valid_num_quantizers=16, input_sample_rate=24000, output_sample_rate=24000,
        decode_upsample_rate=1920, encode_downsample_rate=1920,
        architectures=["Qwen3TTSTokenizerV2Model"],
    )
    model = Qwen3TTSTokenizerV2Model(cfg).float().eval()
    scale_up(model.decoder, SMALL_SCALE_SEED)
    enc_stats = replace_encoder(model, SMALL_ENCODER, SMALL_ENC_SEED, SMALL_ENC_SCALE_SEED)
    save_dir = os.path.join(work, "small_save")
    shutil.rmtree(save_dir, ignore_errors=True)
    model.save_pretrained(save_dir, safe_serialization=True)

    # Reload through the official loader and check the round trip is exact.
    loaded = Qwen3TTSTokenizerV2Model.from_pretrained(
        save_dir, attn_implementation="eager", local_files_only=True, dtype=torch.float32).eval()
    set_eager(loaded)
    sd0, sd1 = model.state_dict(), loaded.state_dict()
    assert sd0.keys() == sd1.keys()
    for k in sd0:
        assert torch.equal(sd0[k], sd1[k]), f"save/load round trip changed {k}"

    dst = os.path.join(out_root, "small", "speech_tokenizer")
    shutil.rmtree(os.path.join(out_root, "small"), ignore_errors=True)
    os.makedirs(dst)
    saved = sorted(os.listdir(save_dir))
    for f in ("config.json", "model.safetensors"):
        shutil.copyfile(os.path.join(save_dir, f), os.path.join(dst, f))
    with safe_open(os.path.join(dst, "model.safetensors"), "np") as f:
        keys = list(f.keys())
        dtypes = sorted({str(f.get_slice(k).get_dtype()) for k in keys})
    n_dec = sum(k.startswith("decoder.") for k in keys)
    n_enc = sum(k.startswith("encoder.") for k in keys)

    codes = rand_codes(SMALL_CODES_SEED, SMALL_FRAMES)
    refs = official_refs(loaded.decoder, codes, SMALL_CHUNKS)
    # The official public API (Qwen3TTSTokenizerV2Model.decode, batch [B, T, 16]) for the record.
    with torch.no_grad():
        api = loaded.decode(torch.from_numpy(codes)[None], return_dict=True).audio_values[0].numpy()
    # The default chunking (300 / 25) is one chunk for 120 frames: it must equal the one-shot
    # output bit for bit, so it is checked here and not stored.
    assert np.array_equal(refs["pcm_chunked_300_25"], refs["pcm"])
    assert np.array_equal(api, refs["pcm"][: SMALL_FRAMES * 1920])
    tensors = {"codes": codes.astype(np.int32)}
    tensors.update({k: v.astype(np.float32) for k, v in refs.items() if k != "pcm_chunked_300_25"})
    save_ref(tensors, os.path.join(out_root, "small", "ref.safetensors"))

    # Encoder: official codes (public encode API) and intermediates for the fixed clips.
    attn_cls = type(loaded.encoder.encoder_transformer.layers[0].self_attn).__name__
    assert attn_cls == "MimiAttention", f"encoder attention is {attn_cls}, expected eager MimiAttention"
    enc_t, enc_info = official_enc_refs(loaded, ENC_CLIPS, SMALL_CLIP_SEED, taps=True)
    save_ref(enc_t, os.path.join(out_root, "small", "enc_ref.safetensors"))
    sdpa = Qwen3TTSTokenizerV2Model.from_pretrained(
        save_dir, attn_implementation="sdpa", local_files_only=True, dtype=torch.float32).eval()
    sdpa_t, _ = official_enc_refs(sdpa, ENC_CLIPS, SMALL_CLIP_SEED, taps=True)
    sdpa_same = {k: bool(np.array_equal(sdpa_t[f"{k}_codes"], enc_t[f"{k}_codes"])) for k, _ in ENC_CLIPS}
    sdpa_nmse = {k: nmse(sdpa_t[f"{k}_transformer"], enc_t[f"{k}_transformer"]) for k, _ in ENC_CLIPS}
    del sdpa

    manifest["small"] = dict(
        how="official Qwen3TTSTokenizerV2Model(config) after torch.manual_seed(torch_seed) "
            "(official post_init), decoder scale-up (see scale_up in make_codec_parity.py), "
            "official save_pretrained (safetensors) -> official from_pretrained(eager, f32); "
            "round trip bit-exact; references from the reloaded model",
        torch_seed=SMALL_SEED, scale_up_seed=SMALL_SCALE_SEED, codes_seed=SMALL_CODES_SEED,
        codes="numpy.random.RandomState(codes_seed).randint(0, 2048, (frames, 16))",
        frames=SMALL_FRAMES, decoder_config=SMALL_DECODER, encoder_config=SMALL_ENCODER,
        save_pretrained_files=saved,
        sha256={f: sha256(os.path.join(out_root, "small", f)) for f in
                ("speech_tokenizer/config.json", "speech_tokenizer/model.safetensors", "ref.safetensors",
                 "enc_ref.safetensors")}, kept_files=["config.json", "model.safetensors"],
        tensors=dict(total=len(keys), decoder=n_dec, encoder=n_enc, dtypes=dtypes),
        chunked=[dict(chunk_size=c, left_context_size=l, key=f"pcm_chunked_{c}_{l}",
                      stored=(c, l) != (300, 25)) for c, l in SMALL_CHUNKS],
        output_stats=stats(refs["pcm"]),
        official_nmse=dict(
            {f"chunked_{c}_{l}_vs_oneshot": nmse(refs[f"pcm_chunked_{c}_{l}"], refs["pcm"])
             for c, l in SMALL_CHUNKS},
            model_decode_api_vs_chunked_300_25=nmse(api, refs["pcm_chunked_300_25"])),
        encoder=dict(
            how="the model is built with encoder_config_init under torch_seed (so the decoder's "
                "official init draws are unchanged), then its encoder is replaced by an official "
                "Qwen3TTSTokenizerV2Encoder built from encoder_config under encoder_seed and redrawn "
                "by replace_encoder (encoder_scale_seed); enc_ref.safetensors = official "
                "Qwen3TTSTokenizerV2Model.encode codes + forward-hook intermediates of the reloaded "
                "model (eager MimiAttention)",
            encoder_config_init=SMALL_ENCODER_INIT, encoder_seed=SMALL_ENC_SEED,
            encoder_scale_seed=SMALL_ENC_SCALE_SEED, clip_seed=SMALL_CLIP_SEED,
            clips="clip i = clip_pcm(clip_seed + i, samples) (int16; the encoder input is i16 / 32768)",
            scale_up=enc_stats, enc_ref_sha256=sha256(os.path.join(out_root, "small", "enc_ref.safetensors")),
            enc_ref_tensors="NAME_pcm I32 [n] (int16 values); NAME_codes I32 [ceil(n/1920), 16]; NAME_seanet, "
                            "NAME_transformer F32 [ceil(n/960), hidden]; NAME_downsample F32 [frames, hidden]",
            clips_info=enc_info, attention=attn_cls,
            sdpa_codes_identical=sdpa_same, sdpa_vs_eager_transformer_nmse=sdpa_nmse),
    )
    print("small:", json.dumps(manifest["small"]["output_stats"]),
          json.dumps(manifest["small"]["official_nmse"]), flush=True)
    print("small encoder:", json.dumps(enc_info), json.dumps(sdpa_same), json.dumps(sdpa_nmse), flush=True)


def make_mm(case, repo, cli, out_root, work, manifest):
    mdir = os.path.join(work, f"mm_{case['name']}")
    shutil.rmtree(mdir, ignore_errors=True)
    subprocess.run([cli, "make-model", "--preset", case["preset"], "--seed", str(MM_SEED),
                    "--out", mdir], check=True)
    st_dir = os.path.join(mdir, "speech_tokenizer")
    cfg = Qwen3TTSTokenizerV2Config.from_pretrained(st_dir, local_files_only=True)
    dcfg = cfg.decoder_config
    dcfg._attn_implementation = "eager"
    torch.manual_seed(0)
    dec = Qwen3TTSTokenizerV2Decoder._from_config(dcfg, attn_implementation="eager", dtype=torch.float32)
    dec = dec.float().eval()
    set_eager(dec)

    # Load by name: every file tensor must be consumed and every decoder parameter provided.
    sd = {}
    other = []
    with safe_open(os.path.join(st_dir, "model.safetensors"), "pt") as f:
        for k in f.keys():
            if k.startswith("decoder."):
                sd[k[len("decoder."):]] = f.get_tensor(k)
            else:
                other.append(k)
    expected = dec.state_dict()
    missing = sorted(set(expected) - set(sd))
    unexpected = sorted(set(sd) - set(expected))
    shape_bad = sorted(f"{k}: official {tuple(expected[k].shape)} vs file {tuple(sd[k].shape)}"
                       for k in set(sd) & set(expected) if tuple(sd[k].shape) != tuple(expected[k].shape))
    dtype_bad = sorted(k for k, v in sd.items() if v.dtype != torch.float32)
    problems = dict(missing=missing, unexpected=unexpected, shape_mismatch=shape_bad,
                    non_f32=dtype_bad, non_codec_tensors=[k for k in other if not k.startswith("encoder.")])
    if any(problems.values()):
        print(f"{case['name']}: make-model checkpoint does not match the official decoder:",
              json.dumps(problems, indent=1), file=sys.stderr)
        raise SystemExit(2)
    res = dec.load_state_dict(sd, strict=True)
    assert not res.missing_keys and not res.unexpected_keys

    codes = rand_codes(case["codes_seed"], case["frames"])
    refs = official_refs(dec, codes, case["chunks"])
    tensors = {"codes": codes.astype(np.int32)}
    tensors.update({k: v.astype(np.float32) for k, v in refs.items()})
    os.makedirs(os.path.join(out_root, case["name"]), exist_ok=True)
    save_ref(tensors, os.path.join(out_root, case["name"], "ref.safetensors"))
    manifest[case["name"]] = dict(
        how="codectalk make-model --preset P --seed S written to a temp dir; its "
            "speech_tokenizer/config.json -> official Qwen3TTSTokenizerV2Config; official "
            "Qwen3TTSTokenizerV2Decoder._from_config(decoder_config, eager, f32); state dict "
            "loaded by name (strict, prefix 'decoder.' stripped): 0 missing, 0 unexpected, "
            "0 shape mismatches; only codes + official outputs committed",
        make_model_preset=case["preset"], make_model_seed=MM_SEED, codes_seed=case["codes_seed"],
        codes="numpy.random.RandomState(codes_seed).randint(0, 2048, (frames, 16))",
        frames=case["frames"], decoder_config=json.load(open(os.path.join(st_dir, "config.json")))["decoder_config"],
        make_model_codec_sha256=sha256(os.path.join(st_dir, "model.safetensors")),
        ref_sha256=sha256(os.path.join(out_root, case["name"], "ref.safetensors")),
        tensors_consumed=len(sd), official_parameters=len(expected),
        chunked=[dict(chunk_size=c, left_context_size=l, key=f"pcm_chunked_{c}_{l}")
                 for c, l in case["chunks"]],
        output_stats=stats(refs["pcm"]),
        official_nmse={f"chunked_{c}_{l}_vs_oneshot": nmse(refs[f"pcm_chunked_{c}_{l}"], refs["pcm"])
                       for c, l in case["chunks"]},
    )
    print(f"{case['name']}:", json.dumps(manifest[case["name"]]["output_stats"]),
          json.dumps(manifest[case["name"]]["official_nmse"]), flush=True)
    del dec, sd

    # Encoder: the whole file loaded by name (strict) into the official Qwen3TTSTokenizerV2Model;
    # official codes of the small case's first clip (its PCM is in small/enc_ref.safetensors).
    full = Qwen3TTSTokenizerV2Model._from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    full = full.float().eval()
    with safe_open(os.path.join(st_dir, "model.safetensors"), "pt") as f:
        allsd = {k: f.get_tensor(k) for k in f.keys()}
    exp_full = full.state_dict()
    enc_problems = dict(
        missing=sorted(set(exp_full) - set(allsd)), unexpected=sorted(set(allsd) - set(exp_full)),
        shape_mismatch=sorted(k for k in set(allsd) & set(exp_full) if tuple(allsd[k].shape) != tuple(exp_full[k].shape)),
        non_f32=sorted(k for k, v in allsd.items() if v.dtype != torch.float32))
    if any(enc_problems.values()):
        print(f"{case['name']}: make-model speech tokenizer does not match the official model:",
              json.dumps(enc_problems, indent=1), file=sys.stderr)
        raise SystemExit(2)
    res = full.load_state_dict(allsd, strict=True)
    assert not res.missing_keys and not res.unexpected_keys
    attn_cls = type(full.encoder.encoder_transformer.layers[0].self_attn).__name__
    assert attn_cls == "MimiAttention", attn_cls
    enc_t, enc_info = official_enc_refs(full, [ENC_CLIPS[0]], SMALL_CLIP_SEED, taps=False)
    save_ref({k: v for k, v in enc_t.items() if k.endswith("_codes")},
             os.path.join(out_root, case["name"], "enc_ref.safetensors"))
    manifest[case["name"]]["encoder"] = dict(
        how="whole make-model speech_tokenizer/model.safetensors loaded by name (strict) into the official "
            "Qwen3TTSTokenizerV2Model._from_config(config, eager, f32): 0 missing, 0 unexpected, 0 shape "
            "mismatches; enc_ref.safetensors = official encode codes of clip a3s (PCM in "
            "small/enc_ref.safetensors)",
        tensors_loaded=len(allsd), encoder_tensors=sum(k.startswith("encoder.") for k in allsd),
        encoder_config=json.load(open(os.path.join(st_dir, "config.json")))["encoder_config"],
        enc_ref_sha256=sha256(os.path.join(out_root, case["name"], "enc_ref.safetensors")),
        clips_info=enc_info, attention=attn_cls)
    print(f"{case['name']} encoder:", json.dumps(enc_info), flush=True)
    del full, allsd
    shutil.rmtree(mdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cli", required=True, help="path of the built codectalk executable")
    ap.add_argument("--only", default="", help="comma list of small,tiny,full06 (default all)")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    mpath = os.path.join(a.out, "manifest.json")
    manifest = {}
    if only and os.path.exists(mpath):
        manifest = json.load(open(mpath))
    manifest["generator"] = "tools/parity/make_codec_parity.py (via make_codec_parity.sh)"
    manifest["versions"] = versions()
    manifest["codectalk_git_head"] = git_head(a.repo)
    manifest["codectalk_cli"] = os.path.relpath(os.path.abspath(a.cli), a.repo)
    manifest["precision"] = "float32 weights and activations, eager attention (call-counted), CPU"
    manifest["ref_tensors"] = ("ref.safetensors: codes I32 [frames, 16] (frame-major, codebook 0 "
                               "first); pcm F32 [frames*1920] = official decoder forward (one-shot, "
                               "clamped); pcm_chunked_C_L = official decoder.chunked_decode(codes, "
                               "chunk_size=C, left_context_size=L)")
    if not only or "small" in only:
        make_small(a.out, a.work, manifest)
    for case in MM_CASES:
        if not only or case["name"] in only:
            make_mm(case, a.repo, a.cli, a.out, a.work, manifest)
    with open(mpath, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    main()
