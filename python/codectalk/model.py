"""codectalk.Model: a Qwen3-TTS checkpoint on the stream engine of libcodectalk, through its
public C API (include/codectalk.h) only; codectalk.Voice: a voice cloned with a Base model
(docs/CLONING.md), made from 24 kHz samples or read from a voice file.

One Model holds the loaded model, its codec and one engine (ct_engine_create) with one stream
slot; synthesize, stream and codes each submit a request to it (ct_engine_submit) and read the
result as the engine produces it (ct_stream_read / ct_stream_read_codes). The C calls release the
GIL, so other Python threads run while the engine works; requests from several threads queue for
the slot."""
import ctypes
import os
import threading

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


def _err(err):
    return err.value.decode(errors="replace")


def _b(s, what):
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError("codectalk: %s must be a str, not %s" % (what, type(s).__name__))
    if "\0" in s:
        raise ValueError("codectalk: %s contains a NUL character" % what)
    return s.encode()


class VoiceInfo:
    """What a Voice holds (ct_voice_get_info): mode "icl" (x-vector, reference codes and
    transcript) or "x_vector_only"; ref_text (None for x-vector-only); model_name and
    model_hash of the model it was made with; ref_frames (reference codes, 0 for x-vector-only)
    and n_groups (codes per frame); n_samples of the reference at 24 kHz and their audio_sha256;
    xvector_len; the voice file version and created_by."""

    __slots__ = ("mode", "ref_text", "model_name", "model_hash", "ref_frames", "n_groups",
                 "n_samples", "audio_sha256", "xvector_len", "version", "created_by")

    def __init__(self, i):
        s = lambda b: None if b is None else b.decode(errors="replace")
        self.mode = "icl" if i.ref_frames else "x_vector_only"
        self.ref_text, self.model_name, self.model_hash = s(i.ref_text), s(i.model_name), s(i.model_hash)
        self.ref_frames, self.n_groups, self.n_samples = i.ref_frames, i.n_groups, i.n_samples
        self.audio_sha256, self.xvector_len = s(i.audio_sha256), i.xvector_len
        self.version, self.created_by = i.version, s(i.created_by)

    def __repr__(self):
        return "VoiceInfo(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.__slots__)


