/* WAV writer/parser round trips and the sentence splitter. */
#include <string.h>

#include "audio/wav.h"
#include "ct_test.h"
#include "text/langcode.h"
#include "text/sentences.h"

static void test_wav(void) {
    float pcm[5] = {0.0f, 0.5f, -1.0f, 2.0f, -0.25f};
    for (int fmt = 0; fmt < 2; fmt++) {
        FILE *f = tmpfile();
        ct_wav_writer w;
        CHECK(ct_wav_begin(&w, f, 24000, fmt ? CT_WAV_FLOAT32 : CT_WAV_PCM16) == CT_OK);
        CHECK(ct_wav_write(&w, pcm, 5) == CT_OK);
        CHECK(ct_wav_write(&w, pcm, 2) == CT_OK);
        CHECK(ct_wav_end(&w) == CT_OK);
        long n = ftell(f);
        uint8_t buf[256];
        fseek(f, 0, SEEK_SET);
        CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
        fclose(f);
        int rate, ch, bits, isf;
        size_t off, len;
        char err[128];
        CHECK(ct_wav_parse(buf, (size_t)n, &rate, &ch, &bits, &isf, &off, &len, err, sizeof err) == CT_OK);
        CHECK(rate == 24000 && ch == 1 && off == 44 && isf == fmt);
        CHECK(len == (size_t)(7 * (fmt ? 4 : 2)) && bits == (fmt ? 32 : 16));
        if (!fmt) {
            int16_t s[7];
            memcpy(s, buf + 44, sizeof s);
            CHECK(s[0] == 0 && s[1] == 16384 && s[2] == -32767 && s[3] == 32767 && s[4] == -8192);
        } else {
            float g[5];
            memcpy(g, buf + 44, sizeof g);
            CHECK(memcmp(g, pcm, sizeof g) == 0); /* float keeps values, even out of range */
        }
        /* truncations and garbage never parse as something else */
        int bad = 0;
        for (long cut = 0; cut < 44; cut++)
            bad += ct_wav_parse(buf, (size_t)cut, &rate, &ch, &bits, &isf, &off, &len, err, sizeof err) == CT_OK;
        CHECK(bad == 0);
        buf[20] = 7; /* unknown format tag */
        CHECK(ct_wav_parse(buf, (size_t)n, &rate, &ch, &bits, &isf, &off, &len, err, sizeof err) == CT_ERR_FORMAT);
        CHECK(strstr(err, "format tag") != NULL);
    }
}

static int spans_are(const char *t, const char *const *want, size_t max) {
    ct_span s[16];
    size_t n = ct_split_sentences(t, strlen(t), max, s, 16);
    for (size_t i = 0; i < n; i++) {
        if (!want[i] || strlen(want[i]) != s[i].len || memcmp(t + s[i].off, want[i], s[i].len) != 0) {
            fprintf(stderr, "span %zu: '%.*s'\n", i, (int)s[i].len, t + s[i].off);
            return 0;
        }
    }
    return want[n] == NULL;
}

static void test_sentences(void) {
    const char *a[] = {"Hello there.", "How are you?", "Fine!", NULL};
    CHECK(spans_are("Hello there. How are you?  Fine!", a, 300));
    const char *b[] = {"Pi is 3.14 today.", "Yes", NULL};
    CHECK(spans_are("Pi is 3.14 today. Yes", b, 300));
    const char *c[] = {"\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82", "\xe5\x86\x8d\xe8\xa7\x81\xef\xbc\x81", NULL};
    CHECK(spans_are("\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82\xe5\x86\x8d\xe8\xa7\x81\xef\xbc\x81", c, 300));
    const char *d[] = {"Wait...", "\"Really?\"", "yes", NULL};
    CHECK(spans_are("Wait... \"Really?\" yes", d, 300));
    const char *e[] = {"Para one", "Para two", NULL};
    CHECK(spans_are("Para one\n\nPara two\n", e, 300));
    const char *f[] = {"aaaa bbbb,", "cccc dddd", NULL};
    CHECK(spans_are("aaaa bbbb, cccc dddd", f, 12));
    ct_span s[4];
    CHECK(ct_split_sentences("   \n ", 5, 100, s, 4) == 0);
    /* a long unbreakable run is cut, never inside a UTF-8 sequence */
    char big[301];
    for (int i = 0; i < 300; i += 3) memcpy(big + i, "\xe4\xbd\xa0", 3);
    big[300] = 0;
    ct_span t[64];
    size_t n = ct_split_sentences(big, 300, 50, t, 64);
    int ok = n >= 6, covered = 0;
    for (size_t i = 0; i < n && i < 64; i++) {
        ok &= t[i].len <= 50 && (t[i].off % 3) == 0 && (t[i].len % 3) == 0;
        covered += (int)t[i].len;
    }
    CHECK(ok && covered == 300);
}

static void test_langcodes(void) {
    static const char *const ok[][2] = {{"en", "english"}, {"EN-us", "english"}, {"en_GB", "english"},
                                        {"zh", "chinese"}, {"zh-Hans-CN", "chinese"}, {"cmn", "chinese"},
                                        {"de-DE", "german"}, {"pt-BR", "portuguese"}, {"ja", "japanese"},
                                        {"ko-KR", "korean"}, {"fr-CA", "french"}, {"ru", "russian"},
                                        {"es-419", "spanish"}, {"it", "italian"}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const char *n = ct_language_from_code(ok[i][0]);
        CHECKF(n && !strcmp(n, ok[i][1]), "%s -> %s", ok[i][0], n ? n : "NULL");
    }
    static const char *const no[] = {"english", "e", "xx", "en US", "en-U$", "", "zhongwen", "-en"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECKF(ct_language_from_code(no[i]) == NULL, "'%s' is not a code", no[i]);
    CHECK(ct_language_from_code(NULL) == NULL);
}

int main(void) {
    test_langcodes();
    test_wav();
    test_sentences();
    return ct_test_finish();
}
