/* The codec-token wire format (docs/CODES_WIRE.md): records round-trip through the encoder and
   the incremental decoder in pieces of every size, the byte layout is the documented one, and
   a bad stream (truncated, reordered, out-of-range codes, unknown version or kind, a second
   header, data after the end, a lying header, an error record, utterance records out of
   order) gives a clear error; utterance records reach their callback in place; base64
   round-trips and refuses bad input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"
#include "serve/codes_wire.h"

#define G 16
#define NF 5

typedef struct {
    int headers, frames;
    ct_codes_header h;
    int32_t codes[NF][G];
    uint32_t idx[NF];
    int stop_at_frame; /* >= 0: stop when this frame arrives */
    int utt_at[8];     /* frames received when utterance record i + 1 arrived */
    int n_utt;
} sink;

static int on_header(void *ud, const ct_codes_header *h, char *msg, size_t cap) {
    sink *s = ud;
    s->headers++;
    s->h = *h;
    (void)msg, (void)cap;
    return 0;
}

static int on_frame(void *ud, uint32_t index, const int32_t *codes, int n, char *msg, size_t cap) {
    sink *s = ud;
    if (s->stop_at_frame >= 0 && (int)index == s->stop_at_frame) {
        snprintf(msg, cap, "client stopped at frame %u", index);
        return 1;
    }
    if (s->frames < NF && n == G) {
        memcpy(s->codes[s->frames], codes, sizeof(int32_t) * G);
        s->idx[s->frames] = index;
    }
    s->frames++;
    return 0;
}

static int on_utterance(void *ud, uint32_t index, char *msg, size_t cap) {
    sink *s = ud;
    (void)msg, (void)cap;
    if (s->n_utt < 8 && index == (uint32_t)s->n_utt + 1) s->utt_at[s->n_utt] = s->frames;
    s->n_utt++;
    return 0;
}

static ct_codes_header header(void) {
    ct_codes_header h;
    memset(&h, 0, sizeof h);
    h.sample_rate = 24000;
    h.samples_per_frame = 1920;
    h.frame_rate_mhz = 12500;
    h.n_groups = G;
    h.codebook_size = 2048;
    snprintf(h.codec_id, sizeof h.codec_id, "sha256:%064d", 7);
    snprintf(h.model_id, sizeof h.model_id, "qwen3-tts-12hz-tiny");
    return h;
}

static int32_t code_of(int f, int g) { return (f * 131 + g * 977) % 2048; }

/* A whole stream: header, NF frames, end. Returns its length. */
static size_t make_stream(uint8_t *b, size_t cap) {
    ct_codes_header h = header();
    size_t n = ct_codes_put_header(b, cap, &h);
    for (int f = 0; f < NF; f++) {
        int32_t c[G];
        for (int g = 0; g < G; g++) c[g] = code_of(f, g);
        n += ct_codes_put_frame(b + n, cap - n, (uint32_t)f, c, G);
    }
    n += ct_codes_put_end(b + n, cap - n, NF, 1);
    return n;
}

/* Decodes b[n] in pieces of `piece` bytes; returns the status of feed/finish and the message. */
static ct_status decode(const uint8_t *b, size_t n, size_t piece, sink *s, char *err, size_t cap) {
    memset(s, 0, sizeof *s);
    s->stop_at_frame = -1;
    ct_codes_cb cb = {s, on_header, on_frame, on_utterance};
    ct_codes_reader *r = ct_codes_reader_new(&cb);
    ct_status st = r ? CT_OK : CT_ERR_NOMEM;
    for (size_t o = 0; st == CT_OK && o < n; o += piece)
        st = ct_codes_feed(r, b + o, n - o < piece ? n - o : piece, err, cap);
    if (st == CT_OK) st = ct_codes_finish(r, err, cap);
    if (st == CT_OK) CHECK(ct_codes_reader_frames(r) == s->frames);
    ct_codes_reader_free(r);
    return st;
}

static void expect_fail(const uint8_t *b, size_t n, ct_status want, const char *part) {
    sink s;
    char err[512] = "";
    for (size_t piece = 1; piece <= (n ? n : 1); piece = piece < 8 ? piece + 1 : piece * 3) {
        ct_status st = decode(b, n, piece, &s, err, sizeof err);
        CHECKF(st == want && strstr(err, part), "piece %zu: status %d, want %d, '%s' (want '%s')", piece, st, want, err,
               part);
    }
}