class Voice:
    """A cloned voice (ct_voice): the reference clip's x-vector and, for an ICL voice, its
    reference codes and transcript, tied to the model it was made with. Made by
    Model.create_voice or Model.load_voice; passed as voice= to synthesize, stream and codes of
    a Model of that checkpoint. `info` says what it holds (VoiceInfo); save(path) writes the
    voice file that `codectalk synth --voice`, `voice info` and the server read. close() (or a
    with block) frees it; it is independent of the Model, which may be closed first."""

    def __init__(self, handle):
        # not for direct use: Model.create_voice / Model.load_voice make Voices
        self._lib = _lib.load()
        self._h = handle
        self._lock = threading.Lock()  # close() waits for a request that is submitting it
        self.info = VoiceInfo(self._lib.ct_voice_get_info(handle))

    def _handle(self):
        if self._h is None:
            raise ValueError("codectalk: the voice is closed")
        return self._h

    def save(self, path):
        """Writes the voice file (docs/CLONING.md "Voices and voice files") to path, through
        path.partial renamed at the end: nothing is left at path on failure (CodectalkError)."""
        bpath = _b(os.fspath(path), "path")
        err = ctypes.create_string_buffer(1024)
        with self._lock:
            st = self._lib.ct_voice_save(self._handle(), bpath, err, len(err))
        if st != _lib.CT_OK:
            raise CodectalkError(_err(err), st)

    def close(self):
        """Frees the voice; later use raises ValueError. Idempotent."""
        with self._lock:
            if self._h is not None:
                self._lib.ct_voice_free(self._h)
                self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_lock", None) is not None:
            self.close()

    def __repr__(self):
        i = self.info
        return "<codectalk.Voice %s, model %s%s>" % (i.mode, i.model_name,
                                                      "" if self._h is not None else ", closed")


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

    Base models clone voices: create_voice (from 24 kHz samples) and load_voice (a voice file)
    give a Voice to pass as voice=.
    """

    def __init__(self, path, *, weights=None, placement="auto", threads=0):
        lib = _lib.load()
        self._lib = lib
        self._model = self._codec = self._engine = self._encoder = None
        self._enc_lock = threading.Lock()
        self._hash = None
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 0:
            raise ValueError("codectalk: threads must be an int >= 0 (0 = the engine decides), "
                             "not %r" % (threads,))
        place = ctypes.c_int()
        if lib.ct_placement_parse(_b(placement, "placement"), ctypes.byref(place)) != _lib.CT_OK:
            raise ValueError("codectalk: placement %r: expected 'auto', 'serial' or 'overlapped'"
                             % (placement,))
        bpath = _b(os.fspath(path), "path")  # a str or an os.PathLike
        self._path = bpath  # the speech-tokenizer encoder is loaded from it when ICL needs it
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
        # as the library names a model in voice messages (ct_voice_get_info's model_name)
        self._voice_model_name = "%s-%s" % (info.size_tag.decode() or "unknown", self.kind)
        self.weights = (info.talker_weights.decode(), info.predictor_weights.decode())
        self.placement = lib.ct_placement_str(lim.placement).decode()
        self.threads = lim.talker_threads

    # -- resources --------------------------------------------------------------------------

    def close(self):
        """Stops the engine and frees the model, codec and speech-tokenizer encoder; later calls
        raise. Voices made with it stay usable with another Model of the same checkpoint.
        Idempotent."""
        lib = self._lib
        with self._enc_lock:
            if self._encoder is not None:
                lib.ct_speech_encoder_free(self._encoder)
                self._encoder = None
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

    # -- cloned voices (Base models; docs/CLONING.md) ---------------------------------------

    def _check_open(self):
        if self._engine is None:
            raise ValueError("codectalk: the model is closed")

    @property
    def model_hash(self):
        """The model's identity for voices (ct_model_hash, hex SHA-256): a Voice works with
        every Model whose model_hash equals its info.model_hash."""
        self._check_open()
        if self._hash is None:
            self._hash = self._lib.ct_model_hash(self._model).decode()
        return self._hash

    def _speech_encoder(self):
        """The speech-tokenizer encoder (ct_speech_encoder_load on the model directory), loaded
        on the first ICL voice and kept until close()."""
        with self._enc_lock:
            if self._encoder is None:
                err = ctypes.create_string_buffer(1024)
                h = ctypes.c_void_p()
                st = self._lib.ct_speech_encoder_load(self._path, ctypes.byref(h), err, len(err))
                if st != _lib.CT_OK:
                    raise CodectalkError(_err(err), st)
                self._encoder = h
            return self._encoder

    def create_voice(self, audio, ref_text=None, *, sample_rate=24000):
        """Clones the voice of a reference clip (ct_voice_create): audio is a one-dimensional
        float32 NumPy array of mono samples at 24000 Hz (24 kHz) in [-1, 1], at least 1 s long.
        With ref_text, the transcript of the whole clip, the Voice is an ICL voice (x-vector,
        the clip's codes through the speech-tokenizer encoder, and the transcript); without, an
        x-vector-only voice (the speaker's timbre alone).

        The library takes 24 kHz samples only: sample_rate is there to refuse others. Resample
        another rate to 24 kHz first, average channels to mono, or make the voice from the file
        with `codectalk voice create` (WAV, FLAC, Ogg, MP3 at any rate), then load_voice it.
        Needs a Base model; a refusal (not Base, under 1 s, a non-finite sample) raises
        CodectalkError with the library's message."""
        self._check_open()
        if not isinstance(audio, np.ndarray):
            raise TypeError("codectalk: audio must be a float32 NumPy array of 24 kHz mono samples, "
                            "not %s" % type(audio).__name__)
        if audio.dtype != np.float32:
            raise TypeError("codectalk: audio must be float32 samples in [-1, 1] (24 kHz mono), not "
                            "%s (int16 samples: audio.astype(np.float32) / 32768)" % audio.dtype)
        if audio.ndim != 1:
            raise ValueError("codectalk: audio must be one-dimensional (mono samples), not shape %s; "
                             "average the channels to mono first" % (audio.shape,))
        if isinstance(sample_rate, bool) or sample_rate != 24000:
            raise ValueError("codectalk: the reference audio must be at 24000 Hz, not %r: resample it "
                             "to 24 kHz first, or make the voice from the file with `codectalk voice "
                             "create` (it reads and resamples WAV, FLAC, Ogg and MP3) and load_voice "
                             "the result" % (sample_rate,))
        if ref_text is not None and isinstance(ref_text, str) and not ref_text:
            raise ValueError("codectalk: ref_text is empty: give the transcript of the whole clip "
                             "(ICL), or None for an x-vector-only voice")
        bt = _b(ref_text, "ref_text")
        pcm = np.ascontiguousarray(audio)
        enc = self._speech_encoder() if bt is not None else None
        err = ctypes.create_string_buffer(1024)
        h = ctypes.c_void_p()
        st = self._lib.ct_voice_create(self._model, enc,
                                       pcm.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), pcm.size,
                                       bt, ctypes.byref(h), err, len(err))
        if st != _lib.CT_OK:
            raise CodectalkError(_err(err), st)
        return Voice(h)

    def load_voice(self, path):
        """Reads a voice file (from Voice.save, `codectalk voice create` or the server's voices
        directory) for this model (ct_voice_load): a file made with another model, corrupt,
        truncated or of another version raises CodectalkError with the library's message."""
        self._check_open()
        bpath = _b(os.fspath(path), "path")
        err = ctypes.create_string_buffer(1024)
        h = ctypes.c_void_p()
        st = self._lib.ct_voice_load(self._model, bpath, ctypes.byref(h), err, len(err))
        if st != _lib.CT_OK:
            raise CodectalkError(_err(err), st)
        return Voice(h)

    def _voice_mine(self, v):
        # ct_voice_apply and the request carry no model identity: the check ct_voice_load makes,
        # with its message (a voice of a non-Base model cannot exist, so its hash differs too)
        if v.info.model_hash != self.model_hash:
            raise CodectalkError("voice was made with another model: voice model hash %s (%s), this "
                                 "model's hash %s (%s)" % (v.info.model_hash, v.info.model_name,
                                                           self.model_hash, self._voice_model_name),
                                 _lib.CT_ERR_INVALID_ARG)

    # -- requests ---------------------------------------------------------------------------

    def _submit(self, text, voice, language, instructions, seed, output, x_vector_only):
        self._check_open()
        lib = self._lib
        if not isinstance(text, str):
            raise TypeError("codectalk: text must be a str, not %s" % type(text).__name__)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2 ** 64:
            raise ValueError("codectalk: seed must be an int in [0, 2**64), not %r" % (seed,))
        if not isinstance(x_vector_only, bool):
            raise TypeError("codectalk: x_vector_only must be a bool, not %s"
                            % type(x_vector_only).__name__)
        cloned = voice if isinstance(voice, Voice) else None
        if cloned is None and voice is not None and not isinstance(voice, str):
            raise TypeError("codectalk: voice must be a str (a speaker) or a codectalk.Voice, not %s"
                            % type(voice).__name__)
        if x_vector_only and cloned is None:
            raise ValueError("codectalk: x_vector_only applies to a cloned voice (voice=a "
                             "codectalk.Voice), not to %r" % (voice,))
        g = lib.ct_gen_params_default()
        # the bytes objects must outlive the submit (which copies them)
        keep = [_b(text, "text"), None if cloned else _b(voice, "voice"), _b(language, "language"),
                _b(instructions, "instructions")]
        g.text, g.speaker, g.language, g.instruct = keep
        g.seed = seed
        sp = lib.ct_stream_params_default()
        sp.output = output
        if output == _lib.CT_OUTPUT_CODES:
            sp.utterance_bytes = 0  # the whole text is one prompt, as `codectalk codes` runs it
        err = ctypes.create_string_buffer(1024)
        h = ctypes.c_void_p()
        if cloned is None:
            st = lib.ct_engine_submit(self._engine, ctypes.byref(g), ctypes.byref(sp),
                                      ctypes.byref(h), err, len(err))
        else:
            self._voice_mine(cloned)
            # g borrows the voice's data until the submit has copied it; the lock keeps a
            # concurrent close() from freeing it before
            with cloned._lock:
                lib.ct_voice_apply(cloned._handle(), ctypes.byref(g), int(x_vector_only))
                st = lib.ct_engine_submit(self._engine, ctypes.byref(g), ctypes.byref(sp),
                                          ctypes.byref(h), err, len(err))
        if st != _lib.CT_OK:
            raise CodectalkError(_err(err), st)
        return h

    def _check_done(self, s):
        info = self._lib.ct_stream_get_info(s)
        if info.state == _lib.CT_STREAM_FAILED:
            raise CodectalkError(self._lib.ct_stream_errmsg(s).decode(errors="replace"), info.status)

    def stream(self, text, voice=None, language=None, instructions=None, seed=0, *,
               x_vector_only=False):
        """Yields the audio as float32 NumPy arrays (mono, in [-1, 1], at sample_rate) as the
        engine decodes it. voice: a speaker of `voices` (CustomVoice models) or a Voice (Base
        models: a clone made with this checkpoint; a Voice of another model raises
        CodectalkError); x_vector_only: with an ICL Voice, clone from its x-vector alone;
        language: a name of `languages` or a code ("en", "de-DE"), None = auto; instructions: the
        instruction text (VoiceDesign and 1.7B CustomVoice); seed: replays exactly. A failed
        request raises CodectalkError with the library's message; closing the generator early
        cancels it."""
        s = self._submit(text, voice, language, instructions, seed, _lib.CT_OUTPUT_PCM,
                         x_vector_only)
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

    def synthesize(self, text, voice=None, language=None, instructions=None, seed=0, *,
                   x_vector_only=False):
        """The whole utterance: (float32 NumPy array, sample_rate). Arguments as for stream()."""
        chunks = list(self.stream(text, voice, language, instructions, seed,
                                  x_vector_only=x_vector_only))
        audio = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
        return audio, self.sample_rate

    def codes(self, text, voice=None, language=None, instructions=None, seed=0, *,
              x_vector_only=False):
        """The codec frames instead of audio: an int32 NumPy array [frames, 16] (codebook 0
        first), as `codectalk codes` gives them: the whole text is one prompt (synthesize and
        stream split long text into utterances of about 300 bytes, utterance k with seed + k).
        Arguments as for stream(); with an ICL Voice the frames are the new speech only (the
        reference frames are not repeated)."""
        s = self._submit(text, voice, language, instructions, seed, _lib.CT_OUTPUT_CODES,
                         x_vector_only)
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
