/* Qwen2 byte-level BPE tokenizer: loading (vocab.json, merges.txt, tokenizer_config.json),
 * encoding (added tokens -> NFC -> Qwen2 split regex -> byte-level BPE) and decoding.
 * Behaviour mirrors the Hugging Face `tokenizers` pipeline that Qwen2TokenizerFast builds
 * from these files; see docs/TOKENIZER.md. */
#include "text/bpe.h"

#include "core/fileio.h" /* ct_check_regular */

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <utf8proc.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * Constants
 * ---------------------------------------------------------------------------------------- */

/* The Qwen2 pre-tokenizer split pattern, as in tokenizer.json pre_tokenizer[0].pattern.Regex:
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*
 *   |\s*[\r\n]+|\s+(?!\S)|\s+
 * compiled with PCRE2_UTF|PCRE2_UCP. Two spellings differ so PCRE2 behaves like Oniguruma, the
 * regex library HF tokenizers uses (both differences are checked by the reference corpus):
 *  - the contractions use ASCII case classes: a caseless PCRE2 's' also matches U+017F (long s),
 *    Oniguruma's does not (HF splits "it'\u017f" as "it", "'", "\u017f");
 *  - \s is written WS = [\t-\r\x{85}\p{Z}] (\S as [^...]), which is exactly the Unicode
 *    White_Space property that Oniguruma's \s means; PCRE2's UCP \s also matches U+180E. */
#define WS "\\t-\\r\\x{85}\\p{Z}"
static const char k_split_pattern[] = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]"
                                      "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
                                      "|\\p{N}"
                                      "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*"
                                      "|[" WS "]*[\\r\\n]+"
                                      "|[" WS "]+(?![^" WS "])"
                                      "|[" WS "]+";
#undef WS

#define MAX_ID 16777216 /* ids above this are rejected as malformed */

/* ------------------------------------------------------------------------------------------
 * Types
 * ---------------------------------------------------------------------------------------- */

typedef struct {
    uint32_t off; /* byte offset of the content in ct_bpe.added_arena */
    uint32_t len; /* content length in bytes, > 0 */
    int32_t id;
} added_tok;

struct ct_bpe {
    int32_t vocab_size; /* max id + 1 over regular and added tokens */
    int32_t n_regular;  /* number of vocab.json entries */

    uint8_t *arena; /* [arena_len] raw bytes of every token, back to back */
    size_t arena_len;
    uint32_t *tok_off;  /* [vocab_size] offset into arena */
    uint32_t *tok_len;  /* [vocab_size] byte length; 0 = id names no token */
    uint8_t *tok_added; /* [vocab_size] 1 if the id is an added token */

    int32_t *vmap; /* [vmap_mask+1] open-addressing table raw bytes -> regular id, -1 empty */
    uint32_t vmap_mask;

    uint64_t *mkey; /* [mmask+1] merge pair key (left << 32 | right) + 1; 0 = empty */
    int32_t *mrank; /* [mmask+1] merge rank (line order in merges.txt) */
    int32_t *mnew;  /* [mmask+1] id of the merged token */
    uint32_t mmask;

    int32_t byte_id[256]; /* id of the single-byte token for each byte value */

    added_tok *added; /* [n_added] sorted by length, longest first */
    size_t n_added;
    uint8_t added_first[256]; /* 1 if some added token starts with this byte */

    pcre2_code *re; /* compiled split pattern (JIT-compiled when available) */
};

/* ------------------------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------------------------- */

static uint32_t hash_bytes(const uint8_t *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 16777619u;
    }
    return h ^ (h >> 15);
}

static uint32_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

static uint32_t table_size_for(size_t n) {
    uint32_t sz = 1024;
    while (sz < n * 2 + 16) sz <<= 1;
    return sz;
}

/* GPT-2 bytes_to_unicode and its inverse. Printable Latin-1 bytes stand for themselves in
 * vocab.json spellings, the other 68 bytes for U+0100, U+0101, ... in byte order. */
#define BM_NCP (256 + 68)
typedef struct {
    uint32_t to_cp[256];     /* byte -> code point */
    int16_t to_byte[BM_NCP]; /* code point -> byte, -1 if the code point stands for no byte */
} byte_map;

static void build_byte_map(byte_map *m) {
    uint32_t next = 256;
    for (int c = 0; c < BM_NCP; c++) m->to_byte[c] = -1;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        m->to_cp[b] = keep ? (uint32_t)b : next++;
        m->to_byte[m->to_cp[b]] = (int16_t)b;
    }
}

/* Validates strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF). Returns the
 * offset of the first bad byte, or len if the whole buffer is valid. */
static size_t utf8_first_invalid(const uint8_t *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
            cp = c & 0x1F;
            min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            cp = c & 0x0F;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            cp = c & 0x07;
            min = 0x10000;
        } else {
            return i;
        }
        if (len - i <= need) {
            /* truncated sequence: report the first byte that is missing or wrong */
            for (size_t k = 1; i + k < len; k++)
                if ((s[i + k] & 0xC0) != 0x80) return i;
            return i;
        }
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += need + 1;
    }
    return len;
}

/* Decodes one UTF-8 code point from a NUL-terminated, already valid string (jansson checks
 * UTF-8). Returns the byte count consumed, 0 on a malformed sequence. */
static size_t utf8_next(const uint8_t *s, size_t n, uint32_t *cp) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate(s, (utf8proc_ssize_t)n, &c);
    if (k <= 0) return 0;
    *cp = (uint32_t)c;
    return (size_t)k;
}

