/* ICL voice cloning on a tiny random Base model: the request checks, both ICL prefill layouts
   (rows placed as docs/CLONING.md "ICL and x-vector-only modes" states), the context check, and
   the engine's output cut: ICL PCM equals the decode of (reference + new codes) with the first
   ref_frames * 1920 samples removed, for the exact decoder (one-shot decode) and the windowed
   decoder (the same windows over the concatenation), under several chunk schedules, across
   utterances and in both placements; codes output carries only the new frames. */
#include <string.h>

#include "codec/codec.h"
#include "codectalk.h"
#include "ct_test.h"
#include "model/session_internal.h"
#include "test_models.h"

#define F_REF 7   /* reference frames */
#define NEW 10    /* frames each utterance makes */
#define MAXF 64

/* Token ids of the reference transcript as the prompt uses them (ids[3:-2]) into out; count. */
static int ref_ids(const ct_model *m, const char *ref, int32_t *out) {
    char buf[512];
    snprintf(buf, sizeof buf, "<|im_start|>assistant\n%s<|im_end|>\n", ref);
    int32_t ids[512];
    size_t n = 0;
    char err[256];
    ct_tokenize(m, buf, strlen(buf), ids, 512, &n, err, sizeof err);
    memcpy(out, ids + 3, sizeof(int32_t) * (n - 5));
    return (int)n - 5;
}

static int target_ids(const ct_model *m, const char *text, int32_t *out) {
    char buf[512];
    snprintf(buf, sizeof buf, "<|im_start|>assistant\n%s<|im_end|>\n<|im_start|>assistant\n", text);
    int32_t ids[512];
    size_t n = 0;
    char err[256];
    ct_tokenize(m, buf, strlen(buf), ids, 512, &n, err, sizeof err);
    memcpy(out, ids + 3, sizeof(int32_t) * (n - 8));
    return (int)n - 8;
}

static int rows_equal(const float *a, const float *b, int H) { return memcmp(a, b, sizeof(float) * (size_t)H) == 0; }

/* The text item k of X = [R, T, tts_eos] as a text-embedding row. */
static void x_row(const ct_session *s, const int32_t *R, int nr, const int32_t *T, int nt, int k, float *out,
                  float *tmp) {
    const ct_model *m = s->m;
    int id = k < nr ? R[k] : k < nr + nt ? T[k - nr] : m->cfg.tts_eos;
    ct_embed_text(m, id, out, tmp);
}

