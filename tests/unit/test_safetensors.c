/* Safetensors reader: valid files parse; every kind of lying or truncated header is rejected. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "ct_test.h"
#include "io/safetensors.h"

static uint8_t buf[1 << 16];

/* Builds 8-byte length + header + data bytes into buf; returns total length. */
static size_t make(const char *hdr, size_t data_len) {
    size_t hl = strlen(hdr);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, hdr, hl);
    for (size_t i = 0; i < data_len; i++) buf[8 + hl + i] = (uint8_t)i;
    return 8 + hl + data_len;
}

/* ct_st_advise_huge: huge pages asked for the named tensors of a mapped file only, ranges
   2 MiB or more apart kept apart (the table between two layer tensors stays out). */
static void check_advise_huge(void) {
    const size_t MiB = (size_t)1 << 20;
    char hdr[512], path[] = "/tmp/ct_st_hugeXXXXXX";
    snprintf(hdr, sizeof hdr,
             "{\"x.layers.0.w\":{\"dtype\":\"U8\",\"shape\":[%zu],\"data_offsets\":[0,%zu]},"
             "\"emb\":{\"dtype\":\"U8\",\"shape\":[%zu],\"data_offsets\":[%zu,%zu]},"
             "\"x.layers.1.w\":{\"dtype\":\"U8\",\"shape\":[%zu],\"data_offsets\":[%zu,%zu]}}",
             3 * MiB, 3 * MiB, 4 * MiB, 3 * MiB, 7 * MiB, 2 * MiB, 7 * MiB, 9 * MiB);
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    size_t hl = strlen(hdr);
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    int ok = write(fd, len8, 8) == 8 && write(fd, hdr, hl) == (ssize_t)hl && ftruncate(fd, (off_t)(8 + hl + 9 * MiB)) == 0;
    close(fd);
    CHECK(ok);
    char err[256];
    ct_st_file *f = NULL;
    CHECK(ok && ct_st_open(path, &f, err, sizeof err) == CT_OK);
    unlink(path);
    if (!f) return;
    const char *none[1] = {"nothing"}, *layers[1] = {".layers."};
    CHECK(ct_st_advise_huge(f, none, 1) == 0);
    const size_t got = ct_st_advise_huge(f, layers, 1);
    const ct_st_tensor *l0 = ct_st_find(f, "x.layers.0.w"), *l1 = ct_st_find(f, "x.layers.1.w"), *e = ct_st_find(f, "emb");
    char fl[512];
    if (access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0) { /* a kernel with THP */
        /* the two layer tensors, each widened to whole pages */
        CHECKF(got >= 5 * MiB && got <= 5 * MiB + 3 * 4096, "advised %zu bytes", got);
        ct_test_vm_flags((const uint8_t *)l0->data + MiB, fl, sizeof fl);
        CHECKF(strstr(fl, " hg") != NULL, "first layer tensor: %s", fl);
        ct_test_vm_flags((const uint8_t *)l1->data + MiB, fl, sizeof fl);
        CHECKF(strstr(fl, " hg") != NULL, "second layer tensor: %s", fl);
        ct_test_vm_flags((const uint8_t *)e->data + 2 * MiB, fl, sizeof fl);
        CHECKF(fl[0] && strstr(fl, " hg") == NULL, "the table between them: %s", fl);
    } else {
        CHECKF(got == 0, "advised %zu bytes without THP", got);
    }
    ct_st_close(f);
    /* an in-memory buffer has no mapping to advise */
    CHECK(ct_st_open_buffer(buf, make("{\"x.layers.0.w\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[0,16]}}", 16),
                            &f, err, sizeof err) == CT_OK);
    CHECK(ct_st_advise_huge(f, layers, 1) == 0);
    ct_st_close(f);
}

static ct_status try_open(const char *hdr, size_t data_len, char *err, size_t cap) {
    ct_st_file *f = NULL;
    ct_status st = ct_st_open_buffer(buf, make(hdr, data_len), &f, err, cap);
    ct_st_close(f);
    return st;
}

