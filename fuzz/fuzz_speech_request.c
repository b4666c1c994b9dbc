/* Fuzz target: arbitrary bytes as a POST /v1/audio/speech body, parsed for a CustomVoice model
   and for a Base (clone) model. The parser must never crash; an accepted request must satisfy
   every documented invariant, a refused one must carry a 4xx/5xx error that renders as OpenAI
   error JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audio/encode.h"
#include "serve/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const voices[] = {"vivian", "ryan", "uncle_fu"};
    static const char *const langs[] = {"english", "chinese"};
    static const char *const models[] = {"tts-1"}, *const aliases[] = {"alloy"}, *const targets[] = {"vivian"};
    ct_speech_ctx ctx = {"tiny", voices, 3, langs, 2, 64, 4096, models, 1, aliases, targets, 1, 0};
    ct_speech_ctx cl = {"tiny", NULL, 0, langs, 2, 64, 4096, models, 1, NULL, NULL, 0, 1};
    ct_speech_request r;
    ct_api_error e;
    memset(&e, 0, sizeof e);
    ct_status st = ct_speech_request_parse((const char *)data, size, &cl, &r, &e);
    if (st == CT_OK) { /* the clone fields' invariants */
        size_t vl = strlen(r.clone_voice);
        if ((r.ref_audio == NULL) != (r.ref_audio_len == 0) || vl > 64 || (r.ref_audio && vl) || r.voice[0] ||
            strspn(r.clone_voice, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != vl ||
            (r.ref_text && !r.ref_audio) || (r.x_vector_only && !r.ref_audio && !vl))
            __builtin_trap();
        ct_speech_request_free(&r);
    } else if (r.ref_audio || r.ref_text || e.http_status < 400) {
        __builtin_trap();
    }
    st = ct_speech_request_parse((const char *)data, size, &ctx, &r, &e);
    if (st != CT_OK) {
        if (r.input || r.instructions || r.ref_audio || r.ref_text) __builtin_trap();
        if (e.http_status < 400 || e.http_status > 599 || !memchr(e.message, 0, sizeof e.message) || !e.message[0])
            __builtin_trap();
        char *js = ct_api_error_json(&e);
        if (js) {
            json_error_t je;
            json_t *j = json_loads(js, 0, &je);
            if (!j || !json_is_string(json_object_get(json_object_get(j, "error"), "message"))) __builtin_trap();
            json_decref(j);
            free(js);
        }
        return 0;
    }
    if (!r.input || r.input_chars == 0 || r.input_chars > 64 || ct_utf8_count(r.input, strlen(r.input)) !=
                                                                     (long)r.input_chars)
        __builtin_trap();
    int vi = 0;
    for (int i = 0; i < 3; i++) vi |= strcmp(r.voice, voices[i]) == 0;
    if (!vi || r.ref_audio || r.ref_text || r.x_vector_only || r.clone_voice[0]) __builtin_trap();
    if (strcmp(r.language, "auto") && strcmp(r.language, "english") && strcmp(r.language, "chinese")) __builtin_trap();
    if (r.max_new_tokens < 0 || r.max_new_tokens > 4096 || r.initial_chunk_frames < -1 || r.top_k < -1 ||
        r.format < CT_RESP_WAV || r.format > CT_RESP_ENCODED || r.audio_format < 0 || r.audio_format >= CT_AF_COUNT ||
        !(r.speed >= 0.25f && r.speed <= 4.0f) || r.mode > CT_MODE_SSE || r.non_streaming < -1 ||
        r.non_streaming > 1 || (r.top_p >= 0 && r.top_p > 1) || r.temperature > 10)
        __builtin_trap();
    ct_speech_request_free(&r);
    return 0;
}
