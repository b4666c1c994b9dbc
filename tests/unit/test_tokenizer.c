/* Tests the Qwen2 byte-level BPE tokenizer (src/text/bpe.c) against ids produced by the Hugging
 * Face `tokenizers` package (tests/data/tokenizer/corpus.jsonl, made by tools/tokenizer_ref.py),
 * plus invalid UTF-8, buffer limits, round trips, load error paths and two-thread encoding. */
#include "ct_test.h"
#include "text/bpe.h"

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <utf8proc.h>

#define TOK_DIR CT_SRC_DIR "/assets/qwen3-tokenizer"
#define CORPUS CT_SRC_DIR "/tests/data/tokenizer/corpus.jsonl"

typedef struct {
    char *text; /* [len] UTF-8, may hold NUL */
    size_t len;
    int32_t *ids; /* [n] reference ids */
    size_t n;
} entry;

static entry *g_corpus;
static size_t g_ncorpus;
static ct_bpe *g_tok;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int load_corpus(void) {
    FILE *f = fopen(CORPUS, "rb");
    if (!f) return -1;
    size_t cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    while ((got = getline(&line, &lcap, f)) > 0) {
        json_error_t je;
        json_t *o = json_loadb(line, (size_t)got, JSON_ALLOW_NUL, &je);
        json_t *text = json_object_get(o, "text"), *ids = json_object_get(o, "ids");
        if (!json_is_string(text) || !json_is_array(ids)) {
            fprintf(stderr, "bad corpus line %zu: %s\n", g_ncorpus + 1, je.text);
            json_decref(o);
            continue;
        }
        if (g_ncorpus == cap) {
            cap = cap ? cap * 2 : 256;
            g_corpus = realloc(g_corpus, cap * sizeof *g_corpus);
        }
        entry *e = &g_corpus[g_ncorpus++];
        e->len = json_string_length(text);
        e->text = malloc(e->len + 1);
        memcpy(e->text, json_string_value(text), e->len + 1);
        e->n = json_array_size(ids);
        e->ids = malloc((e->n ? e->n : 1) * sizeof *e->ids);
        for (size_t i = 0; i < e->n; i++) e->ids[i] = (int32_t)json_integer_value(json_array_get(ids, i));
        json_decref(o);
    }
    free(line);
    fclose(f);
    return 0;
}

static void free_corpus(void) {
    for (size_t i = 0; i < g_ncorpus; i++) {
        free(g_corpus[i].text);
        free(g_corpus[i].ids);
    }
    free(g_corpus);
}

/* Encodes e and returns 1 if the ids equal the reference exactly. */
static int entry_matches(const entry *e, int32_t *buf, size_t cap, int verbose) {
    size_t n = 0;
    char err[256] = "";
    ct_status st = ct_bpe_encode(g_tok, e->text, e->len, buf, cap, &n, err, sizeof err);
    int ok = st == CT_OK && n == e->n && memcmp(buf, e->ids, n * sizeof *buf) == 0;
    if (!ok && verbose) {
        fprintf(stderr,
                "mismatch for %.80s (len %zu): status %d (%s), got %zu ids, want %zu\n  got:", e->text,
                e->len, st, err, n, e->n);
        for (size_t i = 0; i < n && i < cap && i < 24; i++) fprintf(stderr, " %d", buf[i]);
        fprintf(stderr, "\n want:");
        for (size_t i = 0; i < e->n && i < 24; i++) fprintf(stderr, " %d", e->ids[i]);
        fputc('\n', stderr);
    }
    return ok;
}