/* Converts a byte-level spelling (e.g. "Ġthe") into raw bytes (" the") in out[cap].
 * Returns the raw length, or (size_t)-1 if a character is outside the byte alphabet. */
static size_t spelling_to_raw(const byte_map *bm, const char *s, size_t n, uint8_t *out, size_t cap) {
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = utf8_next((const uint8_t *)s + i, n - i, &cp);
        if (k == 0) return (size_t)-1;
        int b = cp < BM_NCP ? bm->to_byte[cp] : -1;
        if (b < 0 || o >= cap) return (size_t)-1;
        out[o++] = (uint8_t)b;
        i += k;
    }
    return o;
}

static ct_status read_file(const char *path, char **data, size_t *len, char *err, size_t errcap) {
    ct_status rs = ct_check_regular(path, err, errcap); /* a FIFO must not block the read */
    if (rs != CT_OK) return rs;
    FILE *f = fopen(path, "rb");
    if (!f) return ct_errf(err, errcap, CT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            size_t ncap = cap ? cap * 2 : 1 << 20;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory reading %s", path);
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return ct_errf(err, errcap, CT_ERR_IO, "read error on %s", path);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return CT_OK;
}

/* ------------------------------------------------------------------------------------------
 * Hash tables
 * ---------------------------------------------------------------------------------------- */

static int32_t vmap_find(const ct_bpe *t, const uint8_t *s, size_t n) {
    uint32_t i = hash_bytes(s, n) & t->vmap_mask;
    for (;;) {
        int32_t id = t->vmap[i];
        if (id < 0) return -1;
        if (t->tok_len[id] == n && memcmp(t->arena + t->tok_off[id], s, n) == 0) return id;
        i = (i + 1) & t->vmap_mask;
    }
}

/* Inserts regular id (whose bytes are already in the arena); returns 0, or 1 if the same bytes
 * are already mapped. */
static int vmap_insert(ct_bpe *t, int32_t id) {
    const uint8_t *s = t->arena + t->tok_off[id];
    size_t n = t->tok_len[id];
    uint32_t i = hash_bytes(s, n) & t->vmap_mask;
    for (;;) {
        int32_t cur = t->vmap[i];
        if (cur < 0) {
            t->vmap[i] = id;
            return 0;
        }
        if (t->tok_len[cur] == n && memcmp(t->arena + t->tok_off[cur], s, n) == 0) return 1;
        i = (i + 1) & t->vmap_mask;
    }
}

static int merge_find(const ct_bpe *t, int32_t left, int32_t right, int32_t *rank, int32_t *new_id) {
    uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
    uint32_t i = hash_u64(key) & t->mmask;
    for (;;) {
        uint64_t k = t->mkey[i];
        if (k == 0) return 0;
        if (k == key) {
            *rank = t->mrank[i];
            *new_id = t->mnew[i];
            return 1;
        }
        i = (i + 1) & t->mmask;
    }
}

/* A repeated pair keeps the last rank, as a hash-map built from the merge list does in HF. */
static void merge_insert(ct_bpe *t, int32_t left, int32_t right, int32_t rank, int32_t new_id) {
    uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
    uint32_t i = hash_u64(key) & t->mmask;
    while (t->mkey[i] != 0 && t->mkey[i] != key) i = (i + 1) & t->mmask;
    t->mkey[i] = key;
    t->mrank[i] = rank;
    t->mnew[i] = new_id;
}

/* ------------------------------------------------------------------------------------------
 * Loading
 * ---------------------------------------------------------------------------------------- */

static ct_status load_vocab(ct_bpe *t, const char *path, const byte_map *bm, char *err, size_t errcap) {
    json_t *root;
    ct_status rs = ct_json_load_object(path, &root, err, errcap);
    if (rs != CT_OK) return rs;
    size_t n = json_object_size(root);
    if (n == 0 || n > MAX_ID) {
        ct_status est = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: bad number of tokens (%zu)", path, n);
        json_decref(root);
        return est;
    }
    /* first pass: max id and total key length */
    const char *key;
    json_t *val;
    int64_t max_id = -1;
    size_t total = 0;
    json_object_foreach(root, key, val) {
        if (!json_is_integer(val)) {
            ct_status est = ct_errf(err, errcap, CT_ERR_FORMAT,
                                    "%s: value of token \"%.64s\" is not an integer", path, key);
            json_decref(root);
            return est;
        }
        json_int_t id = json_integer_value(val);
        if (id < 0 || id >= MAX_ID) {
            ct_status est = ct_errf(err, errcap, CT_ERR_FORMAT,
                                    "%s: token \"%.64s\" has id %lld out of range", path, key, (long long)id);
            json_decref(root);
            return est;
        }
        if (id > max_id) max_id = id;
        total += strlen(key);
    }
    t->n_regular = (int32_t)n;
    t->vocab_size = (int32_t)max_id + 1;
    t->arena = malloc(total + 1);
    t->tok_off = calloc((size_t)t->vocab_size, sizeof *t->tok_off);
    t->tok_len = calloc((size_t)t->vocab_size, sizeof *t->tok_len);
    t->tok_added = calloc((size_t)t->vocab_size, 1);
    if (!t->arena || !t->tok_off || !t->tok_len || !t->tok_added) {
        ct_status est = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory loading %s", path);
        json_decref(root);
        return est;
    }
    size_t pos = 0;
    json_object_foreach(root, key, val) {
        int32_t id = (int32_t)json_integer_value(val);
        size_t klen = strlen(key);
        size_t raw = spelling_to_raw(bm, key, klen, t->arena + pos, total + 1 - pos);
        if (raw == (size_t)-1 || raw == 0) {
            ct_status est =
                ct_errf(err, errcap, CT_ERR_FORMAT,
                        "%s: token \"%.64s\" (id %d) is not a byte-level spelling", path, key, id);
            json_decref(root);
            return est;
        }
        if (t->tok_len[id] != 0) {
            ct_status est = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: id %d is used by two tokens", path, id);
            json_decref(root);
            return est;
        }
        t->tok_off[id] = (uint32_t)pos;
        t->tok_len[id] = (uint32_t)raw;
        pos += raw;
    }
    t->arena_len = pos;
    json_decref(root);
    return CT_OK;
}

static ct_status build_vocab_map(ct_bpe *t, const char *path, char *err, size_t errcap) {
    uint32_t sz = table_size_for((size_t)t->n_regular);
    t->vmap = malloc(sz * sizeof *t->vmap);
    if (!t->vmap) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory (vocab map)");
    memset(t->vmap, 0xff, sz * sizeof *t->vmap);
    t->vmap_mask = sz - 1;
    for (int32_t id = 0; id < t->vocab_size; id++) {
        if (t->tok_len[id] == 0) continue;
        if (vmap_insert(t, id))
            return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: two tokens decode to the same bytes (id %d)",
                           path, id);
    }
    for (int b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        t->byte_id[b] = vmap_find(t, &c, 1);
        if (t->byte_id[b] < 0)
            return ct_errf(err, errcap, CT_ERR_FORMAT, "%s: no single-byte token for byte 0x%02x", path, b);
    }
    return CT_OK;
}

