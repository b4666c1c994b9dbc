/* Weight cache (ct_model_params.cache_dir): the first load converts and writes the cache file,
   the second reads it without converting, and both give the same weight bytes and codes as a
   load without a cache; a truncated file or one from another engine version is rebuilt, a
   changed model.safetensors gets its own file, a cache that cannot be written leaves the load
   working with a warning, concurrent loads leave one valid file and no temporary files, and
   nothing is cached when nothing is converted. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codectalk.h"
#include "ct_test.h"
#include "model/model_internal.h"
#include "model/wcache.h"
#include "test_models.h"

#define NF 6

static const char *DIR_;
static char CACHE[1024];

static ct_model *load(const char *talker, const char *pred, const char *cache, ct_status want) {
    ct_model_params mp = ct_model_params_default();
    mp.talker_weights = talker;
    mp.predictor_weights = pred;
    mp.cache_dir = cache;
    ct_model *m = NULL;
    char err[1024] = "";
    ct_status st = ct_model_load(DIR_, &mp, &m, err, sizeof err);
    CHECKF(st == want, "load %s/%s cache %s: %s", talker, pred, cache ? cache : "none", err);
    return m;
}

/* NF greedy frames of a fixed request into codes[NF * 16]; 1 when all came. */
static int gen(const ct_model *m, int32_t *codes) {
    ct_session *s = NULL;
    char err[512];
    if (!m || ct_session_create(m, NULL, &s, err, sizeof err) != CT_OK) return 0;
    ct_gen_params g = ct_test_gen("Weights from the cache.", 3, NF);
    int n = 0, got = 1;
    if (ct_session_start(s, &g) == CT_OK)
        while (n < NF && ct_session_next_frame(s, codes + 16 * n, &got) == CT_OK && got) n++;
    ct_session_free(s);
    return n == NF;
}

/* Same matrix bytes and scales in every layer matrix and head of a and b. */
static int same_weights(const ct_model *a, const ct_model *b) {
    ct_qmat_ref ra[512], rb[512];
    int n = ct_model_qmats(a, ra, 512);
    if (n > 512 || n != ct_model_qmats(b, rb, 512)) return 0;
    for (int i = 0; i < n; i++) {
        const ct_mat *x = ra[i].w, *y = rb[i].w;
        if (x->dtype != y->dtype || x->rows != y->rows || x->cols != y->cols || x->xq != y->xq) return 0;
        if (x->dtype != CT_DT_I8 && x->dtype != CT_DT_U8) continue;
        size_t sb = x->dtype == CT_DT_I8 ? (size_t)x->rows * 4 : (size_t)x->rows * (x->cols / 32) * 4;
        size_t data = x->dtype == CT_DT_I8 ? (size_t)x->rows * x->cols : (size_t)x->rows * x->cols / 2;
        if (memcmp(x->data, y->data, data) || memcmp(x->scales, y->scales, sb)) {
            printf("matrix %s differs\n", ra[i].name);
            return 0;
        }
    }
    return 1;
}

static int is(const char *a, const char *b) {
    int ok = a && b && !strcmp(a, b);
    if (!ok) printf("'%s' != '%s'\n", a ? a : "NULL", b ? b : "NULL");
    return ok;
}

static long file_size(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Entries of dir other than its cache files (*.safetensors). */
static int stray_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || (l > 12 && !strcmp(e->d_name + l - 12, ".safetensors"))) continue;
        printf("stray file %s/%s\n", dir, e->d_name);
        n++;
    }
    if (d) closedir(d);
    return n;
}

static void *load_thread(void *arg) {
    ct_model_params mp = ct_model_params_default();
    mp.weights = "int8";
    mp.cache_dir = arg;
    ct_model *m = NULL;
    char err[512];
    ct_status st = ct_model_load(DIR_, &mp, &m, err, sizeof err);
    int ok = st == CT_OK && !ct_model_get_info(m).cache_warning[0];
    ct_model_free(m);
    return ok ? arg : NULL;
}

