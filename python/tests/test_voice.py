"""Voice cloning from Python (codectalk.Voice, Model.create_voice / load_voice, voice=Voice)
against the codectalk program on a tiny random Base model: the same voice file from the same
samples, the same audio and codes for the same request, and the library's refusals."""
import json
import subprocess
import wave

import numpy as np
import pytest

import codectalk
from test_model import wav_float32

TEXT = "Hi there."
REF_TEXT = "This is the reference transcript, read aloud."


@pytest.fixture(scope="session")
def clip(tmp_path_factory):
    """A 1.5 s reference clip: a 16-bit 24 kHz WAV and the float32 samples the file loader
    reads from it (int16 / 32768), so the CLI and Python encode the same samples."""
    rng = np.random.default_rng(1)
    t = np.arange(36000) / 24000
    x = 0.3 * np.sin(2 * np.pi * (140 + 40 * np.sin(4.4 * t)) * t) * (0.6 + 0.4 * np.sin(19 * t))
    s16 = np.round((x + 0.02 * rng.uniform(-1, 1, t.size)) * 32767).astype("<i2")
    path = tmp_path_factory.mktemp("clip") / "clip.wav"
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(24000)
        f.writeframes(s16.tobytes())
    return str(path), s16.astype(np.float32) / np.float32(32768)


def cli_voice(bin_path, base_dir, clip_path, out, ref_text):
    mode = ["--ref-text", ref_text] if ref_text else ["--x-vector-only"]
    subprocess.run([bin_path, "voice", "create", "-m", base_dir, "--ref-audio", clip_path, "-q",
                    "-o", str(out)] + mode, check=True)
    return str(out)


def cli_synth(bin_path, model_dir, voice_file, tmp_path, *extra, seed=3):
    wav = tmp_path / "cli.wav"
    subprocess.run([bin_path, "synth", "-m", model_dir, "--profile", "none", "--float", "-q",
                    "--voice", voice_file, "-t", TEXT, "--seed", str(seed), "-o", str(wav)]
                   + list(extra), check=True)
    return wav_float32(wav.read_bytes())