/* Looks up a byte-level spelling s[0..n) in the vocabulary; -1 if unknown. */
static int32_t spelling_id(const ct_bpe *t, const byte_map *bm, const char *s, size_t n, uint8_t *scratch,
                           size_t scap) {
    size_t raw = spelling_to_raw(bm, s, n, scratch, scap);
    if (raw == (size_t)-1 || raw == 0) return -1;
    return vmap_find(t, scratch, raw);
}

static ct_status load_merges(ct_bpe *t, const char *path, const byte_map *bm, char *err, size_t errcap) {
    char *data = NULL;
    size_t len = 0;
    ct_status st = read_file(path, &data, &len, err, errcap);
    if (st != CT_OK) return st;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += data[i] == '\n';
    uint32_t sz = table_size_for(lines);
    t->mkey = calloc(sz, sizeof *t->mkey);
    t->mrank = malloc(sz * sizeof *t->mrank);
    t->mnew = malloc(sz * sizeof *t->mnew);
    size_t scap = 4096;
    uint8_t *scratch = malloc(scap);
    if (!t->mkey || !t->mrank || !t->mnew || !scratch) {
        free(data);
        free(scratch);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory (merge table)");
    }
    t->mmask = sz - 1;
    int32_t rank = 0;
    size_t lineno = 0;
    char *p = data, *end = data + len;
    st = CT_OK;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        lineno++;
        char *line = p;
        p = nl ? nl + 1 : end;
        size_t ll = (size_t)(le - line);
        if (ll && line[ll - 1] == '\r') ll--;
        if (lineno == 1 && ll >= 8 && memcmp(line, "#version", 8) == 0) continue;
        if (ll == 0) continue;
        char *sp = memchr(line, ' ', ll);
        if (!sp || sp == line || sp == line + ll - 1 || memchr(sp + 1, ' ', ll - (size_t)(sp + 1 - line))) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s:%zu: expected two tokens separated by one space",
                         path, lineno);
            break;
        }
        size_t la = (size_t)(sp - line), lb = ll - la - 1;
        int32_t a = spelling_id(t, bm, line, la, scratch, scap);
        int32_t b = spelling_id(t, bm, sp + 1, lb, scratch, scap);
        if (a < 0 || b < 0) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s:%zu: token \"%.*s\" is not in vocab.json", path,
                         lineno, a < 0 ? (int)(la > 64 ? 64 : la) : (int)(lb > 64 ? 64 : lb),
                         a < 0 ? line : sp + 1);
            break;
        }
        size_t na = t->tok_len[a], nb = t->tok_len[b];
        if (na + nb > scap) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s:%zu: merged token too long", path, lineno);
            break;
        }
        memcpy(scratch, t->arena + t->tok_off[a], na);
        memcpy(scratch + na, t->arena + t->tok_off[b], nb);
        int32_t m = vmap_find(t, scratch, na + nb);
        if (m < 0) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s:%zu: merge result of \"%.*s\" is not in vocab.json",
                         path, lineno, (int)(ll > 64 ? 64 : ll), line);
            break;
        }
        merge_insert(t, a, b, rank++, m);
    }
    free(scratch);
    free(data);
    return st;
}