static void expect_reject(const char *hdr, size_t data_len, const char *needle) {
    char err[512] = "";
    ct_status st = try_open(hdr, data_len, err, sizeof err);
    CHECKF(st == CT_ERR_FORMAT, "status %d for header %s", st, hdr);
    CHECKF(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
}

int main(void) {
    char err[512];
    /* valid: two tensors, metadata, unsorted keys */
    const char *ok = "{\"__metadata__\":{\"format\":\"pt\"},"
                     "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
                     "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    ct_st_file *f = NULL;
    CHECK(ct_st_open_buffer(buf, make(ok, 28), &f, err, sizeof err) == CT_OK);
    CHECK(ct_st_count(f) == 2);
    const ct_st_tensor *a = ct_st_find(f, "a"), *b = ct_st_find(f, "b");
    CHECK(a && a->dtype == CT_DT_F32 && a->ndim == 1 && a->shape[0] == 4 && a->nbytes == 16);
    CHECK(b && b->dtype == CT_DT_BF16 && b->ndim == 2 && b->shape[1] == 3 && b->nbytes == 12);
    CHECK(a && (const uint8_t *)a->data == buf + 8 + strlen(ok));
    CHECK(ct_st_find(f, "c") == NULL);
    CHECK(strcmp(ct_st_at(f, 0)->name, "a") == 0);
    ct_st_close(f);

    /* scalar (shape []) and an empty tensor are legal */
    CHECK(try_open("{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                   "\"e\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[4,4]}}", 4, err,
                   sizeof err) == CT_OK);

    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "ends at byte");
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[0,16]}}", 16, "needs 20 bytes");
    expect_reject("{\"a\":{\"dtype\":\"Q4\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, "unknown dtype");
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", 16, "bad shape");
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,0]}}", 16, "bad data_offsets");
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                  "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 24, "overlap");
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}", 32, "not valid JSON");
    expect_reject("[1,2]", 0, "not a JSON object");
    expect_reject("{\"a\":{\"dtype\":\"F32\"}}", 0, "lacks dtype");
    expect_reject("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "dims");
    expect_reject("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,4294967296],"
                  "\"data_offsets\":[0,4]}}", 4, "overflow");
    expect_reject("{\"__metadata__\":3}", 0, "__metadata__");
    expect_reject("{not json", 0, "not valid JSON");

    /* header length larger than the file / shorter than 8 bytes */
    size_t n = make(ok, 28);
    buf[0] = 0xff;
    buf[1] = 0xff;
    CHECK(ct_st_open_buffer(buf, n, &f, err, sizeof err) == CT_ERR_FORMAT && strstr(err, "exceeds"));
    CHECK(ct_st_open_buffer(buf, 5, &f, err, sizeof err) == CT_ERR_FORMAT);
    CHECK(f == NULL);
    /* truncation at every length of a valid file never crashes and never succeeds early */
    n = make(ok, 28);
    int early = 0;
    for (size_t cut = 0; cut < n; cut++) {
        ct_st_file *g = NULL;
        if (ct_st_open_buffer(buf, cut, &g, err, sizeof err) == CT_OK) early++;
        ct_st_close(g);
    }
    CHECK(early == 0);

    /* file paths */
    CHECK(ct_st_open("/nonexistent/x.safetensors", &f, err, sizeof err) == CT_ERR_IO);
    CHECK(strstr(err, "/nonexistent/x.safetensors") != NULL);
    CHECK(ct_st_open("/", &f, err, sizeof err) == CT_ERR_IO);
    char path[] = "/tmp/ct_st_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        n = make(ok, 28);
        FILE *w = fdopen(fd, "wb");
        fwrite(buf, 1, n, w);
        fclose(w);
        CHECK(ct_st_open(path, &f, err, sizeof err) == CT_OK);
        const ct_st_tensor *t = ct_st_find(f, "a");
        CHECK(t && memcmp(t->data, buf + 8 + strlen(ok), 16) == 0);
        ct_st_close(f);
        remove(path);
    }
    char sb[64];
    int64_t shp[3] = {2, 3, 4};
    CHECK(strcmp(ct_st_shape_str(shp, 3, sb, sizeof sb), "[2, 3, 4]") == 0);
    check_advise_huge();
    return ct_test_finish();
}