static void prompt_checks(ct_model *m, const int32_t *ref, const float *xv) {
    const ct_config *c = &m->cfg;
    const int H = c->talker.hidden, G = c->n_groups;
    ct_session *s = NULL;
    char err[512];
    CHECK(ct_session_create(m, NULL, &s, err, sizeof err) == CT_OK);
    if (!s) return;
    float *want = malloc(sizeof(float) * (size_t)H), *tmp = malloc(sizeof(float) * (size_t)H);
    float *etmp = malloc(sizeof(float) * 2 * (size_t)c->text_hidden);
    const char *rtext = "A reference transcript of the clip, read aloud.";
    const char *text = "Hi there.";
    int32_t R[128], T[128];
    int nr = ref_ids(m, rtext, R), nt = target_ids(m, text, T), nx = nr + nt + 1;
    CHECK(nr > 0 && nt > 0 && nx > F_REF + 1); /* the long-transcript streaming case below */

    ct_gen_params g = ct_gen_params_default();
    g.text = text;
    g.language = "english";
    g.max_frames = 2;
    g.xvector = xv;
    g.xvector_len = H;
    g.ref_codes = ref;
    g.ref_frames = F_REF;

    /* request checks */
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(ct_session_errmsg(s), "ICL needs the reference transcript; use x-vector-only mode without "
                  "ref_codes") != NULL, "%s", ct_session_errmsg(s));
    g.ref_text = "";
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG && strstr(ct_session_errmsg(s), "transcript"));
    g.ref_text = rtext;
    g.xvector = NULL;
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG && strstr(ct_session_errmsg(s), "x-vector"));
    g.xvector = xv;
    g.ref_frames = 0;
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG && strstr(ct_session_errmsg(s), "ref_frames 0"));
    g.ref_frames = 100000;
    CHECK(ct_session_start(s, &g) == CT_ERR_LIMIT && strstr(ct_session_errmsg(s), "100000 reference frames"));
    g.ref_frames = F_REF;
    int32_t bad[F_REF * 16];
    memcpy(bad, ref, sizeof bad);
    bad[3 * 16 + 5] = 2048;
    g.ref_codes = bad;
    CHECKF(ct_session_start(s, &g) == CT_ERR_INVALID_ARG &&
               strstr(ct_session_errmsg(s), "code 2048 at frame 3, group 5 is outside [0, 2048)"),
           "%s", ct_session_errmsg(s));
    bad[3 * 16 + 5] = -1;
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG && strstr(ct_session_errmsg(s), "code -1"));
    g.ref_codes = NULL;
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG && strstr(ct_session_errmsg(s), "no ref_codes"));
    g.ref_frames = 0; /* ref_text alone */
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG && strstr(ct_session_errmsg(s), "ref_text without"));
    g.ref_codes = ref;
    g.ref_frames = F_REF;
    g.ref_text = "\nstarts with a newline";
    CHECK(ct_session_start(s, &g) == CT_ERR_INVALID_ARG && strstr(ct_session_errmsg(s), "reference transcript merges"));
    g.ref_text = rtext;

    /* non-streaming: X_k + c(pad), P + c(bos), P + frame_f; overlay P */
    g.non_streaming = 1;
    CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
    const int hdr = 3 + 6; /* role + [think, think_bos, lang, think_eos, x-vector, pad] */
    CHECK(ct_session_run_info(s).prompt_len == hdr + nx + 1 + F_REF);
    CHECK(ct_session_run_info(s).text_tokens == nt);
    CHECK(s->n_trailing == 0);
    for (int k = 0; k < nx; k++) {
        x_row(s, R, nr, T, nt, k, want, etmp);
        ct_embed_codec_add(m, c->codec_pad, want);
        CHECKF(rows_equal(s->prompt + (size_t)(hdr + k) * H, want, H), "non-streaming text item %d", k);
    }
    memcpy(want, s->pad_row, sizeof(float) * (size_t)H);
    ct_embed_codec_add(m, c->codec_bos, want);
    CHECK(rows_equal(s->prompt + (size_t)(hdr + nx) * H, want, H));
    for (int f = 0; f < F_REF; f++) { /* the decode-feedback embedding of the frame over P */
        ct_frame_embedding(s, ref + (size_t)f * G, s->pad_row, want);
        CHECKF(rows_equal(s->prompt + (size_t)(hdr + nx + 1 + f) * H, want, H), "non-streaming frame %d", f);
    }
    /* the speaker slot holds the x-vector over P */
    memcpy(want, s->pad_row, sizeof(float) * (size_t)H);
    for (int j = 0; j < H; j++) want[j] += xv[j];
    CHECK(rows_equal(s->prompt + (size_t)(3 + 4) * H, want, H));

    /* streaming, transcript longer than the frames: X[0..F] + Y, the rest is the overlay */
    g.non_streaming = 0;
    CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
    CHECK(ct_session_run_info(s).prompt_len == hdr + F_REF + 1);
    CHECK(s->n_trailing == nx - (F_REF + 1));
    x_row(s, R, nr, T, nt, 0, want, etmp);
    ct_embed_codec_add(m, c->codec_bos, want);
    CHECK(rows_equal(s->prompt + (size_t)hdr * H, want, H));
    for (int f = 0; f < F_REF; f++) {
        x_row(s, R, nr, T, nt, f + 1, tmp, etmp);
        ct_frame_embedding(s, ref + (size_t)f * G, tmp, want);
        CHECKF(rows_equal(s->prompt + (size_t)(hdr + 1 + f) * H, want, H), "streaming frame %d", f);
    }
    for (int k = 0; k < s->n_trailing; k++) {
        x_row(s, R, nr, T, nt, F_REF + 1 + k, want, etmp);
        CHECKF(rows_equal(s->trailing + (size_t)k * H, want, H), "overlay %d", k);
    }

    /* streaming, frames outnumber the text items: X padded with P, overlay P */
    g.ref_text = "Hi.";
    int32_t R2[16];
    int nr2 = ref_ids(m, "Hi.", R2), nx2 = nr2 + nt + 1;
    CHECK(nx2 < F_REF + 1);
    CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
    CHECK(ct_session_run_info(s).prompt_len == hdr + F_REF + 1 && s->n_trailing == 0);
    for (int f = 0; f < F_REF; f++) {
        if (f + 1 < nx2) x_row(s, R2, nr2, T, nt, f + 1, tmp, etmp);
        else memcpy(tmp, s->pad_row, sizeof(float) * (size_t)H);
        ct_frame_embedding(s, ref + (size_t)f * G, tmp, want);
        CHECKF(rows_equal(s->prompt + (size_t)(hdr + 1 + f) * H, want, H), "padded streaming frame %d", f);
    }
    g.ref_text = rtext;
    ct_session_free(s);

    /* the context check counts the reference frames: 16 + 10 positions do not fit 24 */
    ct_session_params sp = ct_session_params_default();
    sp.max_context = 24;
    CHECK(ct_session_create(m, &sp, &s, err, sizeof err) == CT_OK);
    int32_t many[16 * 16];
    for (int i = 0; i < 16 * 16; i++) many[i] = ref[i % (F_REF * 16)];
    g.ref_codes = many;
    g.ref_frames = 16;
    CHECK(ct_session_start(s, &g) == CT_ERR_LIMIT && strstr(ct_session_errmsg(s), "16 reference frames"));
    g.ref_frames = 8; /* 9 + 9 = 18 positions fit; the frame limit is what is left */
    CHECKF(ct_session_start(s, &g) == CT_OK, "%s", ct_session_errmsg(s));
    CHECK(ct_session_run_info(s).frame_limit <= 24 - ct_session_run_info(s).prompt_len);
    ct_session_free(s);
    free(want);
    free(tmp);
    free(etmp);
}