static int added_cmp(const void *pa, const void *pb) {
    const added_tok *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static ct_status load_added(ct_bpe *t, const char *path, char *err, size_t errcap) {
    json_t *root;
    ct_status rs = ct_json_load_object(path, &root, err, errcap);
    if (rs != CT_OK) return rs;
    ct_status st = CT_OK;
    json_t *dec = json_object_get(root, "added_tokens_decoder");
    if (!json_is_object(dec)) {
        ct_status est = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: no \"added_tokens_decoder\" object", path);
        json_decref(root);
        return est;
    }
    size_t n = json_object_size(dec);
    const char *key;
    json_t *val;
    int64_t max_id = t->vocab_size - 1;
    size_t total = 0;
    json_object_foreach(dec, key, val) {
        char *endp;
        errno = 0;
        long id = strtol(key, &endp, 10);
        json_t *content = json_object_get(val, "content");
        if (errno || *endp || endp == key || id < 0 || id >= MAX_ID) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: added token key \"%.32s\" is not an id", path, key);
            goto done;
        }
        if (!json_is_string(content) || json_string_length(content) == 0 ||
            json_string_length(content) > 4096) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: added token %ld has no usable \"content\"", path,
                         id);
            goto done;
        }
        static const char *const unsupported[] = {"lstrip", "rstrip", "single_word"};
        for (size_t k = 0; k < 3; k++) {
            if (json_is_true(json_object_get(val, unsupported[k]))) {
                st = ct_errf(err, errcap, CT_ERR_UNSUPPORTED, "%s: added token %ld sets \"%s\"", path, id,
                             unsupported[k]);
                goto done;
            }
        }
        if (id > max_id) max_id = id;
        total += json_string_length(content);
    }
    /* grow the per-id tables to cover the added ids, and the arena to hold their content */
    int32_t nvs = (int32_t)max_id + 1;
    uint32_t *noff = realloc(t->tok_off, (size_t)nvs * sizeof *noff);
    if (noff) t->tok_off = noff;
    uint32_t *nlen = realloc(t->tok_len, (size_t)nvs * sizeof *nlen);
    if (nlen) t->tok_len = nlen;
    uint8_t *nadd = realloc(t->tok_added, (size_t)nvs);
    if (nadd) t->tok_added = nadd;
    uint8_t *narena = realloc(t->arena, t->arena_len + total + 1);
    if (narena) t->arena = narena;
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!noff || !nlen || !nadd || !narena || !t->added) {
        st = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory (added tokens)");
        goto done;
    }
    for (int32_t i = t->vocab_size; i < nvs; i++) {
        t->tok_off[i] = 0;
        t->tok_len[i] = 0;
        t->tok_added[i] = 0;
    }
    t->vocab_size = nvs;
    json_object_foreach(dec, key, val) {
        int32_t id = (int32_t)strtol(key, NULL, 10);
        json_t *content = json_object_get(val, "content");
        size_t cl = json_string_length(content);
        const char *cs = json_string_value(content);
        if (t->tok_added[id]) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT, "%s: added token id %d appears twice", path, id);
            goto done;
        }
        if (t->tok_len[id] != 0 && (t->tok_len[id] != cl || memcmp(t->arena + t->tok_off[id], cs, cl) != 0)) {
            st = ct_errf(err, errcap, CT_ERR_FORMAT,
                         "%s: added token %d \"%.64s\" conflicts with the vocab.json token of that id", path,
                         id, cs);
            goto done;
        }
        memcpy(t->arena + t->arena_len, cs, cl);
        t->tok_off[id] = (uint32_t)t->arena_len;
        t->tok_len[id] = (uint32_t)cl;
        t->tok_added[id] = 1;
        t->added[t->n_added].off = (uint32_t)t->arena_len;
        t->added[t->n_added].len = (uint32_t)cl;
        t->added[t->n_added].id = id;
        t->n_added++;
        t->added_first[(uint8_t)cs[0]] = 1;
        t->arena_len += cl;
    }
    qsort(t->added, t->n_added, sizeof *t->added, added_cmp);
done:
    json_decref(root);
    return st;
}

static ct_status compile_regex(ct_bpe *t, char *err, size_t errcap) {
    int ec;
    PCRE2_SIZE eo;
    t->re = pcre2_compile((PCRE2_SPTR)k_split_pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &ec, &eo,
                          NULL);
    if (!t->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return ct_errf(err, errcap, CT_ERR_INTERNAL, "split regex failed to compile at %zu: %s", (size_t)eo,
                       (const char *)msg);
    }
    (void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE); /* optional: the interpreter is the fallback */
    return CT_OK;
}