static void test_corpus(void) {
    size_t cap = 8192, match = 0, shown = 0;
    int32_t *buf = malloc(cap * sizeof *buf);
    double t0 = now_s();
    size_t total_ids = 0, total_bytes = 0;
    for (size_t i = 0; i < g_ncorpus; i++) {
        int ok = entry_matches(&g_corpus[i], buf, cap, shown < 10);
        if (ok)
            match++;
        else
            shown++;
        total_ids += g_corpus[i].n;
        total_bytes += g_corpus[i].len;
    }
    double dt = now_s() - t0;
    printf("corpus: %zu/%zu entries match the HF reference exactly (%zu ids, %zu bytes, %.1f ms)\n", match,
           g_ncorpus, total_ids, total_bytes, dt * 1e3);
    CHECK(g_ncorpus >= 300);
    CHECKF(match == g_ncorpus, "%zu of %zu corpus entries differ", g_ncorpus - match, g_ncorpus);
    free(buf);
}

static void test_lookup(void) {
    CHECK(ct_bpe_vocab_size(g_tok) == 151676);
    CHECK(ct_bpe_token_id(g_tok, "<|endoftext|>") == 151643);
    CHECK(ct_bpe_token_id(g_tok, "<|im_start|>") == 151644);
    CHECK(ct_bpe_token_id(g_tok, "<|im_end|>") == 151645);
    CHECK(ct_bpe_token_id(g_tok, "<tts_pad>") == 151671);
    CHECK(ct_bpe_token_id(g_tok, "<tts_text_bos>") == 151672);
    CHECK(ct_bpe_token_id(g_tok, "<tts_text_eod>") == 151673);
    CHECK(ct_bpe_token_id(g_tok, "<tts_text_bos_single>") == 151674);
    CHECK(ct_bpe_token_id(g_tok, "<|audio_pad|>") == 151675);
    CHECK(ct_bpe_token_id(g_tok, "assistant") == 77091);
    CHECK(ct_bpe_token_id(g_tok, "\n") == 198);
    CHECK(ct_bpe_token_id(g_tok, " the") == 279);
    CHECK(ct_bpe_token_id(g_tok, "\xc4\xa0the") == 279); /* "Ġthe", the vocab.json spelling */
    /* "Ċ" is both the spelling of "\n" and a character with its own token: raw bytes win */
    int32_t cdot[4];
    size_t nc = 0;
    CHECK(ct_bpe_encode(g_tok, "\xc4\x8a", 2, cdot, 4, &nc, NULL, 0) == CT_OK && nc == 1);
    CHECK(nc == 1 && ct_bpe_token_id(g_tok, "\xc4\x8a") == cdot[0] && cdot[0] != 198);
    CHECK(ct_bpe_token_id(g_tok, "no_such_token_zzzzqqq") == -1);
    CHECK(ct_bpe_token_id(g_tok, "") == -1);
    CHECK(ct_bpe_token_id(g_tok, NULL) == -1);
    CHECK(ct_bpe_vocab_size(NULL) == 0);
}

static void test_prompt_layout(void) {
    /* MODEL.md 2.5: ids[0:3] = role, last 5 = im_end \n im_start assistant \n */
    const char *p = "<|im_start|>assistant\nHello there, how are you?<|im_end|>\n<|im_start|>assistant\n";
    int32_t ids[64];
    size_t n = 0;
    CHECK(ct_bpe_encode(g_tok, p, strlen(p), ids, 64, &n, NULL, 0) == CT_OK);
    CHECK(n > 8);
    if (n > 8) {
        CHECK(ids[0] == 151644 && ids[1] == 77091 && ids[2] == 198);
        CHECK(ids[n - 5] == 151645 && ids[n - 4] == 198 && ids[n - 3] == 151644 && ids[n - 2] == 77091 &&
              ids[n - 1] == 198);
    }
}

static void check_invalid(const char *s, size_t len, size_t offset) {
    char err[256] = "";
    size_t n = 99;
    int32_t ids[16];
    ct_status st = ct_bpe_encode(g_tok, s, len, ids, 16, &n, err, sizeof err);
    char want[64];
    snprintf(want, sizeof want, "offset %zu", offset);
    CHECKF(st == CT_ERR_INVALID_ARG, "status %d for invalid input at %zu", st, offset);
    CHECKF(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"", err, want);
    CHECK(n == 0);
}