int main(void) {
    uint8_t b[4096], c[4096];
    char err[512];

    /* layout: the documented bytes of a header and a frame record */
    {
        ct_codes_header h = header();
        size_t n = ct_codes_put_header(b, sizeof b, &h);
        size_t lc = strlen(h.codec_id), lm = strlen(h.model_id);
        CHECK(n == 4 + 20 + lc + lm);
        CHECK(b[0] == (uint8_t)(n - 4) && b[1] == 0 && b[2] == 0 && b[3] == 0);
        CHECK(b[4] == CT_CODES_WIRE_VERSION && b[5] == CT_CODES_REC_HEADER);
        CHECK(b[6] == 16 && b[7] == 0);                                    /* n_groups */
        CHECK(b[8] == 0xff && b[9] == 0x07);                               /* codebook_size - 1 = 2047 */
        CHECK(b[10] == 0xc0 && b[11] == 0x5d && b[12] == 0 && b[13] == 0); /* 24000 */
        CHECK(b[14] == 0x80 && b[15] == 0x07);                             /* 1920 */
        CHECK(b[18] == 0xd4 && b[19] == 0x30);                             /* 12500 mHz */
        CHECK(b[22] == lc && memcmp(b + 23, h.codec_id, lc) == 0);
        CHECK(b[23 + lc] == lm && memcmp(b + 24 + lc, h.model_id, lm) == 0);
        int32_t codes[G];
        for (int g = 0; g < G; g++) codes[g] = 2047 - g;
        n = ct_codes_put_frame(b, sizeof b, 0x01020304u, codes, G);
        CHECK(n == ct_codes_frame_bytes(G) && n == 42);
        CHECK(b[0] == 38 && b[4] == 1 && b[5] == CT_CODES_REC_FRAME);
        CHECK(b[6] == 4 && b[7] == 3 && b[8] == 2 && b[9] == 1);
        CHECK(b[10] == 0xff && b[11] == 0x07 && b[40] == (uint8_t)(2047 - 15) && b[41] == 0x07);
        n = ct_codes_put_end(b, sizeof b, 9, 2);
        CHECK(n == 11 && b[0] == 7 && b[5] == CT_CODES_REC_END && b[6] == 9 && b[10] == 2);
        /* encoders refuse what does not fit or is out of range */
        CHECK(ct_codes_put_frame(b, 41, 0, codes, G) == 0);
        codes[3] = -1;
        CHECK(ct_codes_put_frame(b, sizeof b, 0, codes, G) == 0);
        codes[3] = 65536;
        CHECK(ct_codes_put_frame(b, sizeof b, 0, codes, G) == 0);
        CHECK(ct_codes_put_frame(b, sizeof b, 0, codes, 0) == 0);
        memset(h.model_id, 'x', CT_CODES_ID_MAX);
        h.model_id[CT_CODES_ID_MAX] = 0;
        CHECK(ct_codes_put_header(b, sizeof b, &h) > 0);
        CHECK(ct_codes_put_header(b, 100, &h) == 0);
    }

    /* round trip in pieces of every size */
    size_t n = make_stream(b, sizeof b);
    CHECK(n > 0);
    for (size_t piece = 1; piece <= n; piece++) {
        sink s;
        ct_status st = decode(b, n, piece, &s, err, sizeof err);
        int same = st == CT_OK && s.headers == 1 && s.frames == NF && s.h.sample_rate == 24000 &&
                   s.h.samples_per_frame == 1920 && s.h.frame_rate_mhz == 12500 && s.h.n_groups == G &&
                   s.h.codebook_size == 2048 && strcmp(s.h.codec_id, header().codec_id) == 0 &&
                   strcmp(s.h.model_id, "qwen3-tts-12hz-tiny") == 0;
        for (int f = 0; same && f < NF; f++) {
            same = s.idx[f] == (uint32_t)f;
            for (int g = 0; g < G; g++) same = same && s.codes[f][g] == code_of(f, g);
        }
        if (!same) {
            CHECKF(0, "piece %zu: status %d '%s'", piece, st, err);
            break;
        }
        if (piece == n) CHECK(same);
    }
    {
        ct_codes_cb cb = {0};
        ct_codes_reader *r = ct_codes_reader_new(&cb);
        CHECK(r && ct_codes_feed(r, b, n, err, sizeof err) == CT_OK && ct_codes_finish(r, err, sizeof err) == CT_OK &&
              ct_codes_reader_frames(r) == NF && ct_codes_reader_stop(r) == 1);
        ct_codes_reader_free(r);
    }
    const size_t hb = 4 + 20 + strlen(header().codec_id) + strlen(header().model_id), fb = 42;

    /* truncated: inside a record, and at a record boundary without the end record */
    expect_fail(b, n - 1, CT_ERR_FORMAT, "truncated: it ends inside the record");
    expect_fail(b, hb + 2 * fb, CT_ERR_FORMAT, "no end record after 2 frames");
    expect_fail(b, 0, CT_ERR_FORMAT, "no header record");
    expect_fail(b, 3, CT_ERR_FORMAT, "truncated");

    /* reordered: frames 0 and 1 swapped */
    memcpy(c, b, n);
    memcpy(c + hb, b + hb + fb, fb);
    memcpy(c + hb + fb, b + hb, fb);
    expect_fail(c, n, CT_ERR_FORMAT, "frame 1 at byte");
    /* a frame missing (index jumps) */
    memcpy(c, b, hb);
    memcpy(c + hb, b + hb + fb, n - hb - fb);
    expect_fail(c, n - fb, CT_ERR_FORMAT, "out of order (expected frame 0)");

    /* a code out of range: 2048 in frame 2 group 5 */
    memcpy(c, b, n);
    c[hb + 2 * fb + 10 + 2 * 5] = 0x00;
    c[hb + 2 * fb + 11 + 2 * 5] = 0x08;
    expect_fail(c, n, CT_ERR_FORMAT, "frame 2 group 5: code 2048 outside [0, 2048)");

    /* unknown version (in the header and in a frame), unknown kind */
    memcpy(c, b, n);
    c[4] = 2;
    expect_fail(c, n, CT_ERR_FORMAT, "wire version 2; this reader knows version 1");
    memcpy(c, b, n);
    c[hb + 4] = 9;
    expect_fail(c, n, CT_ERR_FORMAT, "wire version 9");
    memcpy(c, b, n);
    c[hb + 5] = 7;
    expect_fail(c, n, CT_ERR_FORMAT, "unknown kind 7");

    /* a frame before the header; a second header; bytes after the end; a count that lies */
    expect_fail(b + hb, n - hb, CT_ERR_FORMAT, "before the header record");
    memcpy(c, b, hb);
    memcpy(c + hb, b, n);
    expect_fail(c, hb + n, CT_ERR_FORMAT, "a second header");
    memcpy(c, b, n);
    memcpy(c + n, b + hb, fb);
    expect_fail(c, n + fb, CT_ERR_FORMAT, "after the end record");
    memcpy(c, b, n);
    c[n - 5] = NF + 1;
    expect_fail(c, n, CT_ERR_FORMAT, "counts 6 frames; 5 arrived");

    /* a frame record of the wrong length; a huge declared length; an empty record */
    memcpy(c, b, n);
    c[hb] = 37;
    expect_fail(c, n, CT_ERR_FORMAT, "frame record at byte");
    memcpy(c, b, n);
    c[hb + 3] = 0x7f;
    expect_fail(c, n, CT_ERR_FORMAT, "declares");
    memcpy(c, b, hb);
    memset(c + hb, 0, 4);
    expect_fail(c, hb + 4, CT_ERR_FORMAT, "has 0 payload bytes");

    /* a header that contradicts itself: frame rate, n_groups 0 */
    memcpy(c, b, n);
    c[18] = 0xd5;
    expect_fail(c, n, CT_ERR_FORMAT, "frame rate 12501 mHz does not match");
    memcpy(c, b, n);
    c[6] = 0;
    expect_fail(c, n, CT_ERR_FORMAT, "n_groups 0");
    memcpy(c, b, n);
    c[22] = 200; /* codec_id length past the record */
    expect_fail(c, n, CT_ERR_FORMAT, "header record at byte 0");

    /* utterance records: in place between frames (frame indices run on), in order only */
    {
        ct_codes_header h = header();
        size_t k = ct_codes_put_header(c, sizeof c, &h);
        int32_t codes[G] = {0};
        k += ct_codes_put_frame(c + k, sizeof c - k, 0, codes, G);
        k += ct_codes_put_frame(c + k, sizeof c - k, 1, codes, G);
        size_t u1 = k;
        k += ct_codes_put_utterance(c + k, sizeof c - k, 1);
        CHECK(k - u1 == 10 && c[u1] == 6 && c[u1 + 5] == CT_CODES_REC_UTTERANCE && c[u1 + 6] == 1);
        k += ct_codes_put_frame(c + k, sizeof c - k, 2, codes, G);
        k += ct_codes_put_utterance(c + k, sizeof c - k, 2);
        k += ct_codes_put_end(c + k, sizeof c - k, 3, 1);
        for (size_t piece = 1; piece <= k; piece += 7) {
            sink s;
            CHECKF(decode(c, k, piece, &s, err, sizeof err) == CT_OK && s.frames == 3 && s.n_utt == 2 &&
                       s.utt_at[0] == 2 && s.utt_at[1] == 3,
                   "piece %zu: %s", piece, err);
        }
        uint8_t d[512];
        memcpy(d, c, k);
        d[u1 + 6] = 2; /* utterance 2 before 1 */
        expect_fail(d, k, CT_ERR_FORMAT, "utterance 2 at byte");
        memcpy(d, c, k);
        d[u1] = 5; /* wrong length */
        expect_fail(d, k, CT_ERR_FORMAT, "utterance record at byte");
        expect_fail(c + u1, k - u1, CT_ERR_FORMAT, "before the header record");
    }

    /* an error record: the server's message, CT_ERR_IO */
    {
        ct_codes_header h = header();
        size_t k = ct_codes_put_header(c, sizeof c, &h);
        k += ct_codes_put_error(c + k, sizeof c - k, "utterance 1: the talker produced NaN");
        expect_fail(c, k, CT_ERR_IO, "failed at the server: utterance 1: the talker produced NaN");
    }

    /* a callback stop: CT_ERR_ABORTED with its message; later calls fail the same way */
    {
        sink s;
        memset(&s, 0, sizeof s);
        s.stop_at_frame = 3;
        ct_codes_cb cb = {&s, on_header, on_frame, NULL};
        ct_codes_reader *r = ct_codes_reader_new(&cb);
        CHECK(ct_codes_feed(r, b, n, err, sizeof err) == CT_ERR_ABORTED && strstr(err, "client stopped at frame 3"));
        CHECK(s.frames == 3);
        CHECK(ct_codes_feed(r, b, 1, err, sizeof err) == CT_ERR_ABORTED &&
              ct_codes_finish(r, err, sizeof err) == CT_ERR_ABORTED);
        ct_codes_reader_free(r);
    }

    /* base64 */
    {
        char e[64];
        uint8_t d[64];
        const char *v[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
        const char *w[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
        for (int i = 0; i < 7; i++) {
            size_t k = ct_b64_encode(e, (const uint8_t *)v[i], strlen(v[i]));
            CHECK(k == strlen(w[i]) && memcmp(e, w[i], k) == 0);
            CHECK(ct_b64_decode(d, w[i], k) == (long)strlen(v[i]) && memcmp(d, v[i], strlen(v[i])) == 0);
        }
        CHECK(ct_b64_decode(d, "Zm9", 3) == -1);
        CHECK(ct_b64_decode(d, "Zm9*", 4) == -1);
        CHECK(ct_b64_decode(d, "Zg==Zg==", 8) == -1);
        CHECK(ct_b64_decode(d, "Z=9v", 4) == -1);
        char big[8192];
        size_t k = ct_b64_encode(big, b, n);
        uint8_t back[4096];
        CHECK(ct_b64_decode(back, big, k) == (long)n && memcmp(back, b, n) == 0);
    }
    return ct_test_finish();
}
