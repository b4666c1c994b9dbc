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

/* Splits t (max bytes per span) and joins the spans with " | ", a paragraph break as " || ". */
static void joined(const char *t, size_t max, char *out, size_t cap) {
    ct_span s[64];
    size_t n = ct_split_sentences(t, strlen(t), max, s, 64), u = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        u += (size_t)snprintf(out + u, cap - u, "%s%.*s", i ? (s[i].para ? " || " : " | ") : "", (int)s[i].len,
                              t + s[i].off);
}

static void test_sentences(void) {
    static const struct {
        const char *in;
        size_t max;
        const char *want;
    } T[] = {
        {"Hello there. How are you?  Fine!", 300, "Hello there. | How are you? | Fine!"},
        {"Pi is 3.14 today. Yes", 300, "Pi is 3.14 today. | Yes"},
        {"\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82\xe5\x86\x8d\xe8\xa7\x81\xef\xbc\x81", 300,
         "\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82 | \xe5\x86\x8d\xe8\xa7\x81\xef\xbc\x81"},
        {"Wait... \"Really?\" yes", 300, "Wait... | \"Really?\" | yes"},
        {"Para one\n\nPara two\n", 300, "Para one || Para two"},
        {"aaaa bbbb, cccc dddd", 12, "aaaa bbbb, | cccc dddd"},
        /* abbreviations and titles */
        {"Dr. Smith met Mr. Jones and Mrs. Lee. They talked.", 300,
         "Dr. Smith met Mr. Jones and Mrs. Lee. | They talked."},
        {"Ms. Park and Prof. Kim live on Main St. in town. Yes.", 300,
         "Ms. Park and Prof. Kim live on Main St. in town. | Yes."},
        {"It opens Nov. 3 at 5 p.m. sharp. Come early.", 300, "It opens Nov. 3 at 5 p.m. sharp. | Come early."},
        {"We left at 5 p.m. Then it rained.", 300, "We left at 5 p.m. | Then it rained."},
        {"Bring fruit, e.g. apples, i.e. red ones. Done.", 300, "Bring fruit, e.g. apples, i.e. red ones. | Done."},
        {"Pens, paper, etc. are here. Thanks.", 300, "Pens, paper, etc. are here. | Thanks."},
        {"Pens, paper, etc. The rest later.", 300, "Pens, paper, etc. | The rest later."},
        {"It was cats vs. dogs. Cats won.", 300, "It was cats vs. dogs. | Cats won."},
        {"She moved to the U.S. last year. Nice.", 300, "She moved to the U.S. last year. | Nice."},
        {"J. R. R. Tolkien wrote it. Read it.", 300, "J. R. R. Tolkien wrote it. | Read it."},
        {"See Fig. 4 and No. 7 on p. 12. Next.", 300, "See Fig. 4 and No. 7 on p. 12. | Next."},
        {"It happened in Dec. The next year too.", 300, "It happened in Dec. | The next year too."},
        {"He holds a Ph.D. in math. Wow.", 300, "He holds a Ph.D. in math. | Wow."},
        /* numbers, times, URLs, e-mail */
        {"It costs $3.50 at 10:30 today. Ok.", 300, "It costs $3.50 at 10:30 today. | Ok."},
        {"Visit https://example.com/a.html?x=1! Or mail me at a.b@c.org. Bye.", 300,
         "Visit https://example.com/a.html?x=1! | Or mail me at a.b@c.org. | Bye."},
        {"Version 2.0.1 is out. Update.", 300, "Version 2.0.1 is out. | Update."},
        {"In 1999. Then 2000.", 300, "In 1999. | Then 2000."},
        /* ellipses, quotes, brackets */
        {"I was... thinking. Really.", 300, "I was... thinking. | Really."},
        {"Wait\xe2\x80\xa6 What?", 300, "Wait\xe2\x80\xa6 | What?"},
        {"He said \"Stop.\" Then he left.", 300, "He said \"Stop.\" | Then he left."},
        {"(This is an aside.) Back to it.", 300, "(This is an aside.) | Back to it."},
        {"What?! No way!!! Yes.", 300, "What?! | No way!!! | Yes."},
        {"\xe2\x80\x9cQuoted.\xe2\x80\x9d Next one.", 300, "\xe2\x80\x9cQuoted.\xe2\x80\x9d | Next one."},
        /* CJK */
        {"\xe4\xbb\x8a\xe5\xa4\xa9\xe5\xa5\xbd\xef\xbc\x9f\xe6\x98\xaf\xe7\x9a\x84\xef\xbc\x9b\xe8\xb5\xb0\xe5\x90\xa7"
         "\xe3\x80\x82",
         300,
         "\xe4\xbb\x8a\xe5\xa4\xa9\xe5\xa5\xbd\xef\xbc\x9f | \xe6\x98\xaf\xe7\x9a\x84\xef\xbc\x9b | "
         "\xe8\xb5\xb0\xe5\x90\xa7\xe3\x80\x82"},
        {"\xe4\xbb\x96\xe8\xaf\xb4\xef\xbc\x9a\xe2\x80\x9c\xe5\xa5\xbd\xe3\x80\x82\xe2\x80\x9d\xe7\x84\xb6\xe5\x90\x8e"
         "\xe8\xb5\xb0\xe4\xba\x86\xe3\x80\x82",
         300,
         "\xe4\xbb\x96\xe8\xaf\xb4\xef\xbc\x9a\xe2\x80\x9c\xe5\xa5\xbd\xe3\x80\x82\xe2\x80\x9d | "
         "\xe7\x84\xb6\xe5\x90\x8e\xe8\xb5\xb0\xe4\xba\x86\xe3\x80\x82"},
        {"Hello.\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82", 300, "Hello. | \xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82"},
        {"\xe3\x81\x82\xe3\x82\x8a\xe3\x81\x8c\xe3\x81\xa8\xe3\x81\x86\xef\xbc\x81OK.", 300,
         "\xe3\x81\x82\xe3\x82\x8a\xe3\x81\x8c\xe3\x81\xa8\xe3\x81\x86\xef\xbc\x81 | OK."},
        /* paragraphs: a blank line (spaces allowed, CRLF too) is a hard boundary; one newline is not */
        {"No stop here\nsame sentence.", 300, "No stop here\nsame sentence."},
        {"One.\r\n  \r\nTwo. Three.\n\n\n\nFour", 300, "One. || Two. | Three. || Four"},
        {"Dr.\n\nSmith", 300, "Dr. || Smith"},
        /* forced splits: the last clause punctuation, else the last space, never mid-word */
        {"alpha beta gamma delta epsilon zeta eta theta", 20, "alpha beta gamma | delta epsilon zeta | eta theta"},
        {"one two, three four five six seven", 24, "one two, | three four five six | seven"},
        {"one, two three four five six seven", 24, "one, two three four five | six seven"},
        {"x, aaaaaaaaaa bbbbbbbbbb cccc", 24, "x, aaaaaaaaaa bbbbbbbbbb | cccc"},
        {"at 10:30 on the 1,000th day of the year", 16, "at 10:30 on the | 1,000th day of | the year"},
        {"abcdefghijklmnopqrstuvwxyz0123", 10, "abcdefghij | klmnopqrst | uvwxyz0123"},
        {"   \n ", 100, ""},
    };
    char got[2048];
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        joined(T[i].in, T[i].max, got, sizeof got);
        CHECKF(!strcmp(got, T[i].want), "case %zu: '%s' -> '%s', expected '%s'", i, T[i].in, got, T[i].want);
    }
    /* a long unbreakable CJK run is cut between characters, never inside a UTF-8 sequence */
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
    /* a combining sequence stays whole when a long word must be cut */
    char comb[64];
    size_t u = 0;
    for (int i = 0; i < 6; i++) u += (size_t)snprintf(comb + u, sizeof comb - u, "e\xcc\x81\xcc\x81");
    n = ct_split_sentences(comb, u, 8, t, 64);
    ok = n >= 2;
    for (size_t i = 0; i < n && i < 64; i++) ok &= comb[t[i].off] == 'e' && t[i].len % 5 == 0;
    CHECK(ok);
    /* utterances merge neighbours up to the limit, never across a paragraph break */
    const char *p = "A b. C d. E f.\n\nG h. I j.";
    ct_span us[16];
    size_t nu = ct_split_utterances(p, strlen(p), 300, us, 16);
    CHECK(nu == 2 && us[0].len == 14 && !us[0].para && us[1].para && !strncmp(p + us[1].off, "G h. I j.", 9));
    nu = ct_split_utterances(p, strlen(p), 10, us, 16);
    CHECK(nu == 3 && us[0].len == 9 && !us[1].para && us[2].para && us[2].len == 9);
    CHECK(ct_split_utterances(p, strlen(p), 300, NULL, 0) == 5);
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