static void test_invalid_utf8(void) {
    check_invalid("\xff", 1, 0);
    check_invalid("abc\x80", 4, 3);
    check_invalid("ab\xc0\xaf", 4, 2);           /* overlong '/' */
    check_invalid("\xe0\x80\xaf", 3, 0);         /* overlong 3-byte */
    check_invalid("ok \xed\xa0\x80", 6, 3);      /* UTF-16 surrogate */
    check_invalid("\xf4\x90\x80\x80", 4, 0);     /* above U+10FFFF */
    check_invalid("hi\xe4\xbd", 4, 2);           /* truncated at the end */
    check_invalid("\xe4\xbd\xa0\xe4x", 5, 3);    /* bad continuation */
    check_invalid("<|im_start|>\xfe", 13, 12);   /* after an added token */
    check_invalid("\xf8\x88\x80\x80\x80", 5, 0); /* 5-byte form */
}

static void test_empty_and_limits(void) {
    size_t n = 7;
    int32_t ids[4];
    CHECK(ct_bpe_encode(g_tok, "", 0, ids, 4, &n, NULL, 0) == CT_OK && n == 0);
    n = 7;
    CHECK(ct_bpe_encode(g_tok, NULL, 0, NULL, 0, &n, NULL, 0) == CT_OK && n == 0);
    CHECK(ct_bpe_encode(NULL, "a", 1, ids, 4, &n, NULL, 0) == CT_ERR_INVALID_ARG);
    CHECK(ct_bpe_encode(g_tok, "a", 1, ids, 4, NULL, NULL, 0) == CT_ERR_INVALID_ARG);
    CHECK(ct_bpe_encode(g_tok, NULL, 3, ids, 4, &n, NULL, 0) == CT_ERR_INVALID_ARG);

    const char *s = "one two three four five six";
    int32_t full[32];
    size_t nf = 0;
    CHECK(ct_bpe_encode(g_tok, s, strlen(s), full, 32, &nf, NULL, 0) == CT_OK && nf == 6);
    char err[128] = "";
    int32_t small[3] = {0, 0, 0};
    n = 0;
    CHECK(ct_bpe_encode(g_tok, s, strlen(s), small, 3, &n, err, sizeof err) == CT_ERR_LIMIT);
    CHECK(n == nf);
    CHECK(memcmp(small, full, sizeof small) == 0);
    CHECK(err[0] != '\0');
    n = 0;
    CHECK(ct_bpe_encode(g_tok, s, strlen(s), NULL, 0, &n, NULL, 0) == CT_ERR_LIMIT && n == nf);
}

/* Whole-string NFC with utf8proc (independent of the library's per-segment call). */
static char *nfc(const char *s, size_t len, size_t *out_len) {
    utf8proc_uint8_t *o = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &o,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (r < 0) return NULL;
    *out_len = (size_t)r;
    return (char *)o;
}

static int contains(const char *s, size_t len, const char *needle) {
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        if (memcmp(s + i, needle, nl) == 0) return 1;
    return 0;
}

