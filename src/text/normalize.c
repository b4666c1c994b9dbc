/* Text normaliser: English and Chinese readings of numbers, dates, times, money, units and
   abbreviations (docs/TEXT.md "Normaliser"); a single left-to-right scan. */
#include "text/normalize.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <utf8proc.h>

#include "text/langcode.h"
#include "text/sentences.h"

/* ---- output buffer ------------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sb;

static void put(sb *o, const char *s, size_t n) {
    if (o->oom) return;
    if (o->n + n + 1 > o->cap) {
        size_t c = o->cap ? o->cap : 64;
        while (c < o->n + n + 1) c *= 2;
        char *q = realloc(o->p, c);
        if (!q) {
            o->oom = 1;
            return;
        }
        o->p = q;
        o->cap = c;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
    o->p[o->n] = 0;
}

static void puts_(sb *o, const char *s) { put(o, s, strlen(s)); }

/* A word, with a space before it after a letter, a digit or clause punctuation. */
static void word(sb *o, const char *s) {
    if (o->n) {
        unsigned char c = (unsigned char)o->p[o->n - 1];
        if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || strchr(",;:!?)", c))
            put(o, " ", 1);
    }
    puts_(o, s);
}

/* ---- characters ---------------------------------------------------------------------------- */

static int is_d(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_al(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
static int is_sp(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

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

/* The code point ending at i (exclusive), 0 at the start. */
static unsigned cp_before(const char *t, size_t i) {
    if (i == 0) return 0;
    size_t k = i - 1;
    while (k > 0 && i - k < 4 && ((unsigned char)t[k] & 0xC0) == 0x80) k--;
    unsigned c;
    cp_at(t, i, k, &c);
    return c;
}

/* Letters of a script that reads numbers in Chinese: Han, kana, bopomofo (not CJK punctuation). */
static int han(unsigned c) {
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3100 && c <= 0x312F) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3FFFF);
}

static int letter(unsigned c) {
    if (c < 0x80) return is_al((unsigned char)c);
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

/* ---- English numbers ------------------------------------------------------------------------ */

static const char *const ONES[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                   "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                                   "seventeen", "eighteen", "nineteen"};
static const char *const TENS[] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};

static void en_below_1000(sb *o, unsigned n) {
    if (n >= 100) {
        word(o, ONES[n / 100]);
        word(o, "hundred");
        n %= 100;
        if (!n) return;
    }
    if (n < 20) {
        word(o, ONES[n]);
    } else {
        word(o, TENS[n / 10]);
        if (n % 10) {
            put(o, "-", 1);
            puts_(o, ONES[n % 10]);
        }
    }
}

/* n < 10^15 */
static void en_int(sb *o, uint64_t n) {
    static const char *const SCALE[] = {"trillion", "billion", "million", "thousand", ""};
    static const uint64_t DIV[] = {1000000000000ull, 1000000000ull, 1000000ull, 1000ull, 1ull};
    if (n == 0) {
        word(o, "zero");
        return;
    }
    for (int k = 0; k < 5; k++) {
        unsigned part = (unsigned)(n / DIV[k] % 1000);
        if (!part) continue;
        en_below_1000(o, part);
        if (SCALE[k][0]) word(o, SCALE[k]);
    }
}

static void en_digits(sb *o, const char *d, size_t n, int oh) {
    for (size_t i = 0; i < n; i++)
        if (is_d((unsigned char)d[i])) word(o, d[i] == '0' && oh ? "oh" : ONES[d[i] - '0']);
}

/* The ordinal of the cardinal just written from `from` on: its last word changes. */
static void en_ordinalize(sb *o, size_t from) {
    static const char *const IRR[][2] = {{"one", "first"},   {"two", "second"}, {"three", "third"},
                                         {"five", "fifth"},  {"eight", "eighth"}, {"nine", "ninth"},
                                         {"twelve", "twelfth"}};
    size_t w = o->n;
    while (w > from && o->p[w - 1] != ' ' && o->p[w - 1] != '-') w--;
    char last[16];
    size_t ln = o->n - w;
    if (ln >= sizeof last) return;
    memcpy(last, o->p + w, ln);
    last[ln] = 0;
    for (size_t i = 0; i < sizeof IRR / sizeof IRR[0]; i++)
        if (!strcmp(last, IRR[i][0])) {
            o->n = w;
            puts_(o, IRR[i][1]);
            return;
        }
    if (ln && last[ln - 1] == 'y') {
        o->n--;
        puts_(o, "ieth");
    } else {
        puts_(o, "th");
    }
}

static void en_ordinal(sb *o, uint64_t n) {
    size_t from = o->n;
    en_int(o, n);
    en_ordinalize(o, from);
}

/* 1000..2099 read as a year: nineteen ninety-nine, nineteen oh five, two thousand five,
   twenty twenty-six, nineteen hundred. */
static void en_year(sb *o, unsigned y) {
    if ((y >= 2000 && y <= 2009) || y % 1000 == 0) {
        en_int(o, y);
        return;
    }
    en_below_1000(o, y / 100);
    if (y % 100 == 0) word(o, "hundred");
    else if (y % 100 < 10) {
        word(o, "oh");
        word(o, ONES[y % 10]);
    } else {
        en_below_1000(o, y % 100);
    }
}

/* ---- Chinese numbers ------------------------------------------------------------------------ */

static const char *const ZD[] = {"零", "一", "二", "三", "四", "五", "六", "七", "八", "九"};

/* A group 1..9999; zero_first: a 零 before it (a gap in front). */
static void zh_group(sb *o, unsigned g, int leading) {
    static const char *const U[] = {"千", "百", "十", ""};
    static const unsigned D[] = {1000, 100, 10, 1};
    int started = 0, zero = 0;
    for (int k = 0; k < 4; k++) {
        unsigned d = g / D[k] % 10;
        if (!d) {
            if (started) zero = 1;
            continue;
        }
        if (zero) puts_(o, "零");
        zero = 0;
        if (k == 2 && d == 1 && leading && !started) puts_(o, "十"); /* 十五, not 一十五 */
        else {
            puts_(o, (d == 2 && k == 0 && leading && !started) ? "两" : ZD[d]);
            puts_(o, U[k]);
        }
        started = 1;
    }
}

/* n < 10^16 */
static void zh_int(sb *o, uint64_t n) {
    static const char *const U[] = {"万亿", "亿", "万", ""};
    static const uint64_t D[] = {1000000000000ull, 100000000ull, 10000ull, 1ull};
    if (n == 0) {
        puts_(o, "零");
        return;
    }
    int started = 0, gap = 0;
    for (int k = 0; k < 4; k++) {
        unsigned g = (unsigned)(n / D[k] % 10000);
        if (!g) {
            if (started) gap = 1;
            continue;
        }
        if (started && (gap || g < 1000)) puts_(o, "零");
        gap = 0;
        zh_group(o, g, !started);
        puts_(o, U[k]);
        started = 1;
    }
}

static void zh_digits(sb *o, const char *d, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (is_d((unsigned char)d[i])) puts_(o, ZD[d[i] - '0']);
}

/* ---- the scan ------------------------------------------------------------------------------- */

enum { LANG_KEEP = 0, LANG_EN = 1, LANG_ZH = 2, LANG_AUTO = 3 };

typedef struct {
    const char *t;
    size_t len;
    int lang;
    int text_zh; /* auto: the text has more Han than Latin letters */
    sb o;
} nz;

/* Reading of a number at [a, b): English or Chinese by the language, or by the nearest letters. */
static int zh_at(const nz *z, size_t a, size_t b) {
    if (z->lang != LANG_AUTO) return z->lang == LANG_ZH;
    size_t l = a, r = b;
    for (int step = 0; step < 24; step++) {
        if (l > 0) {
            unsigned c = cp_before(z->t, l);
            size_t k = l - 1;
            while (k > 0 && ((unsigned char)z->t[k] & 0xC0) == 0x80) k--;
            l = k;
            if (han(c)) return 1;
            if (letter(c)) return 0;
        }
        if (r < z->len) {
            unsigned c;
            r += cp_at(z->t, z->len, r, &c);
            if (han(c)) return 1;
            if (letter(c)) return 0;
        }
    }
    return z->text_zh;
}

/* Parses digits at i: [i, *end) with comma groups ("1,234,567") when well formed; the value
   (saturated) in *v and the digit count in *nd. */
static size_t digits_at(const char *t, size_t len, size_t i, uint64_t *v, size_t *nd, int *commas) {
    size_t j = i;
    uint64_t x = 0;
    size_t n = 0;
    *commas = 0;
    while (j < len && is_d((unsigned char)t[j])) {
        if (x < 100000000000000000ull) x = x * 10 + (uint64_t)(t[j] - '0');
        else x = UINT64_MAX;
        j++, n++;
    }
    if (n >= 1 && n <= 3)
        while (j + 3 < len + 0 && t[j] == ',' && is_d((unsigned char)t[j + 1]) && is_d((unsigned char)t[j + 2]) &&
               is_d((unsigned char)t[j + 3]) && (j + 4 >= len || !is_d((unsigned char)t[j + 4]))) {
            for (int k = 1; k <= 3; k++)
                if (x < 100000000000000000ull) x = x * 10 + (uint64_t)(t[j + k] - '0');
            j += 4, n += 3;
            *commas = 1;
        }
    *v = x;
    *nd = n;
    return j;
}

/* Case-sensitive match of s at t[i] followed by a non-letter (or the end). */
static int word_at(const char *t, size_t len, size_t i, const char *s) {
    size_t n = strlen(s);
    if (i + n > len || memcmp(t + i, s, n) != 0) return 0;
    return i + n == len || !is_al((unsigned char)t[i + n]);
}

/* am/pm after a time or an hour: "a.m.", "am", "AM", "A.M." at t[i]; its length, *pm set. */
static size_t ampm_at(const char *t, size_t len, size_t i, int *pm) {
    static const char *const F[] = {"a.m.", "p.m.", "A.M.", "P.M.", "am", "pm", "AM", "PM", "a.m", "p.m", NULL};
    for (int k = 0; F[k]; k++) {
        size_t n = strlen(F[k]);
        if (i + n <= len && !memcmp(t + i, F[k], n) && (i + n == len || !is_al((unsigned char)t[i + n]))) {
            *pm = (F[k][0] | 0x20) == 'p';
            return n;
        }
    }
    return 0;
}

/* Whether the text after a trailing '.' at t[i - 1] looks like a new sentence (the end, or
   whitespace then a capital): the normaliser keeps that '.' for the splitter. */
static int ends_sentence(const char *t, size_t len, size_t i) {
    if (i >= len) return 1;
    if (!is_sp((unsigned char)t[i])) return 0;
    while (i < len && is_sp((unsigned char)t[i])) i++;
    return i >= len || (t[i] >= 'A' && t[i] <= 'Z') || (unsigned char)t[i] >= 0x80;
}

typedef struct {
    const char *sym; /* prefix symbol */
    const char *one, *many, *sub1, *subn, *zh;
} money;

static const money MONEY[] = {{"$", "dollar", "dollars", "cent", "cents", "美元"},
                              {"\xe2\x82\xac", "euro", "euros", "cent", "cents", "欧元"},
                              {"\xc2\xa3", "pound", "pounds", "penny", "pence", "英镑"},
                              {"\xc2\xa5", "yen", "yen", NULL, NULL, "元"},
                              {"\xef\xbf\xa5", "yuan", "yuan", NULL, NULL, "元"}};

typedef struct {
    const char *sym, *one, *many, *zh;
} unit;

/* Longest first where one is a prefix of another. */
static const unit UNITS[] = {
    {"km/h", "kilometer per hour", "kilometers per hour", "公里每小时"},
    {"kph", "kilometer per hour", "kilometers per hour", "公里每小时"},
    {"mph", "mile per hour", "miles per hour", "英里每小时"},
    {"Mbps", "megabit per second", "megabits per second", "兆比特每秒"},
    {"\xc2\xb0" "C", "degree Celsius", "degrees Celsius", "摄氏度"},
    {"\xc2\xb0" "F", "degree Fahrenheit", "degrees Fahrenheit", "华氏度"},
    {"\xe2\x84\x83", "degree Celsius", "degrees Celsius", "摄氏度"},
    {"\xc2\xb0", "degree", "degrees", "度"},
    {"km", "kilometer", "kilometers", "公里"},
    {"cm", "centimeter", "centimeters", "厘米"},
    {"mm", "millimeter", "millimeters", "毫米"},
    {"kg", "kilogram", "kilograms", "公斤"},
    {"mg", "milligram", "milligrams", "毫克"},
    {"lbs", "pound", "pounds", "磅"},
    {"lb", "pound", "pounds", "磅"},
    {"oz", "ounce", "ounces", "盎司"},
    {"mi", "mile", "miles", "英里"},
    {"ft", "foot", "feet", "英尺"},
    {"ml", "milliliter", "milliliters", "毫升"},
    {"mL", "milliliter", "milliliters", "毫升"},
    {"KB", "kilobyte", "kilobytes", "千字节"},
    {"kB", "kilobyte", "kilobytes", "千字节"},
    {"MB", "megabyte", "megabytes", "兆字节"},
    {"GB", "gigabyte", "gigabytes", "吉字节"},
    {"TB", "terabyte", "terabytes", "太字节"},
    {"kHz", "kilohertz", "kilohertz", "千赫"},
    {"MHz", "megahertz", "megahertz", "兆赫"},
    {"GHz", "gigahertz", "gigahertz", "吉赫"},
    {"Hz", "hertz", "hertz", "赫兹"},
    {"kW", "kilowatt", "kilowatts", "千瓦"},
    {"ms", "millisecond", "milliseconds", "毫秒"},
    {"min", "minute", "minutes", "分钟"},
    {"hr", "hour", "hours", "小时"},
    {"g", "gram", "grams", "克"},
    {"m", "meter", "meters", "米"},
    {"L", "liter", "liters", "升"},
    {"W", "watt", "watts", "瓦"},
    {"V", "volt", "volts", "伏"},
};

/* A unit at t[i] (one optional space before it), not followed by a letter or digit: its entry,
   *end after it. */
static const unit *unit_at(const char *t, size_t len, size_t i, size_t *end) {
    if (i < len && t[i] == ' ') i++;
    for (size_t k = 0; k < sizeof UNITS / sizeof UNITS[0]; k++) {
        size_t n = strlen(UNITS[k].sym);
        if (i + n > len || memcmp(t + i, UNITS[k].sym, n) != 0) continue;
        if (i + n < len && (is_al((unsigned char)t[i + n]) || is_d((unsigned char)t[i + n]))) continue;
        *end = i + n;
        return &UNITS[k];
    }
    return NULL;
}

static const char *const MONTHS[] = {"January", "February", "March",     "April",   "May",      "June",
                                     "July",    "August",   "September", "October", "November", "December"};
static const char *const MON3[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* A month name or abbreviation (optionally with '.') at t[i]: 1..12, *end after it (and its '.'). */
static int month_at(const char *t, size_t len, size_t i, size_t *end, int *dotted) {
    for (int m = 0; m < 12; m++) {
        const char *cand[3] = {MONTHS[m], MON3[m], m == 8 ? "Sept" : NULL};
        for (int c = 0; c < 3 && cand[c]; c++) {
            size_t n = strlen(cand[c]);
            if (i + n > len || memcmp(t + i, cand[c], n) != 0) continue;
            size_t j = i + n;
            *dotted = 0;
            if (j < len && t[j] == '.' && c > 0) j++, *dotted = 1;
            else if (j < len && is_al((unsigned char)t[j])) continue;
            *end = j;
            return m + 1;
        }
    }
    return 0;
}

/* Reads "Month D[, YYYY]" (English) or Y年M月D日 (Chinese) for a date. year <= 0: none. */
static void say_date(nz *z, int zh, int year, int month, int day) {
    sb *o = &z->o;
    if (zh) {
        if (year > 0) {
            char y[8];
            int k = snprintf(y, sizeof y, "%d", year);
            zh_digits(o, y, (size_t)k);
            puts_(o, "年");
        }
        zh_int(o, (uint64_t)month);
        puts_(o, "月");
        zh_int(o, (uint64_t)day);
        puts_(o, "日");
        return;
    }
    word(o, MONTHS[month - 1]);
    en_ordinal(o, (uint64_t)day);
    if (year > 0) {
        put(o, ",", 1);
        if (year >= 1000 && year <= 2099) en_year(o, (unsigned)year);
        else en_int(o, (uint64_t)year);
    }
}

static int valid_date(int y, int m, int d) {
    static const int DAYS[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return y >= 0 && m >= 1 && m <= 12 && d >= 1 && d <= DAYS[m - 1];
}

/* The fixed-width number at t[i..i+n) when all are digits, else -1. */
static int fixed_num(const char *t, size_t len, size_t i, size_t n) {
    if (i + n > len) return -1;
    int v = 0;
    for (size_t k = 0; k < n; k++) {
        if (!is_d((unsigned char)t[i + k])) return -1;
        v = v * 10 + (t[i + k] - '0');
    }
    return v;
}

/* Dates at a digit: 2026-12-03 (ISO), 12/03/2026 (US: month/day/year; day/month/year when the
   first part is over 12). Returns the end, 0 when none. */
static size_t numeric_date(nz *z, size_t i) {
    const char *t = z->t;
    size_t len = z->len;
    int y = fixed_num(t, len, i, 4);
    if (y >= 0 && i + 10 <= len && t[i + 4] == '-' && t[i + 7] == '-') {
        int m = fixed_num(t, len, i + 5, 2), d = fixed_num(t, len, i + 8, 2);
        if (m >= 0 && d >= 0 && valid_date(y, m, d) && (i + 10 == len || !is_d((unsigned char)t[i + 10]))) {
            say_date(z, zh_at(z, i, i + 10), y, m, d);
            return i + 10;
        }
    }
    size_t j = i;
    int a = 0, b = 0, na = 0, nb = 0;
    while (j < len && is_d((unsigned char)t[j]) && na < 3) a = a * 10 + (t[j++] - '0'), na++;
    if (na < 1 || na > 2 || j >= len || t[j] != '/') return 0;
    j++;
    while (j < len && is_d((unsigned char)t[j]) && nb < 3) b = b * 10 + (t[j++] - '0'), nb++;
    if (nb < 1 || nb > 2 || j >= len || t[j] != '/') return 0;
    y = fixed_num(t, len, j + 1, 4);
    if (y < 0 || (j + 5 < len && is_d((unsigned char)t[j + 5]))) return 0;
    int m = a, d = b;
    if (a > 12 && b <= 12) m = b, d = a;
    if (!valid_date(y, m, d)) return 0;
    say_date(z, zh_at(z, i, j + 5), y, m, d);
    return j + 5;
}

/* Times at a digit: H:MM or H:MM:SS (hours 0-24, minutes and seconds 00-59), then an optional
   am/pm. Returns the end, 0 when none. */
static size_t clock_time(nz *z, size_t i) {
    const char *t = z->t;
    size_t len = z->len, j = i;
    int h = 0, nh = 0;
    while (j < len && is_d((unsigned char)t[j]) && nh < 3) h = h * 10 + (t[j++] - '0'), nh++;
    if (nh < 1 || nh > 2 || h > 24 || j >= len || t[j] != ':') return 0;
    int mi = fixed_num(t, len, j + 1, 2);
    if (mi < 0 || mi > 59) return 0;
    j += 3;
    int s = -1;
    if (j + 2 < len && t[j] == ':') {
        s = fixed_num(t, len, j + 1, 2);
        if (s < 0 || s > 59) return 0;
        j += 3;
    }
    if (j < len && is_d((unsigned char)t[j])) return 0;
    int pm = 0;
    size_t k = j + (j < len && t[j] == ' ');
    size_t na = ampm_at(t, len, k, &pm);
    int zh = zh_at(z, i, j);
    sb *o = &z->o;
    if (zh) {
        if (h == 2) puts_(o, "两");
        else zh_int(o, (uint64_t)h);
        puts_(o, "点");
        if (mi) {
            if (mi < 10) puts_(o, "零");
            zh_int(o, (uint64_t)mi);
            puts_(o, "分");
        }
        if (s > 0) {
            zh_int(o, (uint64_t)s);
            puts_(o, "秒");
        }
        return j;
    }
    en_int(o, (uint64_t)h);
    if (mi == 0 && s <= 0 && !na) word(o, "o'clock");
    else if (mi > 0 && mi < 10) {
        word(o, "oh");
        word(o, ONES[mi]);
    } else if (mi > 0) {
        en_int(o, (uint64_t)mi);
    }
    if (s > 0) {
        word(o, "and");
        en_int(o, (uint64_t)s);
        word(o, s == 1 ? "second" : "seconds");
    }
    if (na) {
        word(o, pm ? "p m" : "a m");
        j = k + na;
        if (t[j - 1] == '.' && ends_sentence(t, len, j)) put(o, ".", 1);
    }
    return j;
}

/* The word before position i, lower-cased into w (empty when none). */
static void prev_word(const char *t, size_t i, char *w, size_t cap) {
    size_t e = i;
    while (e > 0 && t[e - 1] == ' ') e--;
    size_t b = e;
    while (b > 0 && is_al((unsigned char)t[b - 1])) b--;
    size_t n = e - b < cap - 1 ? e - b : cap - 1;
    for (size_t k = 0; k < n; k++) w[k] = (char)(t[b + k] | 0x20);
    w[n] = 0;
}

static int year_context(const char *t, size_t i) {
    static const char *const W[] = {"in", "since", "from", "until", "till", "by", "of", "year", "before",
                                    "after", "during", "circa", "around", "between", NULL};
    char w[16];
    prev_word(t, i, w, sizeof w);
    for (int k = 0; W[k]; k++)
        if (!strcmp(w, W[k])) return 1;
    return 0;
}

/* A number (with its sign, currency, fraction and suffix) at i. Returns the end, 0 when the
   characters there are not read as a number (they are then copied). */
static size_t number(nz *z, size_t i) {
    const char *t = z->t;
    size_t len = z->len, j = i;
    sb *o = &z->o;
    int neg = 0;
    const money *cur = NULL;
    if (t[j] == '-' || (j + 2 < len && !memcmp(t + j, "\xe2\x88\x92", 3))) {
        j += t[j] == '-' ? 1 : 3;
        neg = 1;
    }
    for (size_t k = 0; k < sizeof MONEY / sizeof MONEY[0] && j < len && !is_d((unsigned char)t[j]); k++) {
        size_t n = strlen(MONEY[k].sym);
        if (j + n < len && !memcmp(t + j, MONEY[k].sym, n) && is_d((unsigned char)t[j + n])) {
            cur = &MONEY[k];
            j += n;
        }
    }
    if (j >= len || !is_d((unsigned char)t[j])) return 0;
    if (!neg && !cur) {
        size_t e = numeric_date(z, j);
        if (!e) e = clock_time(z, j);
        if (e) return e;
    }
    size_t ds = j, nd;
    uint64_t v;
    int commas;
    j = digits_at(t, len, j, &v, &nd, &commas);
    size_t de = j, fs = 0, fe = 0;
    if (j + 1 < len && t[j] == '.' && is_d((unsigned char)t[j + 1])) {
        fs = j + 1;
        fe = fs;
        while (fe < len && is_d((unsigned char)t[fe])) fe++;
        if (fe + 1 < len && t[fe] == '.' && is_d((unsigned char)t[fe + 1])) return 0; /* 2.0.1, 10.0.0.1 */
        j = fe;
    }
    /* a fraction, ratio, path or a date or time that is none (1/2, 3:1, 31/31/2026): as written */
    if (!cur && j + 1 < len && (t[j] == '/' || t[j] == ':') && is_d((unsigned char)t[j + 1])) return 0;
    /* glued to letters that are no suffix: an identifier (MP3, 4K, 3D, COVID19): as written */
    int zh = zh_at(z, i, j);
    const char *suf = t + j;
    size_t left = len - j;
    int ordinal = 0, decade = 0, pct = 0;
    if (!fs && !cur && left >= 2 &&
        (!strncasecmp(suf, "st", 2) || !strncasecmp(suf, "nd", 2) || !strncasecmp(suf, "rd", 2) ||
         !strncasecmp(suf, "th", 2)) &&
        (left == 2 || !is_al((unsigned char)suf[2])))
        ordinal = 1;
    else if (!fs && !cur && !commas && left >= 1 && suf[0] == 's' && (left == 1 || !is_al((unsigned char)suf[1])) &&
             (nd == 4 || (nd == 2 && ds > 0 && t[ds - 1] == '\'')) && v % 10 == 0)
        decade = 1;
    else if (left >= 1 && (suf[0] == '%' || (left >= 3 && !memcmp(suf, "\xef\xbc\x85", 3))))
        pct = suf[0] == '%' ? 1 : 3;
    size_t uend = 0;
    const unit *u = (!cur && !pct && !ordinal && !decade) ? unit_at(t, len, j, &uend) : NULL;
    int pm = 0;
    size_t ap = 0, apk = j + (j < len && t[j] == ' ');
    if (!u && !cur && !pct && !ordinal && !decade && !fs && v >= 1 && v <= 12 && nd <= 2)
        ap = ampm_at(t, len, apk, &pm);
    if (!ordinal && !decade && !pct && !u && !ap && j < len && (is_al((unsigned char)t[j]) || t[j] == '_')) return 0;
    int long_digits = nd > 15 || (nd > 1 && t[ds] == '0' && !commas && !fs);
    /* ---- read it ---- */
    if (zh) {
        if (neg) puts_(o, "负");
        if (pct) puts_(o, "百分之");
        if (long_digits) zh_digits(o, t + ds, de - ds);
        else if (nd == 4 && !commas && !fs && j + 3 <= len && !memcmp(t + j, "年", 3)) zh_digits(o, t + ds, nd);
        else if (v == 2 && !fs && j + 3 <= len && (!memcmp(t + j, "个", 3) || !memcmp(t + j, "位", 3) ||
                                                   !memcmp(t + j, "次", 3) || !memcmp(t + j, "天", 3) ||
                                                   !memcmp(t + j, "只", 3) || !memcmp(t + j, "本", 3)))
            puts_(o, "两");
        else zh_int(o, v);
        if (fs) {
            puts_(o, "点");
            zh_digits(o, t + fs, fe - fs);
        }
        if (cur) puts_(o, cur->zh);
        if (u) puts_(o, u->zh);
        if (ap) puts_(o, pm ? "下午" : "上午"); /* read after the hour, as written */
        return u ? uend : ap ? apk + ap : pct ? j + (size_t)pct : ordinal ? j + 2 : decade ? j + 1 : j;
    }
    if (neg) word(o, "minus");
    if (ordinal) {
        if (long_digits) en_digits(o, t + ds, de - ds, 0);
        else en_ordinal(o, v);
        return j + 2;
    }
    if (decade) { /* 1990s, '80s */
        size_t from = o->n;
        if (nd == 4 && v >= 1000 && v <= 2099) en_year(o, (unsigned)v);
        else if (nd == 4) en_int(o, v);
        else en_below_1000(o, (unsigned)v);
        /* the last word takes -s (twenties, nineties, hundreds, thousands) */
        if (o->n > from && o->p[o->n - 1] == 'y') {
            o->n--;
            puts_(o, "ies");
        } else {
            puts_(o, "s");
        }
        return j + 1;
    }
    /* money: $5.20 -> five dollars and twenty cents; $5 million -> five million dollars */
    if (cur) {
        static const char *const SCALE[] = {"thousand", "million", "billion", "trillion", NULL};
        const char *scale = NULL;
        size_t send = j;
        if (j + 1 < len && t[j] == ' ')
            for (int k = 0; SCALE[k]; k++)
                if (word_at(t, len, j + 1, SCALE[k])) scale = SCALE[k], send = j + 1 + strlen(SCALE[k]);
        int cents = -1;
        if (fs && fe - fs <= 2 && cur->sub1 && !scale)
            cents = (t[fs] - '0') * 10 + (fe - fs == 2 ? t[fs + 1] - '0' : 0);
        if (long_digits) en_digits(o, t + ds, de - ds, 0);
        else if (v || cents <= 0 || fs == 0) en_int(o, v);
        if (fs && cents < 0) {
            word(o, "point");
            en_digits(o, t + fs, fe - fs, 0);
        }
        if (scale) word(o, scale);
        if (v || cents <= 0 || fs == 0) word(o, (v == 1 && !scale && (!fs || cents >= 0)) ? cur->one : cur->many);
        if (cents > 0) {
            if (v) word(o, "and");
            en_int(o, (uint64_t)cents);
            word(o, cents == 1 ? cur->sub1 : cur->subn);
        }
        return send;
    }
    int year = !fs && !commas && nd == 4 && v >= 1000 && v <= 2099 && !u && !pct && !neg &&
               (year_context(t, i) || (j + 2 < len && t[j] == ' ' && (word_at(t, len, j + 1, "BC") || word_at(t, len, j + 1, "AD") ||
                                                       word_at(t, len, j + 1, "BCE") || word_at(t, len, j + 1, "CE"))));
    if (year) en_year(o, (unsigned)v);
    else if (long_digits) en_digits(o, t + ds, de - ds, 0);
    else en_int(o, v);
    if (fs) {
        word(o, "point");
        en_digits(o, t + fs, fe - fs, 0);
    }
    if (pct) {
        word(o, "percent");
        return j + (size_t)pct;
    }
    if (u) {
        word(o, (v == 1 && !fs) ? u->one : u->many);
        return uend;
    }
    if (ap) {
        word(o, pm ? "p m" : "a m");
        size_t e = apk + ap;
        if (t[e - 1] == '.' && ends_sentence(t, len, e)) put(o, ".", 1);
        return e;
    }
    return j;
}

typedef struct {
    const char *abbr, *say;
    int can_end; /* may end a sentence: its '.' is kept there */
} abbrev;

static const abbrev ABBR[] = {
    {"Mr.", "Mister", 0},       {"Mrs.", "Missus", 0},      {"Ms.", "Miz", 0},          {"Prof.", "Professor", 0},
    {"Jr.", "Junior", 1},       {"Sr.", "Senior", 1},       {"Mt.", "Mount", 0},        {"Ave.", "Avenue", 1},
    {"Blvd.", "Boulevard", 1},  {"Rd.", "Road", 1},         {"etc.", "et cetera", 1},   {"e.g.", "for example", 0},
    {"i.e.", "that is", 0},     {"vs.", "versus", 0},       {"approx.", "approximately", 0},
    {"Gen.", "General", 0},     {"Capt.", "Captain", 0},    {"Lt.", "Lieutenant", 0},   {"Sgt.", "Sergeant", 0},
    {"Rev.", "Reverend", 0},    {"Inc.", "Incorporated", 1}, {"Ltd.", "Limited", 1},    {"Corp.", "Corporation", 1},
    {"Dept.", "Department", 1}, {"Fig.", "Figure", 0},      {"Vol.", "Volume", 0},      {"Gov.", "Governor", 0},
};

/* A Latin word at i (preceded by no letter or digit): abbreviations and month dates. Returns the
   end, 0 when it is copied as written. */
static size_t latin_word(nz *z, size_t i) {
    const char *t = z->t;
    size_t len = z->len, j = i;
    sb *o = &z->o;
    while (j < len && (is_al((unsigned char)t[j]) || (t[j] == '.' && j > i && is_al((unsigned char)t[j - 1]))))
        j++;
    /* month dates: Dec 3, Dec. 3, 2026, December 3rd */
    size_t me;
    int dotted;
    int m = month_at(t, len, i, &me, &dotted);
    if (m && me + 1 < len && t[me] == ' ' && is_d((unsigned char)t[me + 1])) {
        size_t k = me + 1;
        int d = 0, nd = 0;
        while (k < len && is_d((unsigned char)t[k]) && nd < 3) d = d * 10 + (t[k++] - '0'), nd++;
        if (nd <= 2 && k + 1 < len && (!strncasecmp(t + k, "st", 2) || !strncasecmp(t + k, "nd", 2) ||
                                       !strncasecmp(t + k, "rd", 2) || !strncasecmp(t + k, "th", 2)))
            k += 2;
        if (nd <= 2 && d >= 1 && d <= 31 && (k >= len || !is_al((unsigned char)t[k])) && (k >= len || !is_d((unsigned char)t[k]))) {
            int y = -1;
            if (k + 6 <= len && t[k] == ',' && t[k + 1] == ' ') {
                int yy = fixed_num(t, len, k + 2, 4);
                if (yy >= 0 && (k + 6 == len || !is_d((unsigned char)t[k + 6]))) y = yy, k += 6;
            }
            if (valid_date(y > 0 ? y : 2000, m, d)) {
                say_date(z, 0, y, m, d);
                return k;
            }
        }
    }
    if (m && dotted && me == j) { /* "Nov." alone */
        word(o, MONTHS[m - 1]);
        if (ends_sentence(t, len, me)) put(o, ".", 1);
        return me;
    }
    size_t n = j - i;
    /* Dr. Smith (Doctor) / Elm Dr. (Drive); St. Louis (Saint) / Main St. (Street); No. 5 */
    int next_cap = j + 1 < len && t[j] == ' ' && t[j + 1] >= 'A' && t[j + 1] <= 'Z';
    if ((n == 3 && !memcmp(t + i, "Dr.", 3)) || (n == 3 && !memcmp(t + i, "St.", 3))) {
        int drive_street = !next_cap;
        word(o, t[i] == 'D' ? (drive_street ? "Drive" : "Doctor") : (drive_street ? "Street" : "Saint"));
        if (drive_street && ends_sentence(t, len, j)) put(o, ".", 1);
        return j;
    }
    if (n == 3 && !memcmp(t + i, "No.", 3) && j + 1 < len && t[j] == ' ' && is_d((unsigned char)t[j + 1])) {
        word(o, "number");
        return j;
    }
    for (size_t k = 0; k < sizeof ABBR / sizeof ABBR[0]; k++)
        if (strlen(ABBR[k].abbr) == n && !memcmp(ABBR[k].abbr, t + i, n)) {
            word(o, ABBR[k].say);
            if (ABBR[k].can_end && ends_sentence(t, len, j)) put(o, ".", 1);
            return j;
        }
    return 0;
}

ct_status ct_normalize(const char *text, size_t len, const char *language, char **out, char *err, size_t errcap) {
    if (out) *out = NULL;
    if (!text || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "normalize: NULL argument");
    nz z;
    memset(&z, 0, sizeof z);
    z.t = text;
    z.len = len;
    z.lang = LANG_AUTO;
    if (language && *language && strcasecmp(language, "auto") != 0) {
        const char *name = ct_language_from_code(language);
        if (!name) name = language;
        z.lang = !strcasecmp(name, "english") ? LANG_EN : !strcasecmp(name, "chinese") ? LANG_ZH : LANG_KEEP;
    }
    if (z.lang == LANG_AUTO) {
        long h = 0, l = 0;
        for (size_t i = 0; i < len;) {
            unsigned c;
            i += cp_at(text, len, i, &c);
            h += han(c);
            l += letter(c) && !han(c);
        }
        z.text_zh = h > l;
    }
    put(&z.o, "", 0);
    size_t tok_end = 0; /* the end of the last token checked for a URL */
    for (size_t i = 0; i < len && z.lang != LANG_KEEP;) {
        unsigned char b = (unsigned char)text[i];
        unsigned prev = cp_before(text, i);
        int word_start = !(prev < 0x80 ? (is_al((unsigned char)prev) || is_d((unsigned char)prev) || prev == '_' ||
                                          prev == '.' || prev == '/' || prev == '@' || prev == ':')
                                       : letter(prev) && !han(prev));
        /* URLs, e-mail addresses and paths are copied whole (each token looked at once) */
        if (word_start && !is_sp(b) && i >= tok_end) {
            size_t e = i;
            int url = 0;
            while (e < len && !is_sp((unsigned char)text[e]) && (unsigned char)text[e] < 0x80) {
                if (text[e] == '@' || (e + 2 < len && !memcmp(text + e, "://", 3))) url = 1;
                e++;
            }
            tok_end = e;
            if (url || (e - i > 4 && !strncasecmp(text + i, "www.", 4))) {
                put(&z.o, text + i, e - i);
                i = e;
                continue;
            }
        }
        size_t e = 0;
        size_t at = z.o.n;
        if (word_start && (is_d(b) || b == '-' || b == '$' || b >= 0xC2)) e = number(&z, i);
        else if (word_start && is_al(b) && (z.lang == LANG_EN || !zh_at(&z, i, i))) e = latin_word(&z, i);
        if (e > i) {
            /* keep words apart from what follows (a letter or digit right after the reading) */
            if (e < len && z.o.n > at && !is_sp((unsigned char)text[e])) {
                unsigned nx;
                cp_at(text, len, e, &nx);
                if (letter(nx) && !han(nx) && z.o.p[z.o.n - 1] != ' ') put(&z.o, " ", 1);
            }
            i = e;
            continue;
        }
        z.o.n = at;
        if (z.o.p) z.o.p[z.o.n] = 0;
        /* copy one character (a whole run of digits or letters, so no reading starts inside it) */
        size_t n = 1;
        if (is_d(b) || is_al(b)) {
            while (i + n < len && (is_d((unsigned char)text[i + n]) || is_al((unsigned char)text[i + n]))) n++;
        } else {
            unsigned c;
            n = cp_at(text, len, i, &c);
        }
        /* a reading glued to a preceding Han character keeps no stray space */
        put(&z.o, text + i, n);
        i += n;
    }
    if (z.lang == LANG_KEEP) put(&z.o, text, len);
    if (z.o.oom) {
        free(z.o.p);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "normalize: out of memory");
    }
    /* English readings inserted after a Han character or before one carry no spaces there */
    *out = z.o.p;
    return CT_OK;
}
