/* Row addressing shared by the SIMD matmul variants: where row r of a weight matrix starts in
   its storage format, and the scales that go with it (INT8 per row, INT4 per group). */
#ifndef CT_MATROW_H
#define CT_MATROW_H

#include "kernels/cpu.h"
#include "kernels/ops.h"

/* One-token weight prefetch, bytes ahead in each row: into L1 and into L2 (docs/KERNELS.md
   "Decode prefetch"; INT4 group scales a quarter as far). */
#ifndef CT_PF_L1
#define CT_PF_L1 512
#endif
#ifndef CT_PF_L2
#define CT_PF_L2 16384
#endif

/* Vector v stays in a register from here: GCC may no longer fold its load into each
   instruction that uses it (a load per use instead of one: a 2-row block's x loads then bound
   the FMAs on Zen 4's load ports). */
#if defined(__AVX512F__)
#define CT_IN_REG(v) __asm__("" : "+v"(v))
#elif defined(__x86_64__) || defined(__i386__)
#define CT_IN_REG(v) __asm__("" : "+x"(v))
#else
#define CT_IN_REG(v) __asm__("" : "+w"(v))
#endif

/* An R-row block's one-token prefetch where its rows are contiguous (row i at p0 + i x rb
   bytes) and a loop step reads 64 bytes of each row at byte offset kb (call it for each row i
   of the step): the row's line CT_PF_ROW ahead into L2, and the block's bytes in address
   order, R lines a step from R - 1 rows + CT_PF_ROW ahead, so that every line of the next
   blocks is asked for before the block's last row needs it. Against the per-row L1 + L2 pair
   above, one thread read 2048 x 1024 .. 1024 x 3072 INT8 from memory 16-32% faster, and the
   BF16 and INT8 decode steps took 12-15% less (docs/KERNELS.md "Decode prefetch"). */
#define CT_PF_ROW 8192
#define CT_PF_BLK(R, p0, p, rb, kb, i)                                                                 \
    do {                                                                                               \
        _mm_prefetch((const char *)(p) + (kb) + CT_PF_ROW, _MM_HINT_T1);                               \
        _mm_prefetch((const char *)(p0) + (size_t)(R) * (size_t)(kb) + 64 * (size_t)(i) +             \
                         ((size_t)(R) - 1) * (size_t)(rb) + CT_PF_ROW,                                 \
                     _MM_HINT_T1);                                                                     \
    } while (0)

/* Bytes prefetched into L2 a few lines per step of other work (ct_pf_spread_step once per
   step): the next panel or row chunk while the current one computes. Issued at once, they
   fill the miss buffers and stall the core with the arithmetic idle (docs/KERNELS.md
   "Integer-dot panels"). Two ranges, the second after the first. */
typedef struct {
    const char *p, *p2; /* NULL p: nothing to prefetch */
    size_t n, n2, done, per_step; /* bytes of each range, prefetched so far (both), per step */
} ct_pf_spread;

/* per_step for `bytes` over `steps` steps: whole lines, at least one */
static inline size_t ct_pf_spread_per(size_t bytes, size_t steps) {
    return (bytes / (steps ? steps : 1) + 64) & ~(size_t)63;
}

static inline void ct_pf_spread_step(ct_pf_spread *f) {
    if (!f->p) return;
    for (size_t e = f->done + f->per_step; f->done < e && f->done < f->n + f->n2; f->done += 64)
        __builtin_prefetch(f->done < f->n ? f->p + f->done : f->p2 + (f->done - f->n), 0, 2); /* L2 */
}

/* Start of row r: F32 4 bytes, BF16/F16 2, INT8 1, INT4 (U8, two per byte) 1/2 per element. */
static inline const void *ct_row_ptr(const ct_mat *w, int r) {
    size_t C = (size_t)w->cols, o;
    switch (w->dtype) {
    case CT_DT_F32: o = C * 4; break;
    case CT_DT_I8: o = C; break;
    case CT_DT_U8: o = C / 2; break;
    default: o = C * 2; break;
    }
    return (const char *)w->data + (size_t)r * o;
}

/* The group scales of row r (INT4), or NULL. */
static inline const float *ct_row_sc(const ct_mat *w, int r) {
    return w->dtype == CT_DT_U8 ? w->scales + (size_t)r * (size_t)(w->cols / CT_Q4_GROUP) : NULL;
}

/* Scale applied to a finished dot product of row r (INT8), else 1. */
static inline float ct_post_scale(const ct_mat *w, int r) {
    return w->dtype == CT_DT_I8 ? w->scales[r] : 1.0f;
}

/* 1 when a call runs in the integer-dot mode: xq INT8/INT4 weights, at every token count. */
static inline int ct_xq_active(const ct_mat *w) {
    return w->xq && (w->dtype == CT_DT_I8 || w->dtype == CT_DT_U8);
}

#endif