static void test_round_trip(void) {
    size_t ok = 0, tried = 0;
    int32_t *ids = malloc(8192 * sizeof *ids);
    char *out = malloc(1 << 16);
    for (size_t i = 0; i < g_ncorpus; i++) {
        const entry *e = &g_corpus[i];
        /* NFC runs per stretch between added tokens; U+0338 right after '>' would compose with
         * it under whole-string NFC (">\u0338" -> U+226F), so those entries are skipped here. */
        if (contains(e->text, e->len, "\xcc\xb8")) continue;
        tried++;
        size_t n = 0, L = 0, nl = 0;
        if (ct_bpe_encode(g_tok, e->text, e->len, ids, 8192, &n, NULL, 0) != CT_OK) continue;
        if (ct_bpe_decode(g_tok, ids, n, out, 1 << 16, &L) != CT_OK) continue;
        char *want = nfc(e->text, e->len, &nl);
        if (want && nl == L && memcmp(want, out, L) == 0)
            ok++;
        else if (tried - ok <= 3)
            fprintf(stderr, "round trip differs for %.60s\n", e->text);
        free(want);
    }
    printf("round trip: %zu/%zu entries decode(encode(x)) == NFC(x)\n", ok, tried);
    CHECK(tried > 300 && ok == tried);

    /* explicit NFC composition: e + U+0301 -> U+00E9 */
    size_t n = 0, L = 0;
    CHECK(ct_bpe_encode(g_tok, "cafe\xcc\x81", 6, ids, 16, &n, NULL, 0) == CT_OK);
    CHECK(ct_bpe_decode(g_tok, ids, n, out, 64, &L) == CT_OK && L == 5 && memcmp(out, "caf\xc3\xa9", 5) == 0);

    /* a long run of mixed-class combining marks: canonical ordering must stay fast and agree
     * with utf8proc's own (quadratic) reordering */
    {
        size_t reps = 3000, len = 1 + reps * 4;
        char *z = malloc(len + 1);
        z[0] = 'a';
        for (size_t i = 0; i < reps; i++)
            memcpy(z + 1 + 4 * i, i % 2 ? "\xcc\x81\xcc\xa3" : "\xcc\xa7\xcc\x88", 4);
        z[len] = 0;
        int32_t *zid = malloc(len * sizeof *zid);
        char *zout = malloc(len + 1);
        size_t zn = 0, zl = 0, wl = 0;
        double t0 = now_s();
        CHECK(ct_bpe_encode(g_tok, z, len, zid, len, &zn, NULL, 0) == CT_OK);
        double dt = now_s() - t0;
        CHECK(ct_bpe_decode(g_tok, zid, zn, zout, len + 1, &zl) == CT_OK);
        char *w = nfc(z, len, &wl);
        CHECK(w && wl == zl && memcmp(w, zout, zl) == 0);
        printf("combining run: %zu marks encoded in %.2f ms\n", 2 * reps, dt * 1e3);
        free(w);
        free(z);
        free(zid);
        free(zout);
    }

    /* decode error paths */
    int32_t bad[2] = {5, 151676};
    CHECK(ct_bpe_decode(g_tok, bad, 2, out, 64, &L) == CT_ERR_INVALID_ARG);
    bad[1] = -3;
    CHECK(ct_bpe_decode(g_tok, bad, 2, out, 64, &L) == CT_ERR_INVALID_ARG);
    int32_t two[2] = {151644, 77091}; /* "<|im_start|>" + "assistant" = 21 bytes */
    char tiny[8];
    CHECK(ct_bpe_decode(g_tok, two, 2, tiny, sizeof tiny, &L) == CT_ERR_LIMIT && L == 21);
    CHECK(ct_bpe_decode(g_tok, two, 2, out, 64, &L) == CT_OK && L == 21 &&
          strcmp(out, "<|im_start|>assistant") == 0);
    free(ids);
    free(out);
}

/* ---- load error paths on small synthetic tokenizer directories ---- */

static void write_file(const char *dir, const char *name, const char *data) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(data, f);
    fclose(f);
}

static void remove_dir(const char *dir) {
    const char *names[] = {"vocab.json", "merges.txt", "tokenizer_config.json"};
    char path[1024];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* A valid vocab.json with the 256 byte tokens (GPT-2 byte-level spellings) plus extra. */
static char *byte_vocab(const char *extra) {
    size_t cap = 8192 + strlen(extra);
    char *v = malloc(cap), *p = v;
    p += sprintf(p, "{");
    int next = 256;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        int cp = keep ? b : next++;
        utf8proc_uint8_t u[8];
        utf8proc_ssize_t k = utf8proc_encode_char(cp, u);
        u[k] = 0;
        if (cp == '"' || cp == '\\')
            p += sprintf(p, "\"\\%c\": %d,", cp, b);
        else
            p += sprintf(p, "\"%s\": %d,", (char *)u, b);
    }
    sprintf(p, "%s}", extra);
    return v;
}