/* Reads a stream to the end into buf (floats or codes); returns units read. */
static size_t drain(ct_stream *st, void *buf, size_t cap, int codes) {
    size_t n = 0;
    int fin = 0;
    while (!fin && n < cap) {
        size_t k = codes ? ct_stream_read_codes(st, (int32_t *)buf + n * 16, cap - n, 5000, &fin)
                         : ct_stream_read(st, (float *)buf + n, cap - n, 5000, &fin);
        n += k;
    }
    return n;
}

static void engine_checks(ct_model *m, ct_codec *c, const int32_t *ref, const float *xv) {
    const int G = 16, spf = ct_codec_samples_per_frame(c), H = m->cfg.talker.hidden;
    char err[512];
    ct_engine_params ep = ct_engine_params_default();
    ep.placement = CT_PLACEMENT_SERIAL;
    ep.talker_threads = 1;
    ep.max_context = 256;
    ct_engine *e = NULL;
    CHECKF(ct_engine_create(m, c, &ep, &e, err, sizeof err) == CT_OK, "%s", err);
    if (!e) return;
    /* two utterances (utterance_bytes 24), NEW frames each */
    ct_gen_params g = ct_gen_params_default();
    g.text = "First sentence here. Then another one.";
    g.language = "english";
    g.seed = 11;
    g.max_frames = NEW;
    g.min_new_tokens = NEW;
    g.xvector = xv;
    g.xvector_len = H;
    g.ref_codes = ref;
    g.ref_frames = F_REF;
    g.ref_text = "A reference transcript of the clip, read aloud.";
    ct_stream_params sp = ct_stream_params_default();
    sp.utterance_bytes = 24;
    sp.output = CT_OUTPUT_CODES;

    /* codes: only the new frames; utterance 1 equals the session API's frames */
    int32_t *codes = malloc(sizeof(int32_t) * MAXF * G);
    ct_stream *st = NULL;
    int32_t refcopy[F_REF * 16];
    memcpy(refcopy, ref, sizeof refcopy);
    g.ref_codes = refcopy; /* copied at submit: overwritten below before the engine reads it */
    CHECKF(ct_engine_submit(e, &g, &sp, &st, err, sizeof err) == CT_OK, "%s", err);
    memset(refcopy, 0, sizeof refcopy);
    size_t nf = st ? drain(st, codes, MAXF, 1) : 0;
    CHECKF(st && ct_stream_get_info(st).status == CT_OK, "%s", st ? ct_stream_errmsg(st) : "");
    CHECK(st && ct_stream_get_info(st).utterances == 2);
    CHECKF(nf == 2 * NEW, "%zu code frames", nf);
    ct_stream_release(st);
    g.ref_codes = ref;
    ct_session *s = NULL;
    CHECK(ct_session_create(m, NULL, &s, err, sizeof err) == CT_OK);
    ct_gen_params g1 = g;
    g1.text = "First sentence here.";
    CHECKF(s && ct_session_start(s, &g1) == CT_OK, "%s", ct_session_errmsg(s));
    int same = 1, got = 0;
    for (int f = 0; f < NEW && s; f++) {
        int32_t fr[16];
        same &= ct_session_next_frame(s, fr, &got) == CT_OK && got && !memcmp(fr, codes + (size_t)f * G, sizeof fr);
    }
    CHECK(same);
    ct_session_free(s);

    /* expected PCM per utterance: decode(ref + new) without the first F_REF * spf samples */
    int32_t *cat = malloc(sizeof(int32_t) * (F_REF + NEW) * G);
    float *full = malloc(sizeof(float) * (size_t)(F_REF + NEW) * spf);
    float *want = malloc(sizeof(float) * (size_t)2 * NEW * spf), *pcm = malloc(sizeof(float) * (size_t)2 * NEW * spf);
    float *nocut = malloc(sizeof(float) * (size_t)NEW * spf);
    for (int u = 0; u < 2; u++) {
        memcpy(cat, ref, sizeof(int32_t) * F_REF * G);
        memcpy(cat + F_REF * G, codes + (size_t)u * NEW * G, sizeof(int32_t) * NEW * G);
        CHECK(ct_codec_decode(c, cat, F_REF + NEW, full, err, sizeof err) == CT_OK);
        memcpy(want + (size_t)u * NEW * spf, full + (size_t)F_REF * spf, sizeof(float) * (size_t)NEW * spf);
    }
    CHECK(ct_codec_decode(c, codes, NEW, nocut, err, sizeof err) == CT_OK); /* unprimed decode differs */
    CHECK(memcmp(nocut, want, sizeof(float) * (size_t)NEW * spf) != 0);

    const char *schedules[] = {"exact", "fixed:1,2", "fixed:3,4", "ramp:2,5,8"};
    sp.output = CT_OUTPUT_PCM;
    for (int i = 0; i < 4; i++) {
        sp.schedule = schedules[i];
        sp.windowed = 0;
        CHECKF(ct_engine_submit(e, &g, &sp, &st, err, sizeof err) == CT_OK, "%s", err);
        size_t n = st ? drain(st, pcm, (size_t)2 * NEW * spf, 0) : 0;
        CHECKF(n == (size_t)2 * NEW * spf && !memcmp(pcm, want, sizeof(float) * n),
               "exact decoder, schedule %s: %zu samples", schedules[i], n);
        ct_stream_release(st);
    }
    /* the first utterance primed the decoder; the 7 later ones (same reference codes) took the
       kept state, to the same audio */
    ct_engine_counters kc = ct_engine_get_counters(e);
    CHECKF(kc.icl_primes == 8 && kc.icl_prime_reuses == 7, "primes %llu, reuses %llu",
           (unsigned long long)kc.icl_primes, (unsigned long long)kc.icl_prime_reuses);
    /* CT_ENGINE_PRIME_STATES (4) other references replace the least recently used state: the
       first reference primes again afterwards, the newest is still kept (one utterance each) */
    {
        ct_gen_params g2 = g;
        g2.text = "First sentence here.";
        sp.schedule = "exact";
        int32_t alt[5][F_REF * 16];
        float *first = malloc(sizeof(float) * (size_t)MAXF * spf), *again = malloc(sizeof(float) * (size_t)MAXF * spf);
        size_t n_first = 0, n_again = 0;
        for (int r = 0; r < 5; r++) {
            memcpy(alt[r], ref, sizeof alt[r]);
            alt[r][5] = (alt[r][5] + 1 + r) % 2048;
            g2.ref_codes = alt[r];
            CHECKF(ct_engine_submit(e, &g2, &sp, &st, err, sizeof err) == CT_OK, "%s", err);
            size_t n = st ? drain(st, r == 4 ? first : pcm, (size_t)MAXF * spf, 0) : 0;
            if (r == 4) n_first = n;
            ct_stream_release(st);
        }
        g2.ref_codes = ref; /* evicted by the five */
        CHECK(ct_engine_submit(e, &g2, &sp, &st, err, sizeof err) == CT_OK);
        if (st) drain(st, pcm, (size_t)MAXF * spf, 0);
        ct_stream_release(st);
        g2.ref_codes = alt[4]; /* kept */
        CHECK(ct_engine_submit(e, &g2, &sp, &st, err, sizeof err) == CT_OK);
        if (st) n_again = drain(st, again, (size_t)MAXF * spf, 0);
        ct_stream_release(st);
        CHECKF(n_first > 0 && n_again == n_first && !memcmp(first, again, sizeof(float) * n_first),
               "kept state: %zu vs %zu samples", n_again, n_first);
        ct_engine_counters k2 = ct_engine_get_counters(e);
        CHECKF(k2.icl_primes == kc.icl_primes + 7 && k2.icl_prime_reuses == kc.icl_prime_reuses + 1,
               "primes %llu, reuses %llu", (unsigned long long)k2.icl_primes, (unsigned long long)k2.icl_prime_reuses);
        free(first);
        free(again);
    }

    /* windowed: each chunk decoded with up to C frames of left context from the concatenation
       (reference frames first), the chunk boundaries as the stream released them */
    const int ctxs[] = {4, 72};
    for (int ci = 0; ci < 2; ci++)
        for (int i = 1; i < 4; i++) {
            const int C = ctxs[ci];
            sp.schedule = schedules[i];
            sp.windowed = 1;
            sp.context_frames = C;
            CHECKF(ct_engine_submit(e, &g, &sp, &st, err, sizeof err) == CT_OK, "%s", err);
            size_t n = st ? drain(st, pcm, (size_t)2 * NEW * spf, 0) : 0;
            int chunks[64], nch = st ? ct_stream_timeline(st, NULL, chunks, 64) : 0;
            ct_stream_release(st);
            int ok = n == (size_t)2 * NEW * spf && nch <= 64;
            float *w = malloc(sizeof(float) * (size_t)NEW * spf);
            int at = 0; /* frames into the stream's output */
            for (int k = 0; ok && k < nch; k++) {
                int nfr = chunks[k] / spf, u = at / NEW, pos = F_REF + at % NEW; /* position in ref + new */
                memcpy(cat, ref, sizeof(int32_t) * F_REF * G);
                memcpy(cat + F_REF * G, codes + (size_t)u * NEW * G, sizeof(int32_t) * NEW * G);
                int lc = pos < C ? pos : C;
                ok = ct_codec_decode_window(c, cat + (size_t)(pos - lc) * G, lc, cat + (size_t)pos * G, nfr, w, err,
                                            sizeof err) == CT_OK &&
                     !memcmp(pcm + (size_t)at * spf, w, sizeof(float) * (size_t)nfr * spf);
                at += nfr;
            }
            CHECKF(ok && at == 2 * NEW, "windowed decoder, context %d, schedule %s: %zu samples, %d chunks", C,
                   schedules[i], n, nch);
            free(w);
        }

    /* overlapped placement: the codec thread primes (on its own pool) to the same audio; chunks
       of at most 4 frames, so the 7 reference frames go through the decoder in two pieces */
    ct_engine_params eo = ep;
    eo.placement = CT_PLACEMENT_OVERLAPPED;
    eo.codec_threads = 2;
    eo.max_chunk_frames = 4;
    ct_engine *e2 = NULL;
    CHECKF(ct_engine_create(m, c, &eo, &e2, err, sizeof err) == CT_OK, "%s", err);
    sp.schedule = "exact";
    sp.windowed = 0;
    if (e2 && ct_engine_submit(e2, &g, &sp, &st, err, sizeof err) == CT_OK) {
        size_t n = drain(st, pcm, (size_t)2 * NEW * spf, 0);
        CHECKF(n == (size_t)2 * NEW * spf && !memcmp(pcm, want, sizeof(float) * n), "overlapped: %zu samples", n);
        ct_stream_release(st);
    } else {
        CHECKF(0, "overlapped submit: %s", err);
    }
    /* a fixed schedule within max_chunk_frames 4 (the ramp table, unused, is not counted) */
    sp.schedule = "fixed:2,4";
    if (e2 && ct_engine_submit(e2, &g, &sp, &st, err, sizeof err) == CT_OK) {
        size_t n = drain(st, pcm, (size_t)2 * NEW * spf, 0);
        CHECKF(n == (size_t)2 * NEW * spf && !memcmp(pcm, want, sizeof(float) * n), "overlapped fixed:2,4: %zu", n);
        ct_stream_release(st);
    } else {
        CHECKF(0, "overlapped fixed:2,4 submit: %s", err);
    }
    sp.schedule = "fixed:2,5";
    CHECK(!e2 || (ct_engine_submit(e2, &g, &sp, &st, err, sizeof err) == CT_ERR_INVALID_ARG &&
                  strstr(err, "chunks of 5 frames")));
    ct_engine_free(e2);

    /* a bad reference code fails the stream at admission, naming it */
    int32_t bad[F_REF * 16];
    memcpy(bad, ref, sizeof bad);
    bad[2] = 5000;
    g.ref_codes = bad;
    sp.windowed = 0;
    CHECK(ct_engine_submit(e, &g, &sp, &st, err, sizeof err) == CT_OK);
    if (st) {
        drain(st, pcm, 16, 0);
        CHECKF(ct_stream_get_info(st).state == CT_STREAM_FAILED && strstr(ct_stream_errmsg(st), "code 5000"), "%s",
               ct_stream_errmsg(st));
        ct_stream_release(st);
    }
    g.ref_codes = NULL; /* ref_frames without codes: refused at submit */
    CHECK(ct_engine_submit(e, &g, &sp, &st, err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "ref_frames"));
    free(codes);
    free(cat);
    free(full);
    free(want);
    free(pcm);
    free(nocut);
    ct_engine_free(e);
}

