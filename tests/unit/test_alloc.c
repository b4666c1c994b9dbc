/* The frame loop allocates nothing (start may: the tokenizer sizes its scratch per text): malloc/calloc/realloc are wrapped at link time and
   counted while frames are generated. */
#include <stddef.h>
#include <string.h>

#include "codectalk.h"
#include "ct_test.h"
#include "test_models.h"

static volatile int counting;
static volatile long n_alloc;

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n) {
    if (counting) n_alloc++;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t a, size_t b) {
    if (counting) n_alloc++;
    return __real_calloc(a, b);
}
void *__wrap_realloc(void *p, size_t n) {
    if (counting) n_alloc++;
    return __real_realloc(p, n);
}

int main(void) {
    char err[1024];
    const char *dir = ct_test_make("tiny", "alloc-tiny", 2);
    ct_model *m = NULL;
    CHECK(dir && ct_model_load(dir, NULL, &m, err, sizeof err) == CT_OK);
    if (!m) return ct_test_finish();
    ct_session *s = NULL;
    CHECK(ct_session_create(m, NULL, &s, err, sizeof err) == CT_OK);
    ct_gen_params g = ct_gen_params_default();
    g.text = "Count every allocation in the frame loop.";
    g.speaker = "aiden";
    g.max_frames = 30;
    g.non_streaming = 0;
    /* the probe itself must see allocations, or the check below proves nothing */
    counting = 1;
    void *p = malloc(16);
    counting = 0;
    free(p);
    CHECK(n_alloc == 1);
    n_alloc = 0;
    ct_status st = ct_session_start(s, &g);
    counting = 1;
    int frames = 0, got = 1;
    int32_t codes[16];
    while (st == CT_OK && got) {
        st = ct_session_next_frame(s, codes, &got);
        frames += got;
    }
    counting = 0;
    CHECK(st == CT_OK);
    CHECK(frames > 2);
    CHECKF(n_alloc == 0, "%ld allocations during %d frames", n_alloc, frames);
    ct_session_free(s);
    ct_model_free(m);
    return ct_test_finish();
}