static const char k_config[] =
    "{\"added_tokens_decoder\": {\"300\": {\"content\": \"<|x|>\", \"lstrip\": false, "
    "\"rstrip\": false, \"normalized\": false, \"single_word\": false, \"special\": true}}}";

static ct_status try_load(const char *dir, char *err, size_t cap) {
    ct_bpe *t = (ct_bpe *)1;
    err[0] = '\0';
    ct_status st = ct_bpe_load(dir, &t, err, cap);
    if (st == CT_OK)
        ct_bpe_free(t);
    else
        CHECK(t == NULL);
    return st;
}

static void test_load_errors(void) {
    char err[512];
    ct_bpe *t = NULL;
    CHECK(ct_bpe_load(NULL, &t, err, sizeof err) == CT_ERR_INVALID_ARG);
    ct_status st = try_load("/nonexistent/codectalk/tokenizer", err, sizeof err);
    CHECKF(st == CT_ERR_IO && strstr(err, "vocab.json"), "missing dir: %d %s", st, err);

    char dir[] = "/tmp/ct_tok_test_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    char *vocab = byte_vocab("\"ab\": 256, \"abc\": 257");
    /* a minimal valid tokenizer: merges a+b, ab+c; one added token */
    write_file(dir, "vocab.json", vocab);
    write_file(dir, "merges.txt", "#version: 0.2\na b\nab c\n");
    write_file(dir, "tokenizer_config.json", k_config);
    st = ct_bpe_load(dir, &t, err, sizeof err);
    CHECKF(st == CT_OK, "mini tokenizer: %s", err);
    if (st == CT_OK) {
        int32_t ids[16];
        size_t n = 0;
        CHECK(ct_bpe_encode(t, "abc<|x|>ab", 10, ids, 16, &n, NULL, 0) == CT_OK);
        CHECK(n == 3 && ids[0] == 257 && ids[1] == 300 && ids[2] == 256);
        CHECK(ct_bpe_vocab_size(t) == 301);
        ct_bpe_free(t);
    }

    write_file(dir, "vocab.json", "{\"a\": 0, \"b\": ");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT && strstr(err, "vocab.json"), "truncated vocab: %d %s", st, err);

    write_file(dir, "vocab.json", "[1, 2, 3]");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT && strstr(err, "vocab.json"), "array vocab: %d %s", st, err);

    write_file(dir, "vocab.json", "{\"a\": \"x\"}");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT, "string id: %d %s", st, err);

    write_file(dir, "vocab.json", "{\"a\": 0, \"b\": 1}");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT && strstr(err, "single-byte"), "no byte tokens: %d %s", st, err);

    write_file(dir, "vocab.json", vocab);
    write_file(dir, "merges.txt", "#version: 0.2\na b\nq zz\n");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT && strstr(err, "merges.txt:3"), "unknown merge: %d %s", st, err);

    write_file(dir, "merges.txt", "#version: 0.2\nb c\n");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT && strstr(err, "merge result"), "merge result missing: %d %s", st, err);

    write_file(dir, "merges.txt", "#version: 0.2\nabc\n");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT, "one-token merge line: %d %s", st, err);

    write_file(dir, "merges.txt", "a b\n");
    write_file(dir, "tokenizer_config.json", "{\"eos_token\": \"x\"}");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT && strstr(err, "added_tokens_decoder"), "no added tokens: %d %s", st, err);

    write_file(dir, "tokenizer_config.json",
               "{\"added_tokens_decoder\": {\"300\": {\"content\": \"<x>\", \"lstrip\": true}}}");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_UNSUPPORTED, "lstrip: %d %s", st, err);

    write_file(dir, "tokenizer_config.json", "{\"added_tokens_decoder\": ");
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT && strstr(err, "tokenizer_config.json"), "bad config: %d %s", st, err);

    char path[1024];
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    unlink(path);
    write_file(dir, "tokenizer_config.json", k_config);
    st = try_load(dir, err, sizeof err);
    CHECKF(st == CT_ERR_IO && strstr(err, "merges.txt"), "missing merges: %d %s", st, err);

    free(vocab);
    remove_dir(dir);
}

