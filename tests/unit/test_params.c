/* ct_params_take (core/params.h): the size rule of the public params structs. A caller's struct
 * of the same size is copied whole; a smaller (older) one leaves the fields it lacks at their
 * defaults; a larger (newer) one is accepted only when its extra bytes are zero; size 0 means
 * the whole struct; sizes below the size field and NULL src are handled; dst is untouched on
 * failure and carries the library's size after success. Then through ct_model_load: a newer
 * struct with a non-zero extra field is refused with the message. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "codectalk.h"
#include "core/params.h"
#include "ct_test.h"

/* A params struct as this library knows it, and as a newer and an older header declare it. */
typedef struct {
    size_t size;
    int a;
    const char *s;
    double d;
} params_v2;

typedef struct {
    size_t size;
    int a;
} params_v1; /* older: lacks s and d */

typedef struct {
    size_t size;
    int a;
    const char *s;
    double d;
    int64_t added; /* newer: a field this library does not know */
} params_v3;

static params_v2 defaults(void) {
    params_v2 p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.a = 7;
    p.s = "default";
    p.d = 2.5;
    return p;
}

int main(void) {
    char err[256];

    /* same size: every field taken */
    params_v2 in = defaults(), out = defaults();
    in.a = 1, in.s = "mine", in.d = -1.0;
    CHECK(ct_params_take(&out, sizeof out, &in, in.size, "params_v2", err, sizeof err) == CT_OK);
    CHECK(out.a == 1 && !strcmp(out.s, "mine") && out.d == -1.0 && out.size == sizeof out);

    /* NULL: the defaults */
    out = defaults();
    CHECK(ct_params_take(&out, sizeof out, NULL, 0, "params_v2", err, sizeof err) == CT_OK);
    CHECK(out.a == 7 && !strcmp(out.s, "default") && out.d == 2.5);

    /* older, smaller struct: its fields taken, the rest stay at the defaults */
    params_v1 old;
    memset(&old, 0, sizeof old);
    old.size = sizeof old;
    old.a = 3;
    out = defaults();
    CHECK(ct_params_take(&out, sizeof out, &old, old.size, "params_v2", err, sizeof err) == CT_OK);
    CHECK(out.a == 3 && !strcmp(out.s, "default") && out.d == 2.5 && out.size == sizeof out);

    /* size 0: the whole struct (a zeroed struct filled without setting size) */
    params_v2 z;
    memset(&z, 0, sizeof z);
    z.a = 5;
    out = defaults();
    CHECK(ct_params_take(&out, sizeof out, &z, z.size, "params_v2", err, sizeof err) == CT_OK);
    CHECK(out.a == 5 && out.s == NULL && out.d == 0.0 && out.size == sizeof out);

    /* newer, larger struct with the new field zero: accepted, the known fields taken */
    params_v3 nw;
    memset(&nw, 0, sizeof nw);
    nw.size = sizeof nw;
    nw.a = 9;
    nw.s = "newer";
    nw.d = 4.0;
    out = defaults();
    CHECK(ct_params_take(&out, sizeof out, &nw, nw.size, "params_v2", err, sizeof err) == CT_OK);
    CHECK(out.a == 9 && !strcmp(out.s, "newer") && out.d == 4.0 && out.size == sizeof out);

    /* ... and with the new field set: refused, dst untouched, the message says why */
    nw.added = 1;
    out = defaults();
    err[0] = 0;
    CHECK(ct_params_take(&out, sizeof out, &nw, nw.size, "params_v2", err, sizeof err) == CT_ERR_INVALID_ARG);
    CHECKF(strstr(err, "newer codectalk") && strstr(err, "params_v2"), "%s", err);
    CHECK(out.a == 7 && !strcmp(out.s, "default") && out.d == 2.5);

    /* a size smaller than the size field itself */
    in = defaults();
    CHECK(ct_params_take(&out, sizeof out, &in, sizeof(size_t) - 1, "params_v2", err, sizeof err) ==
          CT_ERR_INVALID_ARG);
    CHECK(out.a == 7);
    /* exactly the size field: nothing else taken */
    in.a = 100;
    CHECK(ct_params_take(&out, sizeof out, &in, sizeof(size_t), "params_v2", err, sizeof err) == CT_OK);
    CHECK(out.a == 7 && out.size == sizeof out);

    /* through the public API: the default is accepted as is, a newer struct with a set extra
       field is refused before anything is loaded */
    ct_model_params mp = ct_model_params_default();
    CHECK(mp.size == sizeof mp);
    struct {
        ct_model_params p;
        uint64_t added;
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.p = ct_model_params_default();
    newer.p.size = sizeof newer;
    newer.added = 42;
    ct_model *m = NULL;
    err[0] = 0;
    CHECK(ct_model_load("/nonexistent", &newer.p, &m, err, sizeof err) == CT_ERR_INVALID_ARG && m == NULL);
    CHECKF(strstr(err, "newer codectalk") && strstr(err, "ct_model_params"), "%s", err);
    /* with the extra field zero the params pass and the load fails on the directory instead */
    newer.added = 0;
    err[0] = 0;
    CHECK(ct_model_load("/nonexistent", &newer.p, &m, err, sizeof err) != CT_OK && m == NULL);
    CHECKF(!strstr(err, "newer codectalk"), "%s", err);
    return ct_test_finish();
}