ct_status ct_bpe_load(const char *dir, ct_bpe **out, char *err, size_t errcap) {
    if (out) *out = NULL;
    if (!dir || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_bpe_load: NULL argument");
    char path[4096];
    ct_bpe *t = calloc(1, sizeof *t);
    if (!t) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    byte_map bm;
    build_byte_map(&bm);
    ct_status st;

    if ((size_t)snprintf(path, sizeof path, "%s/vocab.json", dir) >= sizeof path) {
        st = ct_errf(err, errcap, CT_ERR_INVALID_ARG, "tokenizer directory path too long");
        goto fail;
    }
    st = load_vocab(t, path, &bm, err, errcap);
    if (st != CT_OK) goto fail;
    st = build_vocab_map(t, path, err, errcap);
    if (st != CT_OK) goto fail;

    if ((size_t)snprintf(path, sizeof path, "%s/merges.txt", dir) >= sizeof path) {
        st = ct_errf(err, errcap, CT_ERR_INVALID_ARG, "tokenizer directory path too long");
        goto fail;
    }
    st = load_merges(t, path, &bm, err, errcap);
    if (st != CT_OK) goto fail;

    if ((size_t)snprintf(path, sizeof path, "%s/tokenizer_config.json", dir) >= sizeof path) {
        st = ct_errf(err, errcap, CT_ERR_INVALID_ARG, "tokenizer directory path too long");
        goto fail;
    }
    st = load_added(t, path, err, errcap);
    if (st != CT_OK) goto fail;

    st = compile_regex(t, err, errcap);
    if (st != CT_OK) goto fail;
    *out = t;
    return CT_OK;
fail:
    ct_bpe_free(t);
    return st;
}

void ct_bpe_free(ct_bpe *t) {
    if (!t) return;
    free(t->arena);
    free(t->tok_off);
    free(t->tok_len);
    free(t->tok_added);
    free(t->vmap);
    free(t->mkey);
    free(t->mrank);
    free(t->mnew);
    free(t->added);
    if (t->re) pcre2_code_free(t->re);
    free(t);
}

/* ------------------------------------------------------------------------------------------
 * Encoding
 * ---------------------------------------------------------------------------------------- */

typedef struct {
    int32_t id;   /* current token id of this symbol */
    int32_t prev; /* index of the previous live symbol, -1 at the start */
    int32_t next; /* index of the next live symbol, -1 at the end */
    int32_t live; /* 0 once merged into its left neighbour */
} bpe_sym;

typedef struct {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
} bpe_cand;

/* Per-call state: output cursor and scratch buffers (never shared between calls). */
typedef struct {
    const ct_bpe *t;
    int32_t *ids;
    size_t cap;
    size_t n;
    bpe_sym *sym;
    bpe_cand *heap;
    size_t sym_cap; /* capacity of sym; heap holds 3 * sym_cap */
    pcre2_match_data *md;
    char *err;
    size_t errcap;
} enc_state;

static void emit(enc_state *s, int32_t id) {
    if (s->n < s->cap) s->ids[s->n] = id;
    s->n++;
}

static int cand_less(const bpe_cand *a, const bpe_cand *b) {
    if (a->rank != b->rank) return a->rank < b->rank;
    return a->pos < b->pos;
}

static void heap_push(bpe_cand *h, size_t *n, bpe_cand c) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&c, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
}

static bpe_cand heap_pop(bpe_cand *h, size_t *n) {
    bpe_cand top = h[0];
    size_t m = --(*n);
    if (m == 0) return top;
    bpe_cand x = h[m];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && cand_less(&h[c + 1], &h[c])) c++;
        if (!cand_less(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
    return top;
}

/* Byte-level BPE of one pre-token: start from one symbol per byte and repeatedly apply the
 * lowest-ranked merge present (leftmost first on ties), as HF's BPE model does. */
static ct_status bpe_piece(enc_state *s, const uint8_t *p, size_t n) {
    const ct_bpe *t = s->t;
    if (n == 0) return CT_OK;
    if (n == 1) {
        emit(s, t->byte_id[p[0]]);
        return CT_OK;
    }
    if (n > (size_t)INT32_MAX / 4)
        return ct_errf(s->err, s->errcap, CT_ERR_LIMIT, "pre-token of %zu bytes is too long", n);
    if (n > s->sym_cap) {
        size_t nc = s->sym_cap ? s->sym_cap : 64;
        while (nc < n) nc *= 2;
        bpe_sym *ns = realloc(s->sym, nc * sizeof *ns);
        if (!ns) return ct_errf(s->err, s->errcap, CT_ERR_NOMEM, "out of memory (bpe scratch)");
        s->sym = ns;
        bpe_cand *nh = realloc(s->heap, 3 * nc * sizeof *nh);
        if (!nh) return ct_errf(s->err, s->errcap, CT_ERR_NOMEM, "out of memory (bpe scratch)");
        s->heap = nh;
        s->sym_cap = nc;
    }
    bpe_sym *sym = s->sym;
    bpe_cand *heap = s->heap;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        sym[i].id = t->byte_id[p[i]];
        sym[i].prev = (int32_t)i - 1;
        sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        sym[i].live = 1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        bpe_cand c;
        if (merge_find(t, sym[i].id, sym[i + 1].id, &c.rank, &c.new_id)) {
            c.pos = (int32_t)i;
            heap_push(heap, &hn, c);
        }
    }
    while (hn > 0) {
        bpe_cand c = heap_pop(heap, &hn);
        bpe_sym *a = &sym[c.pos];
        if (!a->live || a->next < 0) continue;
        bpe_sym *b = &sym[a->next];
        int32_t rank, nid;
        if (!merge_find(t, a->id, b->id, &rank, &nid) || nid != c.new_id) continue; /* stale */
        a->id = nid;
        b->live = 0;
        a->next = b->next;
        if (a->next >= 0) sym[a->next].prev = c.pos;
        bpe_cand d;
        if (a->prev >= 0 && merge_find(t, sym[a->prev].id, a->id, &d.rank, &d.new_id)) {
            d.pos = a->prev;
            heap_push(heap, &hn, d);
        }
        if (a->next >= 0 && merge_find(t, a->id, sym[a->next].id, &d.rank, &d.new_id)) {
            d.pos = c.pos;
            heap_push(heap, &hn, d);
        }
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next) emit(s, sym[i].id);
    return CT_OK;
}

/* Stable sort of one run of non-starters by canonical combining class (Unicode canonical
 * ordering). Insertion sort for short runs, counting sort for long ones, so the cost stays
 * linear: utf8proc's own reordering is quadratic in the run length (a 256 KiB run of mixed
 * combining marks took 30 s), which untrusted text must not be able to trigger. */
