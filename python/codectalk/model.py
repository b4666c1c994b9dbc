"""codectalk.Model: a Qwen3-TTS checkpoint on the stream engine of libcodectalk, through its
public C API (include/codectalk.h) only.

One Model holds the loaded model, its codec and one engine (ct_engine_create) with one stream
slot; synthesize, stream and codes each submit a request to it (ct_engine_submit) and read the
result as the engine produces it (ct_stream_read / ct_stream_read_codes). The C calls release the
GIL, so other Python threads run while the engine works; requests from several threads queue for
the slot."""
import ctypes
import os

import numpy as np

from . import _lib

_READ_SAMPLES = 8192  # samples per ct_stream_read call
_READ_FRAMES = 64     # frames per ct_stream_read_codes call


class CodectalkError(Exception):
    """A failed library call: str(e) is the library's message, e.status its ct_status (a
    negative CT_ERR_* value) and e.status_name the library's description of it."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status
        self.status_name = _lib.load().ct_status_str(status).decode()


def _b(s, what):
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError("codectalk: %s must be a str, not %s" % (what, type(s).__name__))
    if "\0" in s:
        raise ValueError("codectalk: %s contains a NUL character" % what)
    return s.encode()


class Model:
    """Model(path, *, weights=None, placement="auto", threads=0)

    path: a checkpoint directory (config.json, model.safetensors, tokenizer files and the codec
    in speech_tokenizer/), as for `codectalk synth -m`.

    The library's own settings apply: weights as stored, placement auto (one serial pool on 2 or
    fewer CPUs, else the talker and the codec side by side), the engine's thread counts, the
    exact chunk schedule, 300-byte utterances: the plain defaults `codectalk synth --profile
    none` runs with, so the audio equals its output for the same text, voice, language and
    seed. The program's deploy profile (cost model, calibration, profile files) is not part of
    the public C API, so there is no profile here; the settings the API takes are these:
      weights    "bf16" / "stored" (as stored), "int8", "int4" or "mixed" (ct_model_params.weights)
      placement  "auto", "serial" or "overlapped" (ct_engine_params.placement)
      threads    talker threads, 0 = the engine decides (ct_engine_params.talker_threads)
    """

    def __init__(self, path, *, weights=None, placement="auto", threads=0):
        lib = _lib.load()
        self._lib = lib
        self._model = self._codec = self._engine = None
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 0:
            raise ValueError("codectalk: threads must be an int >= 0 (0 = the engine decides), "
                             "not %r" % (threads,))
        place = ctypes.c_int()
        if lib.ct_placement_parse(_b(placement, "placement"), ctypes.byref(place)) != _lib.CT_OK:
            raise ValueError("codectalk: placement %r: expected 'auto', 'serial' or 'overlapped'"
                             % (placement,))
        bpath = _b(os.fspath(path), "path")  # a str or an os.PathLike
        err = ctypes.create_string_buffer(1024)
        mp = lib.ct_model_params_default()
        mp.weights = _b(weights, "weights")
        h = ctypes.c_void_p()
        st = lib.ct_model_load(bpath, ctypes.byref(mp), ctypes.byref(h), err, len(err))
        if st != _lib.CT_OK:
            raise CodectalkError(err.value.decode(errors="replace"), st)
        self._model = h
        try:
            h = ctypes.c_void_p()
            st = lib.ct_codec_load(bpath, ctypes.byref(h), err, len(err))
            if st != _lib.CT_OK:
                raise CodectalkError(err.value.decode(errors="replace"), st)
            self._codec = h
            ep = lib.ct_engine_params_default()
            ep.placement = place.value
            ep.talker_threads = threads
            h = ctypes.c_void_p()
            st = lib.ct_engine_create(self._model, self._codec, ctypes.byref(ep), ctypes.byref(h),
                                      err, len(err))
            if st != _lib.CT_OK:
                raise CodectalkError(err.value.decode(errors="replace"), st)
            self._engine = h
        except BaseException:
            self.close()
            raise
        info = lib.ct_model_get_info(self._model)
        lim = lib.ct_engine_get_limits(self._engine)
        self.sample_rate = lim.sample_rate
        self.voices = [lib.ct_model_speaker(self._model, i).decode() for i in range(info.n_speakers)]
        self.languages = [lib.ct_model_language(self._model, i).decode()
                          for i in range(info.n_languages)]
        self.kind = info.kind.decode()
        self.weights = (info.talker_weights.decode(), info.predictor_weights.decode())
        self.placement = lib.ct_placement_str(lim.placement).decode()
        self.threads = lim.talker_threads

    # -- resources --------------------------------------------------------------------------

    def close(self):
        """Stops the engine and frees the model and codec; later calls raise. Idempotent."""
        lib = self._lib
        if self._engine is not None:
            lib.ct_engine_free(self._engine)
            self._engine = None
        if self._codec is not None:
            lib.ct_codec_free(self._codec)
            self._codec = None
        if self._model is not None:
            lib.ct_model_free(self._model)
            self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_lib", None) is not None:
            self.close()

    # -- requests ---------------------------------------------------------------------------

    def _submit(self, text, voice, language, instructions, seed, output):
        if self._engine is None:
            raise ValueError("codectalk: the model is closed")
        lib = self._lib
        if not isinstance(text, str):
            raise TypeError("codectalk: text must be a str, not %s" % type(text).__name__)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 64:
            raise ValueError("codectalk: seed must be an int in [0, 2**64), not %r" % (seed,))
        g = lib.ct_gen_params_default()
        # the bytes objects must outlive the submit (which copies them)
        keep = [_b(text, "text"), _b(voice, "voice"), _b(language, "language"),
                _b(instructions, "instructions")]
        g.text, g.speaker, g.language, g.instruct = keep
        g.seed = seed
        sp = lib.ct_stream_params_default()
        sp.output = output
        if output == _lib.CT_OUTPUT_CODES:
            sp.utterance_bytes = 0  # the whole text is one prompt, as `codectalk codes` runs it
        err = ctypes.create_string_buffer(1024)
        h = ctypes.c_void_p()
        st = lib.ct_engine_submit(self._engine, ctypes.byref(g), ctypes.byref(sp), ctypes.byref(h),
                                  err, len(err))
        if st != _lib.CT_OK:
            raise CodectalkError(err.value.decode(errors="replace"), st)
        return h

    def _check_done(self, s):
        info = self._lib.ct_stream_get_info(s)
        if info.state == _lib.CT_STREAM_FAILED:
            raise CodectalkError(self._lib.ct_stream_errmsg(s).decode(errors="replace"), info.status)

    def stream(self, text, voice=None, language=None, instructions=None, seed=0):
        """Yields the audio as float32 NumPy arrays (mono, in [-1, 1], at sample_rate) as the
        engine decodes it. voice: a speaker of `voices` (CustomVoice models); language: a name of
        `languages` or a code ("en", "de-DE"), None = auto; instructions: the instruction text
        (VoiceDesign and 1.7B CustomVoice); seed: replays exactly. A failed request raises
        CodectalkError with the library's message; closing the generator early cancels it."""
        s = self._submit(text, voice, language, instructions, seed, _lib.CT_OUTPUT_PCM)
        lib = self._lib
        try:
            done = ctypes.c_int(0)
            while True:
                buf = np.empty(_READ_SAMPLES, dtype=np.float32)
                n = lib.ct_stream_read(s, buf.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                       _READ_SAMPLES, -1, ctypes.byref(done))
                if n:
                    yield buf[:n]
                if done.value:
                    break
            self._check_done(s)
        finally:
            lib.ct_stream_release(s)

    def synthesize(self, text, voice=None, language=None, instructions=None, seed=0):
        """The whole utterance: (float32 NumPy array, sample_rate). Arguments as for stream()."""
        chunks = list(self.stream(text, voice, language, instructions, seed))
        audio = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
        return audio, self.sample_rate

    def codes(self, text, voice=None, language=None, instructions=None, seed=0):
        """The codec frames instead of audio: an int32 NumPy array [frames, 16] (codebook 0
        first), as `codectalk codes` gives them: the whole text is one prompt (synthesize and
        stream split long text into utterances of about 300 bytes, utterance k with seed + k).
        Arguments as for stream()."""
        s = self._submit(text, voice, language, instructions, seed, _lib.CT_OUTPUT_CODES)
        lib = self._lib
        groups = lib.ct_engine_get_limits(self._engine).n_groups
        parts = []
        try:
            done = ctypes.c_int(0)
            while not done.value:
                buf = np.empty((_READ_FRAMES, groups), dtype=np.int32)
                n = lib.ct_stream_read_codes(s, buf.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                                             _READ_FRAMES, -1, ctypes.byref(done))
                parts.append(buf[:n])
            self._check_done(s)
        finally:
            lib.ct_stream_release(s)
        return np.concatenate(parts)