/* Prompt reuse where one ICL prompt is a strict prefix of another (fewer reference frames,
   non-streaming): the start after the shorter one reuses only the positions that start
   prefilled, never the later rows the key table still names (its KV holds decode steps), and
   every start matches a fresh session's, logits and codes. */
static void prefix_reuse(ct_model *m, const int32_t *ref, const float *xv) {
    const int V = m->cfg.talker.vocab, frames[3] = {F_REF, 3, F_REF};
    ct_session *s = NULL, *f = NULL;
    char err[256];
    CHECK(ct_session_create(m, NULL, &s, err, sizeof err) == CT_OK);
    ct_gen_params g = ct_gen_params_default();
    g.text = "Hi there.";
    g.language = "english";
    g.max_frames = 4;
    g.xvector = xv;
    g.xvector_len = m->cfg.talker.hidden;
    g.ref_codes = ref;
    g.ref_text = "A reference transcript of the clip, read aloud.";
    g.non_streaming = 1;
    float *ls = malloc(sizeof(float) * (size_t)V);
    int32_t cs[4 * 16], cf[4 * 16];
    int len[3] = {0};
    for (int i = 0; i < 3 && s; i++) {
        g.ref_frames = frames[i];
        for (int k = 0; k < 2; k++) { /* k 0: on s; 1: on a fresh session */
            ct_session *t = s;
            if (k) {
                CHECK(ct_session_create(m, NULL, &f, err, sizeof err) == CT_OK);
                t = f;
            }
            if (!t) break;
            CHECKF(ct_session_start(t, &g) == CT_OK, "%s", ct_session_errmsg(t));
            if (k) CHECK(memcmp(ls, t->logits, sizeof(float) * (size_t)V) == 0);
            else memcpy(ls, t->logits, sizeof(float) * (size_t)V);
            int got = 1;
            for (int j = 0; j < 4 && got; j++)
                CHECK(ct_session_next_frame(t, (k ? cf : cs) + 16 * j, &got) == CT_OK && got);
        }
        CHECKF(memcmp(cs, cf, sizeof cs) == 0, "start %d: the codes differ from a fresh session's", i);
        ct_session_free(f);
        f = NULL;
        len[i] = ct_session_run_info(s).prompt_len;
        const int want = i == 0 ? 0 : i == 1 ? len[1] - 1 : len[1];
        CHECKF(ct_session_run_info(s).prompt_reused == want, "start %d: %d positions reused, want %d", i,
               ct_session_run_info(s).prompt_reused, want);
    }
    free(ls);
    ct_session_free(s);
}

