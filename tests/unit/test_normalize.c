/* The text normaliser against its table (tests/data/normalize/cases.tsv: language, input,
   expected; "\n" in a field is a newline, "#" starts a comment line): every case, at least 200,
   each language's readings present; then a language other than English or Chinese leaves text
   unchanged, invalid UTF-8 passes through, and NULL arguments are refused. */
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"
#include "text/normalize.h"

/* Replaces "\n" escapes in place. */
static void unescape(char *s) {
    char *d = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] == 'n') {
            *d++ = '\n';
            s++;
        } else {
            *d++ = *s;
        }
    }
    *d = 0;
}

int main(void) {
    FILE *f = fopen(CT_SRC_DIR "/tests/data/normalize/cases.tsv", "r");
    CHECK(f != NULL);
    if (!f) return ct_test_finish();
    char line[2048], err[256];
    int cases = 0, en = 0, zh = 0, other = 0;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (!n || line[0] == '#') continue;
        char *lang = line, *in = strchr(line, '\t'), *want = in ? strchr(in + 1, '\t') : NULL;
        CHECKF(in && want, "malformed line: %s", line);
        if (!in || !want) continue;
        *in++ = 0;
        *want++ = 0;
        unescape(in);
        unescape(want);
        char *got = NULL;
        CHECK(ct_normalize(in, strlen(in), lang, &got, err, sizeof err) == CT_OK);
        CHECKF(got && !strcmp(got, want), "[%s] '%s' -> '%s', expected '%s'", lang, in, got ? got : "(null)", want);
        free(got);
        cases++;
        en += !strcmp(lang, "english") || !strcmp(lang, "en");
        zh += !strcmp(lang, "chinese") || !strcmp(lang, "zh");
        other += strcmp(lang, "english") && strcmp(lang, "en") && strcmp(lang, "chinese") && strcmp(lang, "zh");
    }
    fclose(f);
    printf("%d cases (%d English, %d Chinese, %d auto or other)\n", cases, en, zh, other);
    CHECK(cases >= 200 && en >= 100 && zh >= 40 && other >= 20);
    /* bytes that are not UTF-8 are copied; NULL arguments are refused */
    char *got = NULL;
    const char bad[] = "a \xff\xfe 5 \xe4\xbd";
    CHECK(ct_normalize(bad, sizeof bad - 1, "english", &got, err, sizeof err) == CT_OK && got &&
          !strcmp(got, "a \xff\xfe five \xe4\xbd"));
    free(got);
    CHECK(ct_normalize(NULL, 0, "english", &got, err, sizeof err) == CT_ERR_INVALID_ARG && got == NULL);
    CHECK(ct_normalize("x", 1, NULL, NULL, err, sizeof err) == CT_ERR_INVALID_ARG);
    return ct_test_finish();
}