static void reorder_run(utf8proc_int32_t *cp, uint8_t *cc, size_t n, utf8proc_int32_t *tmp) {
    if (n < 2) return;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            utf8proc_int32_t c = cp[i];
            uint8_t k = cc[i];
            size_t j = i;
            while (j > 0 && cc[j - 1] > k) {
                cp[j] = cp[j - 1];
                cc[j] = cc[j - 1];
                j--;
            }
            cp[j] = c;
            cc[j] = k;
        }
        return;
    }
    size_t start[257] = {0};
    for (size_t i = 0; i < n; i++) start[cc[i] + 1]++;
    for (size_t k = 1; k < 257; k++) start[k] += start[k - 1];
    for (size_t i = 0; i < n; i++) tmp[start[cc[i]]++] = cp[i];
    memcpy(cp, tmp, n * sizeof *cp);
    for (size_t i = 0; i < n; i++) cc[i] = (uint8_t)utf8proc_get_property(cp[i])->combining_class;
}

/* NFC of valid UTF-8 src[0..len) into a malloc'd buffer (*out, *out_len): utf8proc's canonical
 * decomposition per character and its composition pass, with linear-time canonical ordering in
 * between. Equivalent to utf8proc_map(.., UTF8PROC_STABLE | UTF8PROC_COMPOSE). */
static ct_status nfc_utf8(const uint8_t *src, size_t len, uint8_t **out, size_t *out_len, char *err,
                          size_t errcap) {
    const utf8proc_option_t opt = (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    size_t cap = len + 16, n = 0;
    utf8proc_int32_t *cp = malloc(cap * sizeof *cp);
    uint8_t *cc = NULL;
    utf8proc_int32_t *tmp = NULL;
    uint8_t *dst = NULL;
    ct_status st = CT_OK;
    if (!cp) goto nomem;
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(src + i, (utf8proc_ssize_t)(len - i), &c);
        if (k <= 0) {
            st = ct_errf(err, errcap, CT_ERR_INTERNAL, "NFC: bad UTF-8 at %zu", i);
            goto done;
        }
        i += (size_t)k;
        for (;;) {
            int boundclass = 0;
            utf8proc_ssize_t m =
                utf8proc_decompose_char(c, cp + n, (utf8proc_ssize_t)(cap - n), opt, &boundclass);
            if (m < 0) {
                st = ct_errf(err, errcap, CT_ERR_INTERNAL, "NFC: %s", utf8proc_errmsg(m));
                goto done;
            }
            if ((size_t)m <= cap - n) {
                n += (size_t)m;
                break;
            }
            size_t ncap = cap * 2 + (size_t)m;
            utf8proc_int32_t *ncp = realloc(cp, ncap * sizeof *ncp);
            if (!ncp) goto nomem;
            cp = ncp;
            cap = ncap;
        }
    }
    cc = malloc(n ? n : 1);
    tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!cc || !tmp) goto nomem;
    for (size_t i = 0; i < n; i++) cc[i] = (uint8_t)utf8proc_get_property(cp[i])->combining_class;
    for (size_t i = 0; i < n;) {
        if (cc[i] == 0) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && cc[j] != 0) j++;
        reorder_run(cp + i, cc + i, j - i, tmp);
        i = j;
    }
    utf8proc_ssize_t m = utf8proc_normalize_utf32(cp, (utf8proc_ssize_t)n, opt);
    if (m < 0) {
        st = ct_errf(err, errcap, CT_ERR_INTERNAL, "NFC: %s", utf8proc_errmsg(m));
        goto done;
    }
    dst = malloc((size_t)m * 4 + 1);
    if (!dst) goto nomem;
    size_t o = 0;
    for (utf8proc_ssize_t i = 0; i < m; i++) o += (size_t)utf8proc_encode_char(cp[i], dst + o);
    *out = dst;
    *out_len = o;
    dst = NULL;
    goto done;
nomem:
    st = ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory (NFC of %zu bytes)", len);
done:
    free(cp);
    free(cc);
    free(tmp);
    free(dst);
    return st;
}

/* NFC-normalises one stretch of text between added tokens, splits it with the Qwen2 regex and
 * BPE-encodes every piece (matched pieces and any unmatched gaps, like HF's "Isolated"). */