/* An ICL voice in a prompt group's cache, both layouts: its voice rows are the role block, the
   codec header and the transcript rows (non-streaming: all R; streaming: R while the reference
   frames last); after its member moved on to an x-vector-only request, another member's start
   in the same voice copies all of them from the cache, with a fresh session's codes. */
static void icl_cache(ct_model *m, const int32_t *ref, const float *xv) {
    const char *rtext = "A reference transcript of the clip, read aloud.";
    int32_t R[128];
    const int nr = ref_ids(m, rtext, R);
    for (int ns = 1; ns >= 0; ns--) {
        ct_prompt_group *g = NULL;
        ct_session *a = NULL, *b = NULL, *f = NULL;
        char err[256];
        CHECK(ct_prompt_group_create(16u << 20, &g) == CT_OK);
        CHECK(ct_session_create(m, NULL, &a, err, sizeof err) == CT_OK);
        CHECK(ct_session_create(m, NULL, &b, err, sizeof err) == CT_OK);
        CHECK(ct_session_create(m, NULL, &f, err, sizeof err) == CT_OK);
        if (!g || !a || !b || !f) return;
        CHECK(ct_session_join_prompts(a, g) == CT_OK && ct_session_join_prompts(b, g) == CT_OK);
        ct_gen_params gi = ct_gen_params_default();
        gi.text = "Hi there.";
        gi.language = "english";
        gi.max_frames = 4;
        gi.min_new_tokens = 4;
        gi.xvector = xv;
        gi.xvector_len = m->cfg.talker.hidden;
        gi.ref_codes = ref;
        gi.ref_frames = F_REF;
        gi.ref_text = rtext;
        gi.non_streaming = ns;
        CHECKF(ct_session_start(a, &gi) == CT_OK, "%s", ct_session_errmsg(a));
        const int voice = 9 + (ns ? nr : nr < F_REF + 1 ? nr : F_REF + 1);
        CHECKF(a->voice_rows == voice, "layout %d: %d voice rows, want %d", ns, a->voice_rows, voice);
        ct_gen_params gx = gi; /* the same x-vector without the reference: 9 rows in common */
        gx.ref_codes = NULL, gx.ref_frames = 0, gx.ref_text = NULL;
        CHECKF(ct_session_start(a, &gx) == CT_OK, "%s", ct_session_errmsg(a));
        gi.text = "Something else to say.";
        int32_t cb[4 * 16], cf[4 * 16];
        ct_session *t[2] = {b, f};
        for (int k = 0; k < 2; k++) {
            CHECKF(ct_session_start(t[k], &gi) == CT_OK, "%s", ct_session_errmsg(t[k]));
            for (int j = 0, got = 1; j < 4 && got; j++)
                CHECK(ct_session_next_frame(t[k], (k ? cf : cb) + 16 * j, &got) == CT_OK && got);
        }
        /* at most all but the last position (which runs for its hidden state): the streaming
           layout's whole prompt is voice rows when the transcript outlasts the frames */
        const int L = ct_session_run_info(b).prompt_len, want = voice < L ? voice : L - 1;
        CHECKF(ct_session_run_info(b).prompt_reused == want && b->prompt_cached == want,
               "layout %d: %d positions reused (%d from the cache), want %d", ns, ct_session_run_info(b).prompt_reused,
               b->prompt_cached, want);
        CHECK(memcmp(cb, cf, sizeof cb) == 0);
        ct_session_free(a);
        ct_session_free(b);
        ct_session_free(f);
        ct_prompt_group_free(g);
    }
}

