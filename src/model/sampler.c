/* Token sampler: HF logits processors (repetition penalty, min-new-tokens, suppression,
 * temperature, top-k, top-p) and a multinomial draw, allocation-free and deterministic. */
#include "model/sampler.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Scratch layout for vocab n (8-byte aligned start):
 *   double   w[n]     softmax weights exp(x - max) of the candidates
 *   uint64_t key[n]   top-p sort keys: orderable value bits << 32 | candidate position
 *   int      cand[n]  candidate ids (finite survivors), ascending
 *   float    heap[n]  top-k min-heap (first k used) */
typedef struct {
    double *w;
    uint64_t *key;
    int *cand;
    float *heap;
} scratch_view;

size_t ct_sampler_scratch_bytes(int n) {
    if (n <= 0) return 0;
    return (size_t)n * (sizeof(double) + sizeof(uint64_t) + sizeof(int) + sizeof(float)) + 16;
}

static scratch_view scratch_carve(void *scratch, int n) {
    scratch_view v;
    uintptr_t p = (uintptr_t)scratch;
    p = (p + 7u) & ~(uintptr_t)7u;
    v.w = (double *)p;
    v.key = (uint64_t *)(v.w + n);
    v.cand = (int *)(v.key + n);
    v.heap = (float *)(v.cand + n);
    return v;
}

static int cfg_valid(const ct_sample_cfg *cfg) {
    return ct_sample_cfg_check(cfg, NULL, 0) == CT_OK;
}

/* NaN -> -inf and the first index of the maximum in one pass; -1 when all are -inf. */
static int sanitize_argmax(float *x, int n) {
    int best = -1;
    float bv = -INFINITY;
    for (int i = 0; i < n; i++) {
        float v = x[i];
        if (v != v) x[i] = v = -INFINITY;
        if (v > bv) {
            bv = v;
            best = i;
        }
    }
    return best;
}

/* NaN -> -inf, then the k-th largest of x[0..n) (1 <= k <= n) via a size-k min-heap:
 * O(n log k) worst case, about one comparison per element on typical inputs. */
static float sanitize_kth_largest(float *x, int n, int k, float *heap) {
    int cnt = 0;
    for (int i = 0; i < n; i++) {
        float v = x[i];
        if (v != v) x[i] = v = -INFINITY;
        int j;
        if (cnt < k) { /* sift up */
            j = cnt++;
            while (j > 0) {
                int parent = (j - 1) / 2;
                if (heap[parent] <= v) break;
                heap[j] = heap[parent];
                j = parent;
            }
            heap[j] = v;
        } else if (v > heap[0]) { /* replace the root, sift down */
            j = 0;
            for (;;) {
                int c = 2 * j + 1;
                if (c >= k) break;
                if (c + 1 < k && heap[c + 1] < heap[c]) c++;
                if (heap[c] >= v) break;
                heap[j] = heap[c];
                j = c;
            }
            heap[j] = v;
        }
    }
    return heap[0];
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

static void key_sift(uint64_t *a, int root, int end) {
    for (;;) {
        int c = 2 * root + 1;
        if (c >= end) return;
        if (c + 1 < end && a[c] < a[c + 1]) c++;
        if (a[root] >= a[c]) return;
        uint64_t t = a[root];
        a[root] = a[c];
        a[c] = t;
        root = c;
    }
}

/* Ascending sort of distinct keys: insertion sort when short, heapsort otherwise. */
static void key_sort(uint64_t *a, int m) {
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
    for (int i = m / 2 - 1; i >= 0; i--) key_sift(a, i, m);
    for (int end = m - 1; end > 0; end--) {
        uint64_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        key_sift(a, 0, end);
    }
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
        const float thr = sanitize_kth_largest(logits, n, cfg->top_k, s.heap);
        const float thr_t = thr / t;
        double band;
        if (thr == INFINITY) band = t < 1.0f ? (double)FLT_MAX * (double)t * 0.5 : INFINITY;
        else band = (double)thr - (fabs((double)thr) * 1e-6 + (double)t * 1e-37);
        for (int i = 0; i < n; i++) {
            const float v = logits[i];
            if (v >= thr) {
                if (v != -INFINITY) s.cand[m++] = i;
            } else if ((double)v >= band && v / t == thr_t) {
                s.cand[m++] = i;
            } else {
                logits[i] = -INFINITY;
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
        key_sort(s.key, m);
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
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "sample cfg: do_sample must be 0 or 1, got %d",
                       cfg->do_sample);
    if (!(cfg->temperature > 0.0f) || !isfinite(cfg->temperature))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "sample cfg: temperature must be finite and > 0, got %g",
                       (double)cfg->temperature);
    if (!(cfg->top_p > 0.0f && cfg->top_p <= 1.0f))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "sample cfg: top_p must be in (0, 1], got %g",
                       (double)cfg->top_p);
    if (!(cfg->repetition_penalty > 0.0f) || !isfinite(cfg->repetition_penalty))
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG,
                       "sample cfg: repetition_penalty must be finite and > 0, got %g",
                       (double)cfg->repetition_penalty);
    return CT_OK;
}
