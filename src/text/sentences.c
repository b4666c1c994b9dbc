/* Sentence and utterance splitting for long inputs (docs/TEXT.md "Sentences"). */
#include "text/sentences.h"

#include <string.h>
#include <utf8proc.h>

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }

/* Code point at t[i] (i < len) and its byte length; a bad byte is U+FFFD of length 1. */
static size_t cp_at(const char *t, size_t len, size_t i, unsigned *cp) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)t + i, (utf8proc_ssize_t)(len - i), &c);
    if (n < 1) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = (unsigned)c;
    return (size_t)n;
}

int ct_is_cjk(unsigned c) {
    return (c >= 0x2E80 && c <= 0x9FFF) ||   /* radicals, CJK punctuation, kana, Han */
           (c >= 0xAC00 && c <= 0xD7AF) ||   /* Hangul syllables */
           (c >= 0xF900 && c <= 0xFAFF) ||   /* compatibility ideographs */
           (c >= 0xFE30 && c <= 0xFE4F) ||   /* CJK compatibility forms */
           (c >= 0xFF00 && c <= 0xFFEF) ||   /* full-width and half-width forms */
           (c >= 0x20000 && c <= 0x3FFFF);   /* Han extensions */
}

/* Sentence terminators that end a sentence whatever follows: 。！？；｡ */
static int cjk_terminator(unsigned c) {
    return c == 0x3002 || c == 0xFF01 || c == 0xFF1F || c == 0xFF1B || c == 0xFF61 || c == 0xFF0E;
}

/* Closing quotes and brackets that stay with the sentence before them. */
static int closer(unsigned c) {
    return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}' || c == 0x201D || c == 0x2019 || c == 0xBB ||
           c == 0x300D || c == 0x300F || c == 0xFF09 || c == 0x3011 || c == 0x300B || c == 0x3009 || c == 0xFF3D ||
           c == 0xFF02;
}

/* Opening quotes and brackets (stripped from the front of a word before the abbreviation test). */
static int opener(unsigned char c) { return c == '"' || c == '\'' || c == '(' || c == '[' || c == '{'; }

/* Skips terminators and closers after a terminator at j: the end of the sentence's punctuation. */
static size_t absorb(const char *t, size_t len, size_t j) {
    while (j < len) {
        unsigned c;
        size_t n = cp_at(t, len, j, &c);
        if (c == '.' || c == '!' || c == '?' || c == 0x2026 || closer(c) || cjk_terminator(c)) j += n;
        else break;
    }
    return j;
}

/* Abbreviations (the word before the '.', case as written). */
static const char *const TITLES[] = {"Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Mt", "Rev", "Gen", "Sen", "Rep",
                                     "Gov", "Capt", "Lt", "Col", "Sgt", "Hon", "Fr", "Mme", "Mlle", "Messrs",
                                     "Pres", "Supt", "Cmdr", "Adm", "Maj", NULL};
static const char *const NEVER[] = {"e.g", "i.e", "cf", "vs", "viz", "approx", "incl", "esp", "al", "ca", "resp",
                                    "E.g", "I.e", "Cf", "Vs", "Approx", NULL};
/* These end a sentence only when the next word starts with a capital letter. */
static const char *const BEFORE_CAPITAL[] = {"Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct",
                                             "Nov", "Dec", "etc", "Jr", "Sr", "Inc", "Ltd", "Co", "Corp", "Bros",
                                             "No", "Nos", "Vol", "vol", "pp", "p", "Fig", "fig", "Eq", "ed", "eds",
                                             "min", "max", "dept", "Dept", "est", "Ave", "Blvd", "Rd", NULL};

static int in_list(const char *const *l, const char *w, size_t n) {
    for (int i = 0; l[i]; i++)
        if (strlen(l[i]) == n && memcmp(l[i], w, n) == 0) return 1;
    return 0;
}

/* Initials and dotted acronyms: "J", "U.S", "J.R.R" (capitals alone, dots between). */
static int initials(const char *w, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (i % 2 == 0 ? !is_upper((unsigned char)w[i]) : w[i] != '.') return 0;
    return n % 2 == 1;
}