static ct_status encode_segment(enc_state *s, const uint8_t *text, size_t len) {
    if (len == 0) return CT_OK;
    int ascii = 1;
    for (size_t i = 0; i < len && ascii; i++) ascii = text[i] < 0x80;
    uint8_t *norm = NULL;
    const uint8_t *seg = text;
    size_t n = len;
    if (!ascii) { /* ASCII is already NFC */
        ct_status nst = nfc_utf8(text, len, &norm, &n, s->err, s->errcap);
        if (nst != CT_OK) return nst;
        seg = norm;
    }
    ct_status st = CT_OK;
    size_t off = 0;
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    while (off < n) {
        int rc = pcre2_match(s->t->re, seg, n, off, opts, s->md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !(opts & PCRE2_NO_JIT)) {
            opts |= PCRE2_NO_JIT;
            continue;
        }
        if (rc == PCRE2_ERROR_NOMATCH) {
            st = bpe_piece(s, seg + off, n - off);
            break;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            st = ct_errf(s->err, s->errcap, CT_ERR_LIMIT, "split regex failed at byte %zu: %s", off,
                         (const char *)msg);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
        if (ov[1] <= ov[0] || ov[0] < off) {
            st = ct_errf(s->err, s->errcap, CT_ERR_INTERNAL, "split regex made an empty match at %zu", off);
            break;
        }
        if (ov[0] > off) {
            st = bpe_piece(s, seg + off, ov[0] - off);
            if (st != CT_OK) break;
        }
        st = bpe_piece(s, seg + ov[0], ov[1] - ov[0]);
        if (st != CT_OK) break;
        off = ov[1];
    }
    free(norm);
    return st;
}

ct_status ct_bpe_encode(const ct_bpe *t, const char *text, size_t len, int32_t *ids, size_t cap,
                        size_t *n_out, char *err, size_t errcap) {
    if (n_out) *n_out = 0;
    if (!t || !n_out || (!text && len > 0) || (!ids && cap > 0))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_bpe_encode: NULL argument");
    const uint8_t *u = (const uint8_t *)text;
    size_t bad = utf8_first_invalid(u, len);
    if (bad < len)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "invalid UTF-8 at byte offset %zu (byte 0x%02x)", bad,
                       u[bad]);
    enc_state s = {0};
    s.t = t;
    s.ids = ids;
    s.cap = cap;
    s.err = err;
    s.errcap = errcap;
    s.md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!s.md) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory (regex match data)");
    ct_status st = CT_OK;
    size_t seg_start = 0, i = 0;
    while (i < len && st == CT_OK) {
        int32_t hit = -1;
        size_t hit_len = 0;
        if (t->added_first[u[i]]) {
            for (size_t k = 0; k < t->n_added; k++) { /* longest first */
                const added_tok *a = &t->added[k];
                if (a->len <= len - i && memcmp(u + i, t->arena + a->off, a->len) == 0) {
                    hit = a->id;
                    hit_len = a->len;
                    break;
                }
            }
        }
        if (hit < 0) {
            i++;
            continue;
        }
        st = encode_segment(&s, u + seg_start, i - seg_start);
        if (st != CT_OK) break;
        emit(&s, hit);
        i += hit_len;
        seg_start = i;
    }
    if (st == CT_OK) st = encode_segment(&s, u + seg_start, len - seg_start);
    pcre2_match_data_free(s.md);
    free(s.sym);
    free(s.heap);
    if (st != CT_OK) return st;
    *n_out = s.n;
    if (s.n > cap)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "text needs %zu token ids, buffer holds %zu", s.n, cap);
    return CT_OK;
}

/* Whether encode(text[a..c)) is a prefix of w[nw] (the ids of the longer text from a). */
static int prefix_of(const ct_bpe *t, const char *text, size_t a, size_t c, const int32_t *w, size_t nw, int *oom) {
    size_t n = 0;
    ct_bpe_encode(t, text + a, c - a, NULL, 0, &n, NULL, 0);
    if (n > nw) return 0;
    int32_t *x = malloc(sizeof(int32_t) * (n + 1));
    if (!x) {
        *oom = 1;
        return 0;
    }
    int same = ct_bpe_encode(t, text + a, c - a, x, n, &n, NULL, 0) == CT_OK && memcmp(x, w, sizeof(int32_t) * n) == 0;
    free(x);
    return same;
}

/* Whether raw u[seg..c) normalises to a prefix of nfc[nn] (the NFC of the whole segment) that
   ends where one of nfc's pre-tokenizer pieces starts. */
static int nfc_piece_start(const ct_bpe *t, const uint8_t *u, size_t seg, size_t c, const uint8_t *nfc, size_t nn,
                           pcre2_match_data *md, int *oom) {
    uint8_t *p = NULL;
    size_t np = 0;
    if (nfc_utf8(u + seg, c - seg, &p, &np, NULL, 0) != CT_OK) {
        *oom = 1;
        return 0;
    }
    int ok = np < nn && memcmp(p, nfc, np) == 0;
    free(p);
    if (!ok) return 0;
    size_t off = 0;
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    while (off < np) {
        int rc = pcre2_match(t->re, nfc, nn, off, opts, md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !(opts & PCRE2_NO_JIT)) {
            opts |= PCRE2_NO_JIT;
            continue;
        }
        if (rc < 0) return 0; /* [off, nn) is one piece and np lies inside it */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] <= ov[0] || ov[0] < off) return 0;
        if (ov[0] >= np) return ov[0] == np; /* np starts that match, or lies in the gap before it */
        off = ov[1];
    }
    return off == np;
}

