"""codectalk.Model against the codectalk program on a tiny random model: the same audio and codes
for the same request, streaming, errors carrying the library's message, the GIL released."""
import ctypes
import gc
import json
import os
import pathlib
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import codectalk
from codectalk import _lib

TEXT = "Hello there."
REQ = dict(voice="vivian", language="english", seed=3)
CLI_REQ = ["-t", TEXT, "-s", "vivian", "-l", "english", "--seed", "3", "-q"]


def wav_float32(data):
    """Samples of a 32-bit float mono WAV (format 3)."""
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    pos, fmt = 12, None
    while pos + 8 <= len(data):
        cid, n = data[pos:pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        if cid == b"fmt ":
            fmt = struct.unpack_from("<HHIIHH", data, pos + 8)
        elif cid == b"data":
            assert fmt is not None and fmt[0] == 3 and fmt[1] == 1 and fmt[5] == 32, fmt
            return np.frombuffer(data[pos + 8:pos + 8 + n], dtype="<f4")
        pos += 8 + n + (n & 1)
    raise AssertionError("no data chunk")


def pcm16(a):
    """The library's float -> s16 conversion (src/audio/pcm.c): clamp, scale, round half away."""
    s = np.clip(a, np.float32(-1), np.float32(1)).astype(np.float32) * np.float32(32767)
    return np.where(s < 0, s - np.float32(0.5), s + np.float32(0.5)).astype(np.int32).astype(np.int16)


def test_installed_not_source():
    # the tests run against the pip-installed package, library included
    src = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    assert not os.path.realpath(codectalk.__file__).startswith(src + os.sep), codectalk.__file__
    assert os.path.isfile(_lib.path())


def test_version_and_lists(model, model_dir, bin_path):
    h = open(os.path.join(os.path.dirname(__file__), "../../include/codectalk.h")).read()
    assert '#define CT_VERSION_STRING "%s"' % codectalk.__version__ in h
    info = subprocess.run([bin_path, "info", "-m", model_dir], check=True,
                          capture_output=True, text=True).stdout
    lines = dict(l.split(": ", 1) for l in info.splitlines() if ": " in l)
    assert model.voices == lines["speakers"].split()
    assert model.languages == [l for l in lines["languages"].split() if l != "auto"]
    assert model.kind == "custom_voice" and model.sample_rate == 24000
    assert model.weights == ("bf16", "bf16")


def test_synthesize_equals_cli(model, model_dir, bin_path, tmp_path):
    audio, sr = model.synthesize(TEXT, **REQ)
    assert sr == 24000 and audio.dtype == np.float32 and audio.ndim == 1 and audio.size > 0
    wav = tmp_path / "f.wav"
    subprocess.run([bin_path, "synth", "-m", model_dir, "--profile", "none", "--float",
                    "-o", str(wav)] + CLI_REQ, check=True)
    assert np.array_equal(audio, wav_float32(wav.read_bytes()))
    raw = subprocess.run([bin_path, "synth", "-m", model_dir, "--profile", "none", "-o",
                          "-"] + CLI_REQ, check=True, capture_output=True).stdout
    assert np.array_equal(pcm16(audio), np.frombuffer(raw, dtype="<i2"))
    other, _ = model.synthesize(TEXT, voice="vivian", language="english", seed=4)
    assert not (other.size == audio.size and np.array_equal(other, audio))  # the seed is used


def test_language_code_and_instructions_reach_the_request(model, model_dir, bin_path):
    # a code resolves to the model's language name, as in the CLI
    a, _ = model.synthesize(TEXT, voice="vivian", language="en", seed=3)
    b, _ = model.synthesize(TEXT, **REQ)
    assert np.array_equal(a, b)
    # the 0.6B CustomVoice model takes no instruction: the library refuses it
    with pytest.raises(codectalk.CodectalkError) as e:
        model.synthesize(TEXT, instructions="whisper", **REQ)
    r = subprocess.run([bin_path, "synth", "-m", model_dir, "--profile", "none", "-i",
                        "whisper", "-o", "/dev/null"] + CLI_REQ, capture_output=True, text=True)
    assert r.returncode == 1 and str(e.value) in r.stderr


def test_stream_chunks_concatenate_to_synthesize(model):
    audio, _ = model.synthesize(TEXT, **REQ)
    chunks = list(model.stream(TEXT, **REQ))
    assert len(chunks) > 1
    assert all(c.dtype == np.float32 and c.ndim == 1 and c.size > 0 for c in chunks)
    assert np.array_equal(np.concatenate(chunks), audio)


def test_stream_closed_early_cancels(model):
    g = model.stream(TEXT, **REQ)
    first = next(g)
    g.close()  # releases (cancels) the stream; the engine's slot is free again
    audio, _ = model.synthesize(TEXT, **REQ)
    assert np.array_equal(audio[:first.size], first)


def test_codes_equal_cli_json(model, model_dir, bin_path):
    codes = model.codes(TEXT, **REQ)
    out = subprocess.run([bin_path, "codes", "-m", model_dir, "--format", "json"] + CLI_REQ,
                         check=True, capture_output=True, text=True).stdout
    ref = np.array(json.loads(out)["frames"], dtype=np.int32)
    assert codes.dtype == np.int32 and codes.shape == ref.shape and codes.shape[1] == 16
    assert np.array_equal(codes, ref)


def test_bad_voice_raises_library_message(model, model_dir, bin_path):
    with pytest.raises(codectalk.CodectalkError) as e:
        model.synthesize(TEXT, voice="nobody", seed=3)
    r = subprocess.run([bin_path, "synth", "-m", model_dir, "--profile", "none", "-t", TEXT,
                        "-s", "nobody", "-o", "/dev/null", "-q"], capture_output=True, text=True)
    assert r.returncode == 1
    assert "unknown speaker 'nobody'" in str(e.value) and str(e.value) in r.stderr
    assert e.value.status == -1 and e.value.status_name == "invalid argument"
    with pytest.raises(codectalk.CodectalkError) as e:
        model.codes(TEXT, voice="nobody")
    assert "unknown speaker 'nobody'" in str(e.value)
    # the model still serves after a failed request
    assert model.codes(TEXT, **REQ).shape[1] == 16


def test_bad_path_raises_library_message(bin_path, tmp_path):
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(codectalk.CodectalkError) as e:
        codectalk.Model(missing)
    r = subprocess.run([bin_path, "info", "-m", missing], capture_output=True, text=True)
    assert r.returncode == 1 and str(e.value) in r.stderr and missing in str(e.value)
    assert e.value.status == -3 and e.value.status_name == "i/o error"


def test_bad_arguments(model_dir, model):
    with pytest.raises(TypeError):  # no deploy profile in the library (README "Python")
        codectalk.Model(model_dir, profile="auto")
    with pytest.raises(ValueError, match="placement 'sideways'"):
        codectalk.Model(model_dir, placement="sideways")
    with pytest.raises(ValueError, match="threads must be an int >= 0"):
        codectalk.Model(model_dir, threads=-1)
    with pytest.raises(codectalk.CodectalkError, match="weights"):
        codectalk.Model(model_dir, weights="int3")
    with pytest.raises(ValueError, match="seed must be an int"):
        model.synthesize(TEXT, seed=-1)
    with pytest.raises(TypeError, match="voice must be a str"):
        model.synthesize(TEXT, voice=7)
    with pytest.raises(ValueError, match="text contains a NUL"):
        model.synthesize("a\0b")
    with pytest.raises(TypeError):
        codectalk.Model(None)
    with codectalk.Model(pathlib.Path(model_dir)) as m:  # an os.PathLike
        assert m.voices == model.voices


def test_settings_reach_the_engine(model_dir, bin_path, tmp_path):
    with codectalk.Model(model_dir, weights="int8", placement="overlapped", threads=1) as m:
        assert m.weights == ("int8", "int8")
        assert m.placement == "overlapped" and m.threads == 1
        audio, _ = m.synthesize(TEXT, **REQ)
    wav = tmp_path / "q.wav"
    subprocess.run([bin_path, "synth", "-m", model_dir, "--profile", "none", "--weights", "int8",
                    "--placement", "overlapped", "--threads", "1", "--float", "-o", str(wav)]
                   + CLI_REQ, check=True)
    assert np.array_equal(audio, wav_float32(wav.read_bytes()))
    with codectalk.Model(model_dir, placement="serial") as m:
        assert m.placement == "serial"


def os_threads():
    return len(os.listdir("/proc/self/task"))


def test_close_frees_and_refuses(model_dir):
    base = os_threads()
    m = codectalk.Model(model_dir)
    assert os_threads() > base  # the engine's threads
    m.close()
    assert os_threads() == base
    m.close()
    with pytest.raises(ValueError, match="the model is closed"):
        m.synthesize(TEXT, **REQ)
    with codectalk.Model(model_dir) as m:
        assert os_threads() > base
    assert os_threads() == base
    m = codectalk.Model(model_dir)
    del m  # the last reference: the engine stops
    gc.collect()
    assert os_threads() == base


def test_gil_released_while_the_engine_works(model):
    """A request queued behind another waits inside one ct_stream_read call; a Python thread
    keeps ticking meanwhile (with the GIL held there, no tick could happen until it returns)."""
    ticks, stop = [], threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.002)

    ga = model.stream(TEXT, **REQ)
    next(ga)  # request A runs on the engine's one slot
    wait = {}

    def request_b():
        gb = model.stream(TEXT, voice="ryan", language="english", seed=5)
        wait["t0"] = time.monotonic()
        next(gb)  # queued until A has finished generating
        wait["t1"] = time.monotonic()
        list(gb)

    t = threading.Thread(target=ticker)
    t.start()
    b = threading.Thread(target=request_b)
    b.start()
    b.join(120)
    rest = list(ga)
    stop.set()
    t.join()
    assert not b.is_alive() and rest
    t0, t1 = wait["t0"], wait["t1"]
    inside = [x for x in ticks if t0 <= x <= t1]
    gaps = np.diff([t0] + inside + [t1])
    assert t1 - t0 > 0.1, "request B did not wait for A (%.3f s): the test shows nothing" % (t1 - t0)
    assert gaps.max() < 0.5 * (t1 - t0), (gaps.max(), t1 - t0)


def test_struct_mirror_checked(tmp_path):
    # a mirror that differs from the library's struct is refused at load, naming both sizes
    code = (
        "import ctypes, codectalk._lib as L\n"
        "class G(ctypes.Structure):\n"
        "    _fields_ = L.GenParams._fields_ + [('extra', ctypes.c_double)]\n"
        "L._FUNCS['ct_gen_params_default'] = (G, [])\n"
        "L.GenParams = G\n"
        "try:\n"
        "    L.load()\n"
        "except ImportError as e:\n"
        "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=str(tmp_path)).stdout
    assert "ct_gen_params_default() gives size %d" % ctypes.sizeof(_lib.GenParams) in out
    assert "the Python mirror has %d bytes" % (ctypes.sizeof(_lib.GenParams) + 8) in out
