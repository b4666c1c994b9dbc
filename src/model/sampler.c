/* Token sampler: HF logits processors (repetition penalty, min-new-tokens, suppression,
 * temperature, top-k, top-p) and a multinomial draw, allocation-free and deterministic. */
#include "model/sampler.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Scratch layout for vocab n (8-byte aligned start):
 *   double   w[n]     softmax weights exp(x - max) of the candidates
 *   uint64_t key[n]   top-p sort keys: orderable value bits << 32 | candidate position;
 *                     before that, the top-k group maxima (floats)
 *   uint64_t tmp[n]   radix-sort buffer
 *   int      cand[n]  candidate ids (finite survivors), ascending
 *   float    sel[n]   top-k selection buffer */
typedef struct {
    double *w;
    uint64_t *key;
    uint64_t *tmp;
    int *cand;
    float *sel;
} scratch_view;

size_t ct_sampler_scratch_bytes(int n) {
    if (n <= 0) return 0;
    return (size_t)n * (sizeof(double) + 2 * sizeof(uint64_t) + sizeof(int) + sizeof(float)) + 16;
}

static scratch_view scratch_carve(void *scratch, int n) {
    scratch_view v;
    uintptr_t p = (uintptr_t)scratch;
    p = (p + 7u) & ~(uintptr_t)7u;
    v.w = (double *)p;
    v.key = (uint64_t *)(v.w + n);
    v.tmp = v.key + n;
    v.cand = (int *)(v.tmp + n);
    v.sel = (float *)(v.cand + n);
    return v;
}

static int cfg_valid(const ct_sample_cfg *cfg) {
    return ct_sample_cfg_check(cfg, NULL, 0) == CT_OK;
}

/* NaN -> -inf and the first index of the maximum in one pass; -1 when all are -inf.
 * One comparison per element: !(v <= best) is true for a new maximum or a NaN. */
static int sanitize_argmax(float *x, int n) {
    int best = -1;
    float bv = -INFINITY;
    for (int i = 0; i < n; i++) {
        const float v = x[i];
        if (!(v <= bv)) {
            if (v != v) {
                x[i] = -INFINITY;
                continue;
            }
            bv = v;
            best = i;
        }
    }
    return best;
}

/* Rearranges a[0..m) so that a[k-1] is the k-th largest (1 <= k <= m) and a[0..k) hold
 * the k largest; returns a[k-1]. Iterative quickselect (median-of-3, Hoare partition). */