ct_status ct_bpe_stable_prefix(const ct_bpe *t, const char *text, size_t len, size_t *out, char *err,
                               size_t errcap) {
    if (out) *out = 0;
    if (!t || !out || (!text && len > 0))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "ct_bpe_stable_prefix: NULL argument");
    const uint8_t *u = (const uint8_t *)text;
    size_t bad = utf8_first_invalid(u, len);
    if (bad < len)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "invalid UTF-8 at byte offset %zu (byte 0x%02x)", bad,
                       u[bad]);
    /* 1. a tail that an added token starts with may still become that token */
    size_t limit = len, maxadd = 0;
    for (size_t k = 0; k < t->n_added; k++)
        if (t->added[k].len > maxadd) maxadd = t->added[k].len;
    for (size_t i = len > maxadd ? len - maxadd : 0; i < len && limit == len; i++) {
        if (!t->added_first[u[i]]) continue;
        for (size_t k = 0; k < t->n_added; k++)
            if (t->added[k].len > len - i && memcmp(u + i, t->arena + t->added[k].off, len - i) == 0) {
                limit = i;
                break;
            }
    }
    /* 2. the segment after the last added token before limit (the scan of ct_bpe_encode) */
    size_t seg = 0;
    for (size_t i = 0; i < limit;) {
        size_t hit = 0;
        if (t->added_first[u[i]])
            for (size_t k = 0; k < t->n_added; k++) {
                const added_tok *a = &t->added[k];
                if (a->len <= limit - i && memcmp(u + i, t->arena + a->off, a->len) == 0) {
                    hit = a->len;
                    break;
                }
            }
        if (!hit) {
            i++;
            continue;
        }
        i += hit;
        seg = i;
    }
    /* 3. piece starts in [seg, limit) on the raw text; the last few are candidates */
    enum { KEEP = 8 };
    size_t starts[KEEP];
    int ns = 0;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!md) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory (regex match data)");
    size_t off = seg;
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    while (off < limit) {
        int rc = pcre2_match(t->re, u, limit, off, opts, md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !(opts & PCRE2_NO_JIT)) {
            opts |= PCRE2_NO_JIT;
            continue;
        }
        if (rc < 0) break; /* no match: the rest is one piece starting at off */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] <= ov[0] || ov[0] < off) break;
        if (ov[0] > off) starts[ns++ % KEEP] = off;
        starts[ns++ % KEEP] = ov[0];
        off = ov[1];
        if (off >= limit) break;
    }
    pcre2_match_data_free(md);
    /* 4. the last piece is held back. A candidate cut must leave ids that the text before it
       encodes to on its own (the end of a string changes how a whitespace run splits, and NFC
       may merge across it): the prefix's ids are checked against the whole segment's. */
    size_t b = seg, nw = 0;
    int oom = 0;
    ct_bpe_encode(t, text + seg, limit - seg, NULL, 0, &nw, NULL, 0);
    int32_t *w = ns ? malloc(sizeof(int32_t) * (nw + 1)) : NULL;
    if (ns && (!w || ct_bpe_encode(t, text + seg, limit - seg, w, nw, &nw, NULL, 0) != CT_OK)) {
        free(w);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory (stable prefix)");
    }
    /* a whitespace run at the end may still join a newline that follows ([WS]*[\r\n]+): no
       cut inside it */
    size_t ws = limit;
    while (ws > seg) {
        size_t q = ws - 1;
        while (q > seg && (u[q] & 0xC0) == 0x80) q--;
        utf8proc_int32_t cp = 0;
        if (utf8proc_iterate(u + q, (utf8proc_ssize_t)(ws - q), &cp) <= 0) break;
        utf8proc_category_t cat = utf8proc_category(cp);
        if (!((cp >= 9 && cp <= 13) || cp == 0x85 || cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
              cat == UTF8PROC_CATEGORY_ZP))
            break;
        ws = q;
    }
    int ascii = 1;
    for (size_t i = seg; i < limit && ascii; i++) ascii = u[i] < 0x80;
    uint8_t *nfc = NULL;
    size_t nn = 0;
    pcre2_match_data *md2 = NULL;
    if (!ascii && ns) {
        if (nfc_utf8(u + seg, limit - seg, &nfc, &nn, NULL, 0) != CT_OK ||
            !(md2 = pcre2_match_data_create_from_pattern(t->re, NULL)))
            oom = 1;
    }
    for (int k = ns - 1; k >= 0 && k >= ns - KEEP && !oom; k--) {
        size_t c = starts[k % KEEP];
        if (c <= seg) break;
        if (c > ws) continue;
        utf8proc_int32_t cp = 0;
        if (u[c] >= 0x80 && (utf8proc_iterate(u + c, (utf8proc_ssize_t)(len - c), &cp) <= 0 ||
                             utf8proc_get_property(cp)->combining_class != 0))
            continue;
        if (!ascii && !nfc_piece_start(t, u, seg, c, nfc, nn, md2, &oom)) { /* NFC may regroup the pieces */
            if (oom) break;
            continue;
        }
        if (prefix_of(t, text, seg, c, w, nw, &oom)) {
            b = c;
            break;
        }
        if (oom) break;
    }
    free(w);
    free(nfc);
    if (md2) pcre2_match_data_free(md2);
    if (oom) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory (stable prefix)");
    *out = b;
    return CT_OK;
}

/* ------------------------------------------------------------------------------------------
 * Lookup and decoding
 * ---------------------------------------------------------------------------------------- */

int32_t ct_bpe_token_id(const ct_bpe *t, const char *token) {
    if (!t || !token) return -1;
    size_t n = strlen(token);
    if (n == 0) return -1;
    for (size_t k = 0; k < t->n_added; k++) {
        const added_tok *a = &t->added[k];
        if (a->len == n && memcmp(t->arena + a->off, token, n) == 0) return a->id;
    }
    int32_t id = vmap_find(t, (const uint8_t *)token, n);
    if (id >= 0) return id;
    byte_map bm;
    build_byte_map(&bm);
    uint8_t buf[512];
    size_t raw = spelling_to_raw(&bm, token, n, buf, sizeof buf);
    if (raw == (size_t)-1 || raw == 0) return -1;
    return vmap_find(t, buf, raw);
}

int32_t ct_bpe_vocab_size(const ct_bpe *t) {
    return t ? t->vocab_size : 0;
}

ct_status ct_bpe_decode(const ct_bpe *t, const int32_t *ids, size_t n, char *out, size_t cap,
                        size_t *len_out) {
    if (len_out) *len_out = 0;
    if (!t || !len_out || (!ids && n > 0) || (!out && cap > 0)) return CT_ERR_INVALID_ARG;
    size_t L = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->vocab_size || t->tok_len[id] == 0) return CT_ERR_INVALID_ARG;
        size_t tl = t->tok_len[id];
        if (L < cap) {
            size_t room = cap - L;
            memcpy(out + L, t->arena + t->tok_off[id], tl < room ? tl : room);
        }
        L += tl;
    }
    *len_out = L;
    if (L < cap) out[L] = '\0';
    return L > cap ? CT_ERR_LIMIT : CT_OK;
}
