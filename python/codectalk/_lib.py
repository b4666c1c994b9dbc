"""ctypes declarations of the public C API (include/codectalk.h) that the Python package calls,
loaded from the libcodectalk.so installed next to this file (python/CMakeLists.txt).

The structs mirror the header field by field. Each *_default() constructor sets `size` to the
struct's size in C; load() compares it with the size of the mirror here and refuses a library
whose structs differ. ct_voice_info has no size field; the tests compare what it gives with
`codectalk voice info`. ctypes releases the GIL during every foreign call."""
import ctypes
import os

from ctypes import (POINTER, Structure, c_char_p, c_double, c_float, c_int, c_int32, c_size_t,
                    c_uint64, c_void_p)

CT_OK = 0
CT_ERR_INVALID_ARG = -1
CT_PLACEMENT_OVERLAPPED, CT_PLACEMENT_SERIAL, CT_PLACEMENT_AUTO = 0, 1, 2
CT_OUTPUT_PCM, CT_OUTPUT_CODES = 0, 1
CT_STREAM_FAILED = 4


class ModelParams(Structure):
    _fields_ = [("size", c_size_t), ("tokenizer_dir", c_char_p), ("f32_weights", c_int),
                ("weights", c_char_p), ("talker_weights", c_char_p), ("predictor_weights", c_char_p),
                ("cache_dir", c_char_p), ("weight_panels", c_int)]


class ModelInfo(Structure):
    _fields_ = [("kind", c_char_p), ("size_tag", c_char_p), ("talker_hidden", c_int),
                ("talker_layers", c_int), ("pred_hidden", c_int), ("pred_layers", c_int),
                ("n_groups", c_int), ("codebook_size", c_int), ("n_speakers", c_int),
                ("n_languages", c_int), ("weight_bytes", c_uint64), ("talker_weights", c_char_p),
                ("predictor_weights", c_char_p), ("weights_source", c_char_p), ("weights_file", c_char_p),
                ("converted", c_int), ("cache_file", c_char_p), ("cache_warning", c_char_p),
                ("packed_bytes", c_uint64), ("panels_source", c_char_p), ("panels_note", c_char_p)]


class GenParams(Structure):
    _fields_ = [("size", c_size_t), ("text", c_char_p), ("speaker", c_char_p),
                ("language", c_char_p), ("instruct", c_char_p), ("xvector", POINTER(c_float)),
                ("xvector_len", c_int), ("non_streaming", c_int), ("seed", c_uint64),
                ("greedy", c_int), ("temperature", c_float), ("top_p", c_float),
                ("repetition_penalty", c_float), ("top_k", c_int), ("sub_temperature", c_float),
                ("sub_top_p", c_float), ("sub_top_k", c_int), ("min_new_tokens", c_int),
                ("max_new_tokens", c_int), ("max_frames", c_int), ("budget_base", c_int),
                ("budget_per_token", c_float), ("ref_codes", POINTER(c_int32)), ("ref_frames", c_int),
                ("ref_text", c_char_p), ("prompt_reuse", c_int)]


class EngineParams(Structure):
    _fields_ = [("size", c_size_t), ("max_streams", c_int), ("queue_cap", c_int),
                ("max_context", c_int), ("kv_budget_bytes", c_uint64), ("placement", c_int),
                ("talker_threads", c_int), ("talker_cpus", POINTER(c_int)),
                ("n_talker_cpus", c_int), ("codec_threads", c_int), ("codec_cpus", POINTER(c_int)),
                ("n_codec_cpus", c_int), ("queue_frames", c_int), ("max_chunk_frames", c_int),
                ("safety_margin_ms", c_double), ("max_defer_ms", c_double), ("buffer_ms", c_int),
                ("warmup", c_int), ("prefill_chunk_tokens", c_int), ("frame_ms_fixed", c_double),
                ("frame_ms_per_stream", c_double), ("prompt_cache_bytes", c_uint64)]


class EngineLimits(Structure):
    _fields_ = [("max_streams", c_int), ("queue_cap", c_int), ("max_context", c_int),
                ("sample_rate", c_int), ("samples_per_frame", c_int), ("n_groups", c_int),
                ("placement", c_int), ("talker_threads", c_int), ("codec_threads", c_int),
                ("max_chunk_frames", c_int), ("kv_budget_bytes", c_uint64),
                ("kv_bytes_per_token", c_uint64), ("kv_bytes_per_stream", c_uint64),
                ("safety_margin_ms", c_double), ("prefill_chunk_tokens", c_int)]


class StreamParams(Structure):
    _fields_ = [("size", c_size_t), ("schedule", c_char_p), ("windowed", c_int),
                ("context_frames", c_int), ("utterance_bytes", c_int), ("output", c_int),
                ("deadline_ms", c_int), ("first_audio_timeout_ms", c_int),
                ("sentence_pause_ms", c_int), ("paragraph_pause_ms", c_int),
                ("text_incremental", c_int), ("text_idle_timeout_ms", c_int), ("normalize", c_int)]