int main(void) {
    ct_model *m = NULL;
    ct_codec *c = NULL;
    if (!ct_test_load("tiny-base", "clone-icl-base", 21, &m, &c)) {
        CHECK(0);
        return ct_test_finish();
    }
    const int H = m->cfg.talker.hidden;
    int32_t ref[F_REF * 16];
    uint32_t x = 12345;
    for (int i = 0; i < F_REF * 16; i++) x = x * 1664525u + 1013904223u, ref[i] = (int32_t)(x >> 8) % 2048;
    float *xv = malloc(sizeof(float) * (size_t)H);
    for (int i = 0; i < H; i++) xv[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    prompt_checks(m, ref, xv);
    prefix_reuse(m, ref, xv);
    icl_cache(m, ref, xv);
    engine_checks(m, c, ref, xv);

    /* reference codes on a non-Base model are refused */
    ct_model *cv = NULL;
    ct_codec *cvc = NULL;
    if (ct_test_load("tiny", "clone-icl-cv", 21, &cv, &cvc)) {
        ct_session *s = NULL;
        char err[256];
        CHECK(ct_session_create(cv, NULL, &s, err, sizeof err) == CT_OK);
        ct_gen_params g = ct_gen_params_default();
        g.text = "Hello.";
        g.speaker = "uncle_fu";
        g.ref_codes = ref;
        g.ref_frames = F_REF;
        g.ref_text = "Hi.";
        CHECK(s && ct_session_start(s, &g) == CT_ERR_INVALID_ARG &&
              strstr(ct_session_errmsg(s), "only accepted by Base models"));
        ct_session_free(s);
    }
    ct_model_free(cv);
    ct_codec_free(cvc);
    free(xv);
    ct_codec_free(c);
    ct_model_free(m);
    return ct_test_finish();
}