static float select_kth_largest(float *a, int m, int k) {
    int lo = 0, hi = m - 1;
    const int target = k - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        float x = a[lo], y = a[mid], z = a[hi], p;
        if (x < y) { float t = x; x = y; y = t; } /* x >= y */
        p = z > x ? x : (z < y ? y : z);           /* median of three */
        int i = lo, j = hi;
        while (i <= j) {
            while (a[i] > p) i++;
            while (a[j] < p) j--;
            if (i <= j) {
                float t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        if (target <= j) hi = j;
        else if (target >= i) lo = i;
        else break; /* a[j+1 .. i-1] all equal p */
    }
    return a[target];
}

/* NaN -> -inf, then the k-th largest of x[0..n) (1 <= k < n); buf holds n floats, bmax
 * holds n / 4. Without sorting:
 *   1. maxima of nb >= 2k strided groups (i mod nb), one pass, NaN cleaned on the way;
 *   2. L = k-th largest of those maxima: k distinct elements are >= L, so L is a lower
 *      bound of the answer;
 *   3. a branch-free pass copies the values >= L (about 1.3 * k of them on typical
 *      logits) to buf;
 *   4. quickselect on buf gives the exact k-th largest.
 * Small n (or k near n) skips 1-2: every value is copied. Linear for any input order. */
static float sanitize_kth_largest(float *x, int n, int k, float *buf, float *bmax) {
    int nb = 1;
    while (nb < 2 * k) nb *= 2;
    float lb = -INFINITY;
    if (4 * nb <= n) {
        for (int j = 0; j < nb; j++) bmax[j] = -INFINITY;
        for (int i = 0; i < n; i++) {
            float v = x[i];
            if (v != v) x[i] = v = -INFINITY;
            float *mj = &bmax[i & (nb - 1)];
            *mj = v > *mj ? v : *mj;
        }
        lb = select_kth_largest(bmax, nb, k);
    } else {
        for (int i = 0; i < n; i++)
            if (x[i] != x[i]) x[i] = -INFINITY;
    }
    int cnt = 0;
    for (int i = 0; i < n; i++) {
        const float v = x[i];
        buf[cnt] = v;
        cnt += v >= lb;
    }
    return select_kth_largest(buf, cnt, k); /* cnt >= k: k group maxima are >= lb */
}

/* Recovers the shortest decimal (<= 9 significant digits) that rounds to f, as a double;
 * HF computes `1 - top_p` on the Python double the user wrote, not on its float. */
static double float_short_decimal(float f) {
    double scale = 1.0;
    for (int p = 1; p <= 9; p++) {
        scale *= 10.0;
        double d = nearbyint((double)f * scale) / scale;
        if ((float)d == f) return d;
    }
    return (double)f;
}

/* Sort key ascending by value (-0 equal to +0), ties by position; v is not NaN. */
static uint64_t order_key(float v, int pos) {
    uint32_t u;
    v += 0.0f; /* -0 -> +0 */
    memcpy(&u, &v, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((uint64_t)u << 32) | (uint32_t)pos;
}

/* Ascending sort of distinct keys a[0..m) (tmp holds m): insertion sort when short,
 * otherwise a stable LSD radix sort on the value half (4 byte-digits; the position half is
 * already ascending in input order, so ties stay in position order). */
static void key_sort(uint64_t *a, uint64_t *tmp, int m) {
    if (m <= 64) {
        for (int i = 1; i < m; i++) {
            uint64_t v = a[i];
            int j = i - 1;
            while (j >= 0 && a[j] > v) {
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = v;
        }
        return;
    }
    for (int shift = 32; shift < 64; shift += 8) {
        int count[256] = {0};
        for (int i = 0; i < m; i++) count[(a[i] >> shift) & 255u]++;
        int pos = 0;
        for (int d = 0; d < 256; d++) {
            int c = count[d];
            count[d] = pos;
            pos += c;
        }
        for (int i = 0; i < m; i++) tmp[count[(a[i] >> shift) & 255u]++] = a[i];
        uint64_t *t = a;
        a = tmp;
        tmp = t;
    }
    /* four passes: the sorted keys are back in the caller's array */
}

/* Warpers + draw (cfg valid, do_sample set); logits may still hold NaN. */
static int warp_and_draw(float *logits, int n, const ct_sample_cfg *cfg, ct_rng *rng,
                         scratch_view s) {
    const float t = cfg->temperature;
    int m = 0;
    if (cfg->top_k > 0 && cfg->top_k < n) {
        /* HF divides by T first and then keeps x/T >= (k-th largest of x/T). x -> x/T is
         * monotonic, so that threshold is thr/T for thr the k-th largest raw logit; values
         * just below thr can round onto thr/T and are kept too (checked exactly for the
         * few inside a conservative band). Only survivors are divided afterwards. */
        float *group_max = (float *)(void *)s.key; /* the keys are not in use yet */
        const float thr = sanitize_kth_largest(logits, n, cfg->top_k, s.sel, group_max);
        if (thr == -INFINITY) { /* fewer than k finite values: nothing to remove */
            for (int i = 0; i < n; i++)
                if (logits[i] != -INFINITY) s.cand[m++] = i;
        } else {
            const float thr_t = thr / t;
            double band; /* every v < thr with v / t == thr / t lies in [band, thr) */
            if (thr == INFINITY) band = t < 1.0f ? (double)FLT_MAX * (double)t * 0.5 : INFINITY;
            else band = (double)thr - (fabs((double)thr) * 1e-6 + (double)t * 1e-37);
            float bandf = (float)band;
            if ((double)bandf > band) bandf = nextafterf(bandf, -INFINITY);
            for (int i = 0; i < n; i++) {
                const float v = logits[i];
                if (v < bandf) logits[i] = -INFINITY; /* the common case: one comparison */
                else if (v >= thr || v / t == thr_t) s.cand[m++] = i;
                else logits[i] = -INFINITY;
            }
        }
    } else {
        for (int i = 0; i < n; i++) {
            const float v = logits[i];
            if (v != v) logits[i] = -INFINITY;
            else if (v != -INFINITY) s.cand[m++] = i;
        }
    }
    if (m == 0) return -1;
    if (t != 1.0f)
        for (int j = 0; j < m; j++) logits[s.cand[j]] = logits[s.cand[j]] / t;

    /* Softmax weights with max subtraction; +inf entries share the mass equally. */
    float mx = logits[s.cand[0]];
    for (int j = 1; j < m; j++)
        if (logits[s.cand[j]] > mx) mx = logits[s.cand[j]];
    double sum = 0.0;
    for (int j = 0; j < m; j++) {
        const float v = logits[s.cand[j]];
        double w;
        if (mx == INFINITY) w = (v == INFINITY) ? 1.0 : 0.0;
        else w = exp((double)v - (double)mx);
        s.w[j] = w;
        sum += w;
    }

    /* Top-p (installed for top_p < 1): HF TopPLogitsWarper on the float softmax, sorted
     * ascending with ties in id order (torch's CPU sort is not stable; HF is ambiguous
     * there). */
    if (cfg->top_p < 1.0f && m > 1) {
        for (int j = 0; j < m; j++) s.key[j] = order_key(logits[s.cand[j]], j);
        key_sort(s.key, s.tmp, m);
        const float thr = (float)(1.0 - float_short_decimal(cfg->top_p));
        double cum = 0.0;
        for (int r = 0; r < m - 1; r++) { /* the last (largest) always survives */
            const int j = (int)(uint32_t)s.key[r];
            cum += (double)(float)(s.w[j] / sum);
            if (!((float)cum <= thr)) break;
            logits[s.cand[j]] = -INFINITY;
            s.w[j] = 0.0;
        }
        sum = 0.0;
        for (int j = 0; j < m; j++) sum += s.w[j];
    }

    if (!(sum > 0.0) || !isfinite(sum)) return -1;
    const double target = ct_rng_uniform(rng) * sum;
    double acc = 0.0;
    int last = -1;
    for (int j = 0; j < m; j++) {
        if (s.w[j] <= 0.0) continue;
        acc += s.w[j];
        last = s.cand[j];
        if (target < acc) return last;
    }
    return last; /* rounding put target at the very top */
}

int ct_sample_plain(float *logits, int n, const ct_sample_cfg *cfg, ct_rng *rng, void *scratch) {
    if (!logits || !cfg || n <= 0 || !cfg_valid(cfg)) return -1;
    if (cfg->do_sample && (!rng || !scratch)) return -1;
    if (!cfg->do_sample) return sanitize_argmax(logits, n);
    return warp_and_draw(logits, n, cfg, rng, scratch_carve(scratch, n));
}

int ct_sample_talker(float *logits, int n, const ct_sample_cfg *cfg, const uint8_t *seen,
                     int n_generated, int min_new_tokens, int eos_id, int suppress_lo,
                     int suppress_hi, ct_rng *rng, void *scratch) {
    if (!logits || !cfg || n <= 0 || !cfg_valid(cfg)) return -1;
    if (cfg->do_sample && (!rng || !scratch)) return -1;
    /* NaN stays NaN through the penalty and the masks; the warper pass makes it -inf. */
    if (seen && cfg->repetition_penalty != 1.0f) {
        const float p = cfg->repetition_penalty;
        for (int i0 = 0; i0 < n; i0 += 8) {
            const int i1 = i0 + 8 < n ? i0 + 8 : n;
            uint64_t any = 0;
            if (i1 - i0 == 8) memcpy(&any, seen + i0, 8); /* skip 8 unseen ids at once */
            else any = 1;
            if (!any) continue;
            for (int i = i0; i < i1; i++) {
                if (!seen[i]) continue;
                const float x = logits[i];
                logits[i] = x < 0.0f ? x * p : x / p;
            }
        }
    }
    const int has_eos = eos_id >= 0 && eos_id < n;
    if (has_eos && n_generated < min_new_tokens) logits[eos_id] = -INFINITY;
    if (suppress_lo <= suppress_hi) {
        const int lo = suppress_lo < 0 ? 0 : suppress_lo;
        const int hi = suppress_hi >= n ? n - 1 : suppress_hi;
        for (int i = lo; i <= hi; i++)
            if (i != eos_id) logits[i] = -INFINITY;
    }

    if (!cfg->do_sample) return sanitize_argmax(logits, n);
    return warp_and_draw(logits, n, cfg, rng, scratch_carve(scratch, n));
}

ct_status ct_sample_cfg_check(const ct_sample_cfg *cfg, char *err, size_t errcap) {
    if (!cfg) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "sample cfg: NULL");
    if (cfg->do_sample != 0 && cfg->do_sample != 1)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "sample cfg: do_sample must be 0 or 1, got %d", cfg->do_sample);
    if (!cfg->do_sample) { /* greedy: only the penalty is used */
        if (!(cfg->repetition_penalty > 0.0f) || !isfinite(cfg->repetition_penalty))
            return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                           "sample cfg: repetition_penalty must be finite and > 0, got %g",
                           (double)cfg->repetition_penalty);
        return CT_OK;
    }
    if (!(cfg->temperature > 0.0f) || !isfinite(cfg->temperature))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "sample cfg: temperature must be finite and > 0, got %g",
                       (double)cfg->temperature);
    if (!(cfg->top_p > 0.0f && cfg->top_p <= 1.0f))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "sample cfg: top_p must be in (0, 1], got %g", (double)cfg->top_p);
    if (!(cfg->repetition_penalty > 0.0f) || !isfinite(cfg->repetition_penalty))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "sample cfg: repetition_penalty must be finite and > 0, got %g",
                       (double)cfg->repetition_penalty);
    return CT_OK;
}
