/* Language code table (see langcode.h). */
#include "text/langcode.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *code, *name;
} CODES[] = {
    {"en", "english"},    {"eng", "english"},   {"zh", "chinese"},   {"zho", "chinese"},   {"chi", "chinese"},
    {"cmn", "chinese"},   {"de", "german"},     {"deu", "german"},   {"ger", "german"},    {"it", "italian"},
    {"ita", "italian"},   {"pt", "portuguese"}, {"por", "portuguese"}, {"es", "spanish"},  {"spa", "spanish"},
    {"ja", "japanese"},   {"jpn", "japanese"},  {"ko", "korean"},    {"kor", "korean"},    {"fr", "french"},
    {"fra", "french"},    {"fre", "french"},    {"ru", "russian"},   {"rus", "russian"},
};

const char *ct_language_from_code(const char *code) {
    if (!code) return NULL;
    size_t n = strcspn(code, "-_"); /* the primary subtag */
    if (n < 2 || n > 3) return NULL;
    for (const char *p = code + n; *p; p++) /* the rest must look like subtags: letters, digits, - or _ */
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_'))
            return NULL;
    for (size_t i = 0; i < sizeof CODES / sizeof CODES[0]; i++)
        if (strlen(CODES[i].code) == n && strncasecmp(CODES[i].code, code, n) == 0) return CODES[i].name;
    return NULL;
}
