#!/usr/bin/env python3
# Purpose: speaker-encoder parity references at widths >= 64 (so the SIMD paths of the C
# convolutions run) from the OFFICIAL qwen-tts 0.1.1 code: a Base Qwen3TTSForConditionalGeneration
# built with a small talker (hidden 64) and a speaker encoder with enc_channels
# [64, 64, 64, 64, 192], enc_dim 64, attention 16, SE 16, re-drawn with make_parity.py's reinit,
# cast to BF16. Saved: config.json (save_pretrained's, fixed as make_parity.py fixes it), only the
# speaker_encoder.* tensors (BF16, the published names and layout) and ref.safetensors with the
# official mel_spectrogram and extract_speaker_embedding (f32 model) of two 24 kHz clips, plus
# one clip at 44.1 kHz stereo taken through the wrapper's loading path (_load_audio_to_np ->
# librosa.resample soxr_hq -> 24 kHz) and its x-vector. Nothing here computes model math itself.
# Run through tools/parity/make_spk_parity.sh; CI never runs it.

import argparse
import importlib.metadata as md
import json
import os
import shutil
import sys

import librosa
import numpy as np
import soundfile as sf
import torch
from safetensors.torch import save_file as save_torch
from safetensors.numpy import save_file as save_np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_parity as mp  # noqa: E402  (build_config, reinit, fix_saved_config, layer_cfg)

from qwen_tts import Qwen3TTSModel  # noqa: E402
from qwen_tts.core.models import Qwen3TTSForConditionalGeneration  # noqa: E402
from qwen_tts.core.models.modeling_qwen3_tts import mel_spectrogram  # noqa: E402

SEED = 4001          # weight draw (make_parity.reinit)
CLIP_SEED = 4101     # numpy default_rng for the clips
SPK = dict(enc_dim=64, sample_rate=24000, mel_dim=128, enc_channels=[64, 64, 64, 64, 192],
           enc_kernel_sizes=[5, 3, 3, 3, 1], enc_dilations=[1, 2, 3, 4, 1],
           enc_attention_channels=16, enc_res2net_scale=8, enc_se_channels=16)
MODEL = dict(seed=SEED, kind="base", size="0b6", text_hidden=8,
             talker=mp.layer_cfg(64, 128, 2, 4, 2, 16), mrope=[4, 2, 2],
             predictor=mp.layer_cfg(64, 128, 1, 4, 2, 16), speaker_encoder=SPK)


def clip(rng, n, sr, parts):
    """Sum of (amp, f0, f1) linear chirps, an amplitude envelope and a little noise."""
    t = np.arange(n) / sr
    x = np.zeros(n)
    for amp, f0, f1 in parts:
        ph = 2 * np.pi * (f0 * t + 0.5 * (f1 - f0) / t[-1] * t * t)
        x += amp * np.sin(ph)
    env = 0.6 + 0.4 * np.sin(2 * np.pi * 1.3 * t)
    return (env * x + 0.03 * rng.standard_normal(n)).astype(np.float32)


def official_mel(wav):
    return mel_spectrogram(torch.from_numpy(wav).unsqueeze(0), n_fft=1024, num_mels=128,
                           sampling_rate=24000, hop_size=256, win_size=1024, fmin=0,
                           fmax=12000).transpose(1, 2)[0].float().contiguous().numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)

    model = Qwen3TTSForConditionalGeneration(mp.build_config(MODEL))
    mp.reinit(model, SEED)
    model = model.to(torch.bfloat16)
    mdir = os.path.join(a.work, "spk64")
    shutil.rmtree(mdir, ignore_errors=True)
    model.save_pretrained(mdir, safe_serialization=True)
    mp.fix_saved_config(os.path.join(mdir, "config.json"), "base")
    shutil.copy(os.path.join(mdir, "config.json"), os.path.join(a.out, "config.json"))
    spk = {k: v.contiguous() for k, v in model.state_dict().items() if k.startswith("speaker_encoder.")}
    assert all(v.dtype == torch.bfloat16 for v in spk.values())
    save_torch(spk, os.path.join(a.out, "speaker_encoder.safetensors"))
    m32 = model.float().eval()  # the f32 path: the BF16 weights' values in f32

    rng = np.random.default_rng(CLIP_SEED)
    ref = {}
    clips = {
        "a": clip(rng, 36000, 24000, [(0.3, 180, 260), (0.15, 900, 700)]),     # 1.5 s
        "b": clip(rng, 96000, 24000, [(0.25, 120, 300), (0.1, 2000, 3500), (0.1, 440, 440)]),  # 4 s
    }
    for k, wav in clips.items():
        ref[k + ".wav"] = wav
        ref[k + ".mel"] = official_mel(wav)
        ref[k + ".xvector"] = m32.extract_speaker_embedding(wav, 24000).float().numpy()

    # The wrapper's path for a file: _load_audio_to_np (librosa.load, mono mean), then
    # librosa.resample to the speaker encoder rate (soxr_hq), as create_voice_clone_prompt does.
    n44 = int(44100 * 2.0)
    left = clip(rng, n44, 44100, [(0.3, 200, 240), (0.1, 1500, 1200)])
    right = clip(rng, n44, 44100, [(0.2, 330, 300)])
    path = os.path.join(a.out, "clip44k_stereo.flac")
    sf.write(path, np.stack([left, right], 1), 44100, subtype="PCM_16")
    wrapper = object.__new__(Qwen3TTSModel)  # only the loader's helpers are used
    wav, sr = wrapper._load_audio_to_np(path)
    assert sr == 44100
    res = librosa.resample(y=wav.astype(np.float32), orig_sr=int(sr),
                           target_sr=m32.speaker_encoder_sample_rate)
    ref["r.src_mono"] = wav.astype(np.float32)
    ref["r.wav24k"] = res.astype(np.float32)
    ref["r.xvector"] = m32.extract_speaker_embedding(res, 24000).float().numpy()
    ref = {k: np.ascontiguousarray(v) for k, v in ref.items()}  # C order, as the keys say
    save_np(ref, os.path.join(a.out, "ref.safetensors"))

    versions = {p: md.version(p) for p in ("qwen-tts", "transformers", "torch", "librosa", "soxr",
                                           "soundfile", "numpy", "safetensors")}
    versions["python"] = sys.version.split()[0]
    versions["libsndfile (soundfile's)"] = sf.__libsndfile_version__
    manifest = dict(
        generator="tools/parity/make_spk_parity.py", versions=versions,
        weight_seed=SEED, clip_seed=CLIP_SEED, speaker_encoder_config=SPK,
        talker=MODEL["talker"], init="make_parity.reinit: torch.Generator(seed) over "
        "sorted(named_parameters()), weights N(0, 0.2), biases N(0, 0.05); then BF16",
        files={f: os.path.getsize(os.path.join(a.out, f)) for f in sorted(os.listdir(a.out))
               if f != "manifest.json"},
        keys={k: list(v.shape) for k, v in sorted(ref.items())},
    )
    with open(os.path.join(a.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(manifest["keys"]))


if __name__ == "__main__":
    main()