/* Dotted lowercase or mixed abbreviations: "a.m", "p.m", "Ph.D" (letters with dots between). */
static int dotted(const char *w, size_t n) {
    int dots = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c == '.') {
            if (i == 0 || w[i - 1] == '.') return 0;
            dots++;
        } else if (!is_upper(c) && !is_lower(c)) {
            return 0;
        }
    }
    return dots > 0 && w[n - 1] != '.';
}

/* Whether the single '.' at t[i], followed (after its closers, at j) by whitespace or the end,
   ends a sentence: not after a title, an initial or "e.g."; after "Nov.", "etc." or "p.m." only
   before a capitalised word. */
static int period_ends(const char *t, size_t len, size_t i, size_t j) {
    size_t k = j;
    while (k < len && is_space((unsigned char)t[k])) k++;
    if (k >= len) return 1;
    size_t ws = i;
    while (ws > 0 && i - ws < 24 && !is_space((unsigned char)t[ws - 1])) ws--;
    if (ws > 0 && !is_space((unsigned char)t[ws - 1])) return 1; /* a long word: no abbreviation */
    while (ws < i && opener((unsigned char)t[ws])) ws++;
    const char *w = t + ws;
    size_t n = i - ws;
    if (n == 0) return 1;
    if (in_list(TITLES, w, n) || in_list(NEVER, w, n) || initials(w, n)) return 0;
    if (in_list(BEFORE_CAPITAL, w, n) || dotted(w, n)) {
        unsigned char c = (unsigned char)t[k];
        if (opener(c) && k + 1 < len) c = (unsigned char)t[k + 1];
        return is_upper(c) || c >= 0x80; /* a capital, or a non-ASCII start (CJK text) */
    }
    return 1;
}

/* Whether an ellipsis ending at j ends a sentence: at the end, before a CJK character, or
   before whitespace and then a capital, a digit, an opening quote or bracket, or a non-ASCII
   start ("Wait... Really?"); not before a lowercase word ("I was... thinking"). */
static int ellipsis_ends(const char *t, size_t len, size_t j) {
    if (j >= len) return 1;
    unsigned c;
    cp_at(t, len, j, &c);
    if (ct_is_cjk(c)) return 1;
    if (!is_space((unsigned char)t[j])) return 0;
    while (j < len && is_space((unsigned char)t[j])) j++;
    if (j >= len) return 1;
    unsigned char d = (unsigned char)t[j];
    return !is_lower(d);
}

/* Clause punctuation at t[i] where a forced split may fall: its length (the cut goes after it),
   0 if none. ASCII , ; : only before whitespace (not "1,000", "10:30"). */
static size_t clause_at(const char *t, size_t b, size_t i) {
    unsigned char c = (unsigned char)t[i];
    if (c == ',' || c == ';' || c == ':') return (i + 1 >= b || is_space((unsigned char)t[i + 1])) ? 1 : 0;
    if (c < 0x80) return 0;
    unsigned cp;
    size_t n = cp_at(t, b, i, &cp);
    if (cp == 0xFF0C || cp == 0x3001 || cp == 0xFF1A || cp == 0x2014 || cp == 0x2013) return n; /* ，、：— – */
    return 0;
}

typedef struct {
    ct_span *s;
    size_t cap, n;
    int para; /* the next span starts a paragraph */
} sink;

static void emit(sink *o, const char *t, size_t a, size_t b) {
    while (a < b && is_space((unsigned char)t[a])) a++;
    while (b > a && is_space((unsigned char)t[b - 1])) b--;
    if (a == b) return;
    if (o->n < o->cap) o->s[o->n] = (ct_span){a, b - a, o->para && o->n > 0};
    o->n++;
    o->para = 0;
}

/* Where a span [a, b) longer than max must be cut (a < cut <= a + max where possible): the last
   clause punctuation in the limit's later two thirds, else the last space, else the last
   boundary next to a CJK character, else any clause punctuation, else (one word longer than max) the last
   grapheme boundary, else the last code point boundary. */