class StreamInfo(Structure):
    _fields_ = [("state", c_int), ("status", c_int), ("stop", c_int), ("utterances", c_int),
                ("utterance", c_int), ("text_tokens", c_int), ("prompt_len", c_int),
                ("frames", c_int), ("chunks", c_int), ("samples", c_uint64),
                ("queue_ms", c_double), ("first_frame_ms", c_double), ("ttfa_ms", c_double),
                ("done_ms", c_double), ("prefill_ms", c_double), ("step_ms", c_double),
                ("codec_ms", c_double), ("talker_ms", c_double), ("predictor_ms", c_double),
                ("stalls", c_int), ("stall_ms", c_double), ("prefill_passes", c_int),
                ("prompt_reused", c_int)]


class VoiceInfo(Structure):
    _fields_ = [("version", c_int), ("xvector_len", c_int), ("ref_frames", c_int),
                ("n_groups", c_int), ("ref_text", c_char_p), ("model_hash", c_char_p),
                ("model_name", c_char_p), ("audio_sha256", c_char_p), ("n_samples", c_uint64),
                ("created_by", c_char_p)]


_ERR = c_char_p  # char *err (a ctypes string buffer)
# name: (restype, argtypes)
_FUNCS = {
    "ct_version": (c_char_p, []),
    "ct_status_str": (c_char_p, [c_int]),
    "ct_model_params_default": (ModelParams, []),
    "ct_model_load": (c_int, [c_char_p, POINTER(ModelParams), POINTER(c_void_p), _ERR, c_size_t]),
    "ct_model_free": (None, [c_void_p]),
    "ct_model_get_info": (ModelInfo, [c_void_p]),
    "ct_model_speaker": (c_char_p, [c_void_p, c_int]),
    "ct_model_language": (c_char_p, [c_void_p, c_int]),
    "ct_gen_params_default": (GenParams, []),
    "ct_stop_reason_str": (c_char_p, [c_int]),
    "ct_codec_load": (c_int, [c_char_p, POINTER(c_void_p), _ERR, c_size_t]),
    "ct_codec_free": (None, [c_void_p]),
    "ct_placement_parse": (c_int, [c_char_p, POINTER(c_int)]),
    "ct_placement_str": (c_char_p, [c_int]),
    "ct_engine_params_default": (EngineParams, []),
    "ct_engine_create": (c_int, [c_void_p, c_void_p, POINTER(EngineParams), POINTER(c_void_p),
                                 _ERR, c_size_t]),
    "ct_engine_free": (None, [c_void_p]),
    "ct_engine_get_limits": (EngineLimits, [c_void_p]),
    "ct_stream_params_default": (StreamParams, []),
    "ct_engine_submit": (c_int, [c_void_p, POINTER(GenParams), POINTER(StreamParams),
                                 POINTER(c_void_p), _ERR, c_size_t]),
    "ct_stream_read": (c_size_t, [c_void_p, POINTER(c_float), c_size_t, c_int, POINTER(c_int)]),
    "ct_stream_read_codes": (c_size_t, [c_void_p, POINTER(c_int32), c_size_t, c_int,
                                        POINTER(c_int)]),
    "ct_stream_cancel": (None, [c_void_p]),
    "ct_stream_release": (None, [c_void_p]),
    "ct_stream_get_info": (StreamInfo, [c_void_p]),
    "ct_stream_errmsg": (c_char_p, [c_void_p]),
    "ct_model_hash": (c_char_p, [c_void_p]),
    "ct_speech_encoder_load": (c_int, [c_char_p, POINTER(c_void_p), _ERR, c_size_t]),
    "ct_speech_encoder_free": (None, [c_void_p]),
    "ct_voice_create": (c_int, [c_void_p, c_void_p, POINTER(c_float), c_size_t, c_char_p,
                                POINTER(c_void_p), _ERR, c_size_t]),
    "ct_voice_save": (c_int, [c_void_p, c_char_p, _ERR, c_size_t]),
    "ct_voice_load": (c_int, [c_void_p, c_char_p, POINTER(c_void_p), _ERR, c_size_t]),
    "ct_voice_free": (None, [c_void_p]),
    "ct_voice_get_info": (VoiceInfo, [c_void_p]),
    "ct_voice_apply": (None, [c_void_p, POINTER(GenParams), c_int]),
}

_lib = None


def path():
    """The libcodectalk.so this package loads: the one installed in the package directory."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libcodectalk.so")


def load():
    """The loaded library with every function above declared (loaded once)."""
    global _lib
    if _lib is not None:
        return _lib
    p = path()
    try:
        lib = ctypes.CDLL(p)
    except OSError as e:
        raise ImportError("codectalk: cannot load the C library '%s': %s" % (p, e)) from None
    for name, (res, args) in _FUNCS.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    for ctor, struct in (("ct_model_params_default", ModelParams), ("ct_gen_params_default", GenParams),
                         ("ct_engine_params_default", EngineParams),
                         ("ct_stream_params_default", StreamParams)):
        size = getattr(lib, ctor)().size
        if size != ctypes.sizeof(struct):
            raise ImportError("codectalk: '%s' is not the library this package was built for: %s() "
                              "gives size %d, the Python mirror has %d bytes"
                              % (p, ctor, size, ctypes.sizeof(struct)))
    _lib = lib
    return lib