int main(void) {
    DIR_ = ct_test_make("tiny", "wcache", 5);
    CHECK(DIR_ != NULL);
    if (!DIR_) return ct_test_finish();
    snprintf(CACHE, sizeof CACHE, "%s/wcache-root", CT_BIN_DIR);
    ct_test_rm_rf(CACHE);
    static const char *FMT[][2] = {{"int8", "int8"}, {"int4", "mixed"}};
    for (int f = 0; f < 2; f++) {
        int32_t ref[NF * 16], c1[NF * 16], c2[NF * 16];
        ct_model *plain = load(FMT[f][0], FMT[f][1], NULL, CT_OK);
        CHECK(plain && gen(plain, ref));
        ct_model_info pi = ct_model_get_info(plain);
        CHECK(plain && is(pi.weights_source, "converted") && pi.converted > 0 && is(pi.cache_file, ""));
        /* first load with a cache: converts and writes the file */
        ct_model *m1 = load(FMT[f][0], FMT[f][1], CACHE, CT_OK);
        ct_model_info i1 = ct_model_get_info(m1);
        CHECK(m1 && is(i1.weights_source, "converted") && i1.converted == pi.converted && is(i1.cache_warning, ""));
        CHECKF(m1 && strstr(i1.cache_file, "/weights/") && file_size(i1.cache_file) > 0, "cache file %s",
               m1 ? i1.cache_file : "");
        CHECK(m1 && gen(m1, c1) && memcmp(ref, c1, sizeof ref) == 0);
        /* second load: from the cache, nothing converted, the same bytes and codes */
        ct_model *m2 = load(FMT[f][0], FMT[f][1], CACHE, CT_OK);
        ct_model_info i2 = ct_model_get_info(m2);
        CHECK(m2 && is(i2.weights_source, "cache") && i2.converted == 0 && is(i2.weights_file, i1.cache_file) &&
              is(i2.cache_warning, ""));
        CHECK(m2 && plain && same_weights(plain, m2));
        CHECK(m2 && ct_model_get_info(m2).weight_bytes == pi.weight_bytes);
        CHECKF(m2 && gen(m2, c2) && memcmp(ref, c2, sizeof ref) == 0, "codes from the cache (%s/%s)", FMT[f][0],
               FMT[f][1]);
        /* the streamed weights mapped from the cache file are advised huge pages (the layer
           matrices; docs/KERNELS.md "Huge pages for the streamed weights") */
        char fl[512];
        if (m2 && access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0) {
            ct_test_vm_flags(m2->t_layers[0].q.data, fl, sizeof fl);
            CHECKF(strstr(fl, " hg") != NULL, "cache-mapped layer weights: %s", fl);
        }
        ct_model_free(m2);
        ct_model_free(m1);
        ct_model_free(plain);
    }
    /* and so are the ones mapped from the model's own file */
    ct_model *st = load("bf16", "bf16", NULL, CT_OK);
    char fl[512];
    if (st && access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0) {
        ct_test_vm_flags(st->t_layers[0].down.data, fl, sizeof fl);
        CHECKF(strstr(fl, " hg") != NULL, "file-mapped layer weights: %s", fl);
        ct_test_vm_flags(st->p_layers[0].gate.data, fl, sizeof fl);
        CHECKF(strstr(fl, " hg") != NULL, "file-mapped predictor weights: %s", fl);
    }
    ct_model_free(st);
    char wdir[2400];
    snprintf(wdir, sizeof wdir, "%s/weights", CACHE);
    CHECK(stray_files(wdir) == 0);

    /* a truncated cache file is detected and rebuilt, never used */
    ct_model *m = load("int8", "int8", CACHE, CT_OK);
    char path[4200];
    snprintf(path, sizeof path, "%s", m ? ct_model_get_info(m).cache_file : "");
    long full = file_size(path);
    ct_model_free(m);
    CHECK(full > 0 && truncate(path, full / 2) == 0);
    m = load("int8", "int8", CACHE, CT_OK);
    ct_model_info i = ct_model_get_info(m);
    CHECKF(m && is(i.weights_source, "converted") && i.converted > 0 && strstr(i.cache_warning, "rebuilt"),
           "truncated: %s", m ? i.cache_warning : "");
    ct_model_free(m);
    CHECK(file_size(path) == full);
    m = load("int8", "int8", CACHE, CT_OK);
    CHECK(m && is(ct_model_get_info(m).weights_source, "cache"));
    ct_model_free(m);

    /* a file from another engine version (same length, so the header stays valid) is stale */
    char *bytes = NULL;
    size_t len = 0;
    char err[512];
    CHECK(ct_read_file(path, 1u << 30, &bytes, &len, err, sizeof err) == CT_OK);
    char *v = bytes ? strstr(bytes + 8, "\"codectalk.engine\":\"") : NULL;
    CHECK(v != NULL);
    if (v) {
        v += strlen("\"codectalk.engine\":\"");
        v[0] = v[0] == '9' ? '8' : '9';
        FILE *fw = fopen(path, "wb");
        CHECK(fw && fwrite(bytes, 1, len, fw) == len);
        if (fw) fclose(fw);
        m = load("int8", "int8", CACHE, CT_OK);
        i = ct_model_get_info(m);
        CHECKF(m && i.converted > 0 && strstr(i.cache_warning, "stale") && strstr(i.cache_warning, "codectalk.engine"),
               "stale: %s", m ? i.cache_warning : "");
        ct_model_free(m);
        m = load("int8", "int8", CACHE, CT_OK);
        CHECK(m && is(ct_model_get_info(m).weights_source, "cache"));
        ct_model_free(m);
    }
    free(bytes);

    /* a changed model.safetensors (here: its mtime) gets a file of its own */
    char src[1200];
    snprintf(src, sizeof src, "%s/model.safetensors", DIR_);
    struct timespec ts[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
    CHECK(utimensat(AT_FDCWD, src, ts, 0) == 0);
    m = load("int8", "int8", CACHE, CT_OK);
    i = ct_model_get_info(m);
    CHECK(m && is(i.weights_source, "converted") && strcmp(i.cache_file, path) != 0 && file_size(i.cache_file) > 0);
    ct_model_free(m);

    /* a cache that cannot be written: the load works without it and says so */
    char blocker[1200];
    snprintf(blocker, sizeof blocker, "%s/wcache-not-a-dir", CT_BIN_DIR);
    FILE *fb = fopen(blocker, "w");
    CHECK(fb != NULL);
    if (fb) fclose(fb);
    m = load("int8", "int8", blocker, CT_OK);
    i = ct_model_get_info(m);
    CHECKF(m && is(i.weights_source, "converted") && strstr(i.cache_warning, "not written"), "read-only: %s",
           m ? i.cache_warning : "");
    int32_t a[NF * 16], b[NF * 16];
    ct_model *plain = load("int8", "int8", NULL, CT_OK);
    CHECK(m && plain && gen(m, a) && gen(plain, b) && memcmp(a, b, sizeof a) == 0);
    ct_model_free(plain);
    ct_model_free(m);
    if (geteuid() != 0) { /* a read-only directory (root writes anyway) */
        char ro[1200];
        snprintf(ro, sizeof ro, "%s/wcache-ro", CT_BIN_DIR);
        ct_test_rm_rf(ro);
        CHECK(mkdir(ro, 0555) == 0);
        m = load("int8", "int8", ro, CT_OK);
        CHECK(m && strstr(ct_model_get_info(m).cache_warning, "not written"));
        ct_model_free(m);
        chmod(ro, 0755);
    }

    /* concurrent first loads: each writes its own temporary file; one valid file remains */
    char conc[1200];
    snprintf(conc, sizeof conc, "%s/wcache-conc", CT_BIN_DIR);
    ct_test_rm_rf(conc);
    pthread_t th[3];
    for (int k = 0; k < 3; k++) CHECK(pthread_create(&th[k], NULL, load_thread, conc) == 0);
    for (int k = 0; k < 3; k++) {
        void *r = NULL;
        pthread_join(th[k], &r);
        CHECK(r == conc);
    }
    snprintf(wdir, sizeof wdir, "%s/weights", conc);
    CHECK(stray_files(wdir) == 0);
    m = load("int8", "int8", conc, CT_OK);
    CHECK(m && is(ct_model_get_info(m).weights_source, "cache"));
    ct_model_free(m);

    /* nothing converted, nothing cached */
    char none[1200];
    snprintf(none, sizeof none, "%s/wcache-none", CT_BIN_DIR);
    ct_test_rm_rf(none);
    m = load(NULL, NULL, none, CT_OK);
    i = ct_model_get_info(m);
    CHECK(m && is(i.weights_source, "stored") && i.converted == 0 && is(i.cache_file, ""));
    CHECK(file_size(none) < 0);
    ct_model_free(m);
    return ct_test_finish();
}