static size_t forced_cut(const char *t, size_t a, size_t b, size_t max) {
    size_t lim = a + max, clause = 0, space = 0, cjk = 0, graph = 0, cpb = 0;
    utf8proc_int32_t state = 0;
    unsigned prev = 0;
    for (size_t i = a; i <= lim && i < b;) {
        unsigned c;
        size_t n = cp_at(t, b, i, &c);
        if (i > a) {
            cpb = i;
            if (utf8proc_grapheme_break_stateful((utf8proc_int32_t)prev, (utf8proc_int32_t)c, &state)) graph = i;
            if (ct_is_cjk(prev) || ct_is_cjk(c)) cjk = i;
            if (is_space((unsigned char)t[i])) space = i;
        }
        size_t k = clause_at(t, b, i);
        if (k && i + k <= lim) clause = i + k;
        prev = c;
        i += n;
    }
    if (clause && clause - a >= max / 3) return clause;
    if (space) return space;
    if (cjk) return cjk;
    if (clause) return clause;
    if (graph) return graph;
    return cpb ? cpb : lim;
}

/* Emits [a, b), cut where it is longer than max. */
static void emit_long(sink *o, const char *t, size_t a, size_t b, size_t max) {
    for (;;) {
        while (a < b && is_space((unsigned char)t[a])) a++;
        while (b > a && is_space((unsigned char)t[b - 1])) b--;
        if (b - a <= max) break;
        size_t cut = forced_cut(t, a, b, max);
        emit(o, t, a, cut);
        a = cut;
    }
    emit(o, t, a, b);
}

size_t ct_split_sentences(const char *t, size_t len, size_t max_bytes, ct_span *spans, size_t cap) {
    sink o = {spans, spans ? cap : 0, 0, 0};
    size_t start = 0, i = 0;
    if (max_bytes < 8) max_bytes = 8;
    while (i < len) {
        unsigned char b0 = (unsigned char)t[i];
        size_t end = 0; /* a sentence ends here (exclusive) */
        size_t next = 0;
        if (b0 == '\n') {
            size_t j = i + 1;
            while (j < len && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r')) j++;
            if (j < len && t[j] == '\n') { /* a blank line: a paragraph break */
                emit_long(&o, t, start, i, max_bytes);
                if (o.n) o.para = 1;
                while (j < len && is_space((unsigned char)t[j])) j++;
                start = i = j;
                continue;
            }
            i++;
            continue;
        }
        if (b0 == '!' || b0 == '?') {
            size_t j = absorb(t, len, i + 1);
            unsigned c = 0;
            if (j < len) cp_at(t, len, j, &c);
            if (j >= len || is_space((unsigned char)t[j]) || ct_is_cjk(c)) end = j;
            next = j;
        } else if (b0 == '.' || (b0 == 0xE2 && i + 2 < len && (unsigned char)t[i + 1] == 0x80 &&
                                 (unsigned char)t[i + 2] == 0xA6)) {
            int dots = 0, ell = 0;
            size_t j = i;
            for (;;) {
                if (j < len && t[j] == '.') j++, dots++;
                else if (j + 2 < len && !memcmp(t + j, "\xe2\x80\xa6", 3)) j += 3, ell = 1;
                else break;
            }
            size_t k = absorb(t, len, j);
            if (dots >= 2 || ell) {
                if (ellipsis_ends(t, len, k)) end = k;
            } else {
                unsigned c = 0;
                if (k < len) cp_at(t, len, k, &c);
                if (k < len && !is_space((unsigned char)t[k])) {
                    if (ct_is_cjk(c)) end = k; /* "Hello.你好" */
                } else if (period_ends(t, len, i, k)) {
                    end = k;
                }
            }
            next = k;
        } else if (b0 >= 0x80) {
            unsigned c;
            size_t n = cp_at(t, len, i, &c);
            if (cjk_terminator(c)) end = next = absorb(t, len, i + n);
            else next = i + n;
        } else {
            next = i + 1;
        }
        if (end) {
            emit_long(&o, t, start, end, max_bytes);
            start = end;
        }
        i = next;
    }
    emit_long(&o, t, start, len, max_bytes);
    return o.n;
}

size_t ct_split_utterances(const char *text, size_t len, size_t max_bytes, ct_span *spans, size_t cap) {
    size_t ns = ct_split_sentences(text, len, max_bytes, spans, cap);
    if (ns > cap || !spans) return ns; /* caller sizes spans with a first call (spans NULL, cap 0) */
    size_t nu = 0;
    for (size_t i = 0; i < ns; i++) {
        if (nu && !spans[i].para && spans[i].off + spans[i].len - spans[nu - 1].off <= max_bytes)
            spans[nu - 1].len = spans[i].off + spans[i].len - spans[nu - 1].off;
        else
            spans[nu++] = spans[i];
    }
    return nu;
}
