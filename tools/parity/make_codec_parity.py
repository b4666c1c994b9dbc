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
SMALL_ENCODER = dict(   # a reduced MimiConfig: only present because the official class has one
    audio_channels=1, codebook_dim=16, codebook_size=2048, compress=2, dilation_growth_rate=2,
    frame_rate=12.5, head_dim=16, hidden_act="gelu", hidden_size=32, intermediate_size=64,
    kernel_size=7, last_kernel_size=3, layer_scale_initial_scale=0.01,
    max_position_embeddings=8000, norm_eps=1e-5, num_attention_heads=2, num_filters=4,
    num_hidden_layers=1, num_key_value_heads=2, num_quantizers=16, num_residual_layers=1,
    num_semantic_quantizers=1, pad_mode="constant", residual_kernel_size=3, rope_theta=10000.0,
    sampling_rate=24000, sliding_window=250, upsample_groups=32, upsampling_ratios=[8, 6, 5, 4],
    use_causal_conv=True, use_conv_shortcut=False, vector_quantization_hidden_dimension=16,
)

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
        encoder_config=dict(SMALL_ENCODER), decoder_config=dict(SMALL_DECODER),
        encoder_valid_num_quantizers=16, input_sample_rate=24000, output_sample_rate=24000,
        decode_upsample_rate=1920, encode_downsample_rate=1920,
        architectures=["Qwen3TTSTokenizerV2Model"],
    )
    model = Qwen3TTSTokenizerV2Model(cfg).float().eval()
    scale_up(model.decoder, SMALL_SCALE_SEED)
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
                ("speech_tokenizer/config.json", "speech_tokenizer/model.safetensors", "ref.safetensors")}, kept_files=["config.json", "model.safetensors"],
        tensors=dict(total=len(keys), decoder=n_dec, encoder=n_enc, dtypes=dtypes),
        chunked=[dict(chunk_size=c, left_context_size=l, key=f"pcm_chunked_{c}_{l}",
                      stored=(c, l) != (300, 25)) for c, l in SMALL_CHUNKS],
        output_stats=stats(refs["pcm"]),
        official_nmse=dict(
            {f"chunked_{c}_{l}_vs_oneshot": nmse(refs[f"pcm_chunked_{c}_{l}"], refs["pcm"])
             for c, l in SMALL_CHUNKS},
            model_decode_api_vs_chunked_300_25=nmse(api, refs["pcm_chunked_300_25"])),
    )
    print("small:", json.dumps(manifest["small"]["output_stats"]),
          json.dumps(manifest["small"]["official_nmse"]), flush=True)


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
                    non_f32=dtype_bad, non_decoder_tensors=other)
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