def cli_refusal(bin_path, model_dir, voice_file):
    r = subprocess.run([bin_path, "synth", "-m", model_dir, "--profile", "none", "-q", "--voice",
                        voice_file, "-t", TEXT, "-o", "/dev/null"], capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    return r.stderr


@pytest.mark.parametrize("ref_text", [REF_TEXT, None], ids=["icl", "x_vector_only"])
def test_voice_equals_cli(base, base_dir, bin_path, clip, tmp_path, ref_text):
    path, pcm = clip
    cli_file = cli_voice(bin_path, base_dir, path, tmp_path / "cli.voice", ref_text)
    with base.create_voice(pcm, ref_text) as v:
        v.save(tmp_path / "py.voice")
        # the same samples give the same voice, byte for byte
        assert (tmp_path / "py.voice").read_bytes() == open(cli_file, "rb").read()
        audio, sr = base.synthesize(TEXT, voice=v, seed=3)
        assert sr == 24000 and audio.dtype == np.float32 and audio.size > 0
        assert np.array_equal(audio, cli_synth(bin_path, base_dir, cli_file, tmp_path))
        codes = base.codes(TEXT, voice=v, seed=3)
        out = subprocess.run([bin_path, "codes", "-m", base_dir, "--format", "json", "--voice",
                              cli_file, "-t", TEXT, "--seed", "3", "-q"], check=True,
                             capture_output=True, text=True).stdout
        assert np.array_equal(codes, np.array(json.loads(out)["frames"], dtype=np.int32))
        assert np.array_equal(np.concatenate(list(base.stream(TEXT, voice=v, seed=3))), audio)
    # the file the CLI wrote reads back into the same voice
    with base.load_voice(cli_file) as w:
        assert np.array_equal(base.synthesize(TEXT, voice=w, seed=3)[0], audio)


def test_info_equals_voice_info(base, bin_path, clip, tmp_path):
    _, pcm = clip
    for ref_text in (REF_TEXT, None):
        with base.create_voice(pcm, ref_text=ref_text) as v:
            v.save(tmp_path / "v.voice")
            i = v.info
        out = subprocess.run([bin_path, "voice", "info", str(tmp_path / "v.voice")], check=True,
                             capture_output=True, text=True).stdout
        lines = dict(l.split(":", 1) for l in out.splitlines())
        lines = {k: val.strip() for k, val in lines.items()}
        assert lines["voice file"].endswith("(version %d, made by %s)" % (i.version, i.created_by))
        assert lines["model"] == "%s (hash %s)" % (i.model_name, i.model_hash)
        assert i.model_hash == base.model_hash and len(i.model_hash) == 64
        assert lines["x-vector"] == "%d values" % i.xvector_len and i.xvector_len > 0
        assert lines["clip"].startswith("%d samples" % i.n_samples) and i.n_samples == pcm.size
        assert lines["audio sha256"] == i.audio_sha256 and len(i.audio_sha256) == 64
        if ref_text:
            assert i.mode == "icl" and i.ref_text == REF_TEXT == lines["transcript"]
            assert lines["reference"].startswith("%d frames x %d codes" % (i.ref_frames, i.n_groups))
            assert i.ref_frames == (pcm.size + 1919) // 1920 and i.n_groups == 16
        else:
            assert i.mode == "x_vector_only" and i.ref_text is None and "transcript" not in lines
            assert i.ref_frames == 0 and i.n_groups == 0 and "reference" not in lines


def test_x_vector_only_of_an_icl_voice(base, base_dir, bin_path, clip, tmp_path):
    path, pcm = clip
    cli_file = cli_voice(bin_path, base_dir, path, tmp_path / "icl.voice", REF_TEXT)
    with base.create_voice(pcm, REF_TEXT) as icl, base.create_voice(pcm) as xv:
        a, _ = base.synthesize(TEXT, voice=icl, seed=3, x_vector_only=True)
        assert np.array_equal(a, cli_synth(bin_path, base_dir, cli_file, tmp_path, "--x-vector-only"))
        assert np.array_equal(a, base.synthesize(TEXT, voice=xv, seed=3)[0])  # the same x-vector
        with pytest.raises(ValueError, match="x_vector_only applies to a cloned voice"):
            base.synthesize(TEXT, seed=3, x_vector_only=True)
        with pytest.raises(TypeError, match="x_vector_only must be a bool"):
            base.synthesize(TEXT, voice=icl, x_vector_only=1)


def test_voice_of_another_model(base, base_dir, other_base_dir, model, model_dir, bin_path, clip,
                                tmp_path):
    path, pcm = clip
    other_file = cli_voice(bin_path, other_base_dir, path, tmp_path / "other.voice", REF_TEXT)
    with pytest.raises(codectalk.CodectalkError) as e:
        base.load_voice(other_file)
    assert "voice was made with another model" in str(e.value) and e.value.status == -1
    assert str(e.value) in cli_refusal(bin_path, base_dir, other_file)
    with codectalk.Model(other_base_dir) as other:
        assert other.model_hash != base.model_hash
        v = other.create_voice(pcm, REF_TEXT)
    # a Voice made with another Model: the refusal ct_voice_load gives its file
    with pytest.raises(codectalk.CodectalkError) as e:
        base.synthesize(TEXT, voice=v)
    assert str(e.value) in cli_refusal(bin_path, base_dir, other_file) and e.value.status == -1
    # a Voice on the CustomVoice model (which makes none)
    with pytest.raises(codectalk.CodectalkError) as e:
        model.codes(TEXT, voice=v)
    assert str(e.value) in cli_refusal(bin_path, model_dir, other_file)
    assert "custom_voice" in str(e.value)
    with pytest.raises(codectalk.CodectalkError, match="cloned voices need a Base model"):
        model.create_voice(pcm)
    # another Model of the same checkpoint takes it
    with codectalk.Model(other_base_dir) as again:
        assert again.synthesize(TEXT, voice=v, seed=3)[0].size > 0
    v.close()
    assert base.synthesize(TEXT, seed=3)[0].size > 0  # still serving


def test_bad_voice_files(base, bin_path, base_dir, clip, tmp_path):
    _, pcm = clip
    with base.create_voice(pcm) as v:
        v.save(tmp_path / "ok.voice")
        with pytest.raises(codectalk.CodectalkError) as e:
            v.save(tmp_path / "no-dir" / "x.voice")
        assert e.value.status == -3 and not (tmp_path / "no-dir").exists()
    data = (tmp_path / "ok.voice").read_bytes()
    (tmp_path / "cut.voice").write_bytes(data[:len(data) // 2])
    with pytest.raises(codectalk.CodectalkError) as e:
        base.load_voice(tmp_path / "cut.voice")
    assert e.value.status == -4 and str(e.value) in cli_refusal(bin_path, base_dir, str(tmp_path / "cut.voice"))
    with pytest.raises(codectalk.CodectalkError) as e:
        base.load_voice(tmp_path / "missing.voice")
    assert e.value.status == -3


def test_bad_audio(base, clip):
    _, pcm = clip
    with pytest.raises(TypeError, match="must be float32"):
        base.create_voice(pcm.astype(np.float64))
    with pytest.raises(TypeError, match="float32 NumPy array"):
        base.create_voice(list(pcm))
    with pytest.raises(ValueError, match="one-dimensional"):
        base.create_voice(np.stack([pcm, pcm], axis=1))
    with pytest.raises(ValueError, match="at 24000 Hz, not 48000.*codectalk voice create"):
        base.create_voice(pcm, sample_rate=48000)
    with pytest.raises(ValueError, match="ref_text is empty"):
        base.create_voice(pcm, "")
    with pytest.raises(codectalk.CodectalkError) as e:
        base.create_voice(pcm[:23000], REF_TEXT)
    assert "0.96 s" in str(e.value) and e.value.status == -1
    bad = pcm.copy()
    bad[100] = np.nan
    with pytest.raises(codectalk.CodectalkError, match="sample 100 is not"):
        base.create_voice(bad)
    # a strided view is taken as its samples
    twice = np.repeat(pcm, 2)[::2]
    with base.create_voice(twice) as a, base.create_voice(pcm) as b:
        assert a.info.audio_sha256 == b.info.audio_sha256


def test_closed_voice(base, clip):
    _, pcm = clip
    v = base.create_voice(pcm, REF_TEXT)
    g = base.stream(TEXT, voice=v, seed=3)
    first = next(g)
    v.close()  # the request already holds its copy
    audio = np.concatenate([first] + list(g))
    v.close()
    with pytest.raises(ValueError, match="the voice is closed"):
        base.synthesize(TEXT, voice=v)
    with pytest.raises(ValueError, match="the voice is closed"):
        v.save("/dev/null")
    assert "closed" in repr(v) and v.info.mode == "icl"
    with base.create_voice(pcm, REF_TEXT) as w:
        assert np.array_equal(base.synthesize(TEXT, voice=w, seed=3)[0], audio)


def test_speech_encoder_loaded_once(base_dir, clip):
    _, pcm = clip
    m = codectalk.Model(base_dir)
    with m.create_voice(pcm):
        assert m._encoder is None  # x-vector-only voices need no speech-tokenizer encoder
    with m.create_voice(pcm, REF_TEXT) as a:
        enc = m._encoder.value
        assert enc
    with m.create_voice(pcm, REF_TEXT) as b:
        assert m._encoder.value == enc and a.info.audio_sha256 == b.info.audio_sha256
    m.close()
    assert m._encoder is None
    with pytest.raises(ValueError, match="the model is closed"):
        m.create_voice(pcm, REF_TEXT)
    with pytest.raises(ValueError, match="the model is closed"):
        m.load_voice("x.voice")
