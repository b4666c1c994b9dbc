/* Panel packing of the codec-decoder weights (layout in kernels/conv.h). */
#include "kernels/conv.h"

#include <stdlib.h>
#include <string.h>

#define OB CT_CV_OB

int ct_cv_packed_alloc(ct_cv_packed *p, int k, int cin, int cout) {
    memset(p, 0, sizeof *p);
    p->k = k;
    p->cin = cin;
    p->cout = cout;
    p->nb = (cout + OB - 1) / OB;
    size_t n = (size_t)p->nb * (size_t)k * (size_t)cin * OB;
    p->w = calloc(n ? n : 1, sizeof(float));
    return p->w ? 0 : -1;
}

void ct_cv_packed_free(ct_cv_packed *p) {
    if (!p) return;
    free(p->w);
    p->w = NULL;
}

/* Address of W[j][i][o] inside the panels. */
static float *pslot(ct_cv_packed *p, int j, int i, int o) {
    size_t b = (size_t)(o / OB);
    return p->w + ((b * (size_t)p->k + (size_t)j) * (size_t)p->cin + (size_t)i) * OB + (size_t)(o % OB);
}

void ct_cv_pack_conv(ct_cv_packed *p, const float *src) {
    for (int o = 0; o < p->cout; o++)
        for (int i = 0; i < p->cin; i++)
            for (int j = 0; j < p->k; j++)
                *pslot(p, j, i, o) = src[((size_t)o * (size_t)p->cin + (size_t)i) * (size_t)p->k + (size_t)j];
}

void ct_cv_pack_tconv(ct_cv_packed *p, const float *src) {
    for (int i = 0; i < p->cin; i++)
        for (int o = 0; o < p->cout; o++)
            for (int j = 0; j < p->k; j++)
                *pslot(p, j, i, o) = src[((size_t)i * (size_t)p->cout + (size_t)o) * (size_t)p->k + (size_t)j];
}

void ct_cv_pack_linear(ct_cv_packed *p, const float *src) {
    for (int o = 0; o < p->cout; o++)
        for (int i = 0; i < p->cin; i++) *pslot(p, 0, i, o) = src[(size_t)o * (size_t)p->cin + (size_t)i];
}