/* ---- two threads encoding the corpus on one shared tokenizer ---- */

typedef struct {
    size_t start;
    size_t matched;
    size_t done;
} thread_job;

static void *thread_main(void *arg) {
    thread_job *j = arg;
    int32_t *buf = malloc(8192 * sizeof *buf);
    for (size_t r = 0; r < 3; r++) {
        for (size_t k = 0; k < g_ncorpus; k++) {
            size_t i = (j->start + k) % g_ncorpus;
            j->matched += (size_t)entry_matches(&g_corpus[i], buf, 8192, 0);
            j->done++;
        }
    }
    free(buf);
    return NULL;
}

static void test_threads(void) {
    pthread_t th[2];
    thread_job jobs[2] = {{0, 0, 0}, {g_ncorpus / 2, 0, 0}};
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, thread_main, &jobs[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    printf("threads: %zu/%zu and %zu/%zu encodes match\n", jobs[0].matched, jobs[0].done, jobs[1].matched,
           jobs[1].done);
    CHECK(jobs[0].done == 3 * g_ncorpus && jobs[0].matched == jobs[0].done);
    CHECK(jobs[1].done == 3 * g_ncorpus && jobs[1].matched == jobs[1].done);
}

static void test_long_input(void) {
    /* 1 MiB of mixed text: must encode without error and round-trip. */
    const char *unit = "The year 2024: \xe4\xbd\xa0\xe5\xa5\xbd, caf\xc3\xa9! \xf0\x9f\x98\x80\n  ";
    size_t ul = strlen(unit), reps = (1u << 20) / ul, len = ul * reps;
    char *s = malloc(len + 1);
    for (size_t i = 0; i < reps; i++) memcpy(s + i * ul, unit, ul);
    s[len] = 0;
    size_t n = 0;
    CHECK(ct_bpe_encode(g_tok, s, len, NULL, 0, &n, NULL, 0) == CT_ERR_LIMIT && n > 0);
    int32_t *ids = malloc(n * sizeof *ids);
    double t0 = now_s();
    size_t n2 = 0;
    CHECK(ct_bpe_encode(g_tok, s, len, ids, n, &n2, NULL, 0) == CT_OK && n2 == n);
    double dt = now_s() - t0;
    char *out = malloc(len + 1);
    size_t L = 0;
    CHECK(ct_bpe_decode(g_tok, ids, n2, out, len + 1, &L) == CT_OK && L == len && memcmp(out, s, len) == 0);
    printf("long input: %zu bytes -> %zu ids in %.1f ms (%.1f MB/s)\n", len, n, dt * 1e3, len / dt / 1e6);
    free(s);
    free(ids);
    free(out);
}

int main(void) {
    char err[512] = "";
    double t0 = now_s();
    ct_status st = ct_bpe_load(TOK_DIR, &g_tok, err, sizeof err);
    double load_s = now_s() - t0;
    CHECKF(st == CT_OK, "load %s: %s", TOK_DIR, err);
    if (st != CT_OK) return ct_test_finish();
    printf("load: %.3f s\n", load_s);
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CT_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(CT_TEST_SANITIZED)
    CHECK(load_s < 15.0); /* sanitizers slow loading 2-15x */
#else
    CHECK(load_s < 1.5);
#endif
    CHECK(load_corpus() == 0);
    test_corpus();
    test_lookup();
    test_prompt_layout();
    test_invalid_utf8();
    test_empty_and_limits();
    test_round_trip();
    test_load_errors();
    test_threads();
    test_long_input();
    ct_bpe_free(g_tok);
    free_corpus();
    return ct_test_finish();
}
