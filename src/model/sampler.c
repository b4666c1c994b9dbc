/* Token sampler: HF logits processors (repetition penalty, min-new-tokens, suppression,
 * temperature, top-k, top-p) and a multinomial draw, allocation-free and deterministic. */
#include "model/sampler.h"

#include <math.h>
#include <string.h>

/* Scratch layout for vocab n (8-byte aligned start):
 *   double w[n]     softmax weights exp(x - max) of the candidates
 *   int    cand[n]  candidate ids (finite survivors), ascending
 *   int    ord[n]   positions into cand, sorted for top-p
 *   float  heap[n]  top-k min-heap (first k used) */
typedef struct {
    double *w;
    int *cand;
    int *ord;
    float *heap;
} scratch_view;

size_t ct_sampler_scratch_bytes(int n) {
    if (n <= 0) return 0;
    return (size_t)n * (sizeof(double) + 2 * sizeof(int) + sizeof(float)) + 16;
}

static scratch_view scratch_carve(void *scratch, int n) {
    scratch_view v;
    uintptr_t p = (uintptr_t)scratch;
    p = (p + 7u) & ~(uintptr_t)7u;
    v.w = (double *)p;
    v.cand = (int *)(v.w + n);
    v.ord = v.cand + n;
    v.heap = (float *)(v.ord + n);
    return v;
}

static int cfg_valid(const ct_sample_cfg *cfg) {
    return ct_sample_cfg_check(cfg, NULL, 0) == CT_OK;
}

static void nan_to_neg_inf(float *x, int n) {
    for (int i = 0; i < n; i++)
        if (isnan(x[i])) x[i] = -INFINITY;
}

/* First index of the maximum, or -1 when every entry is -inf (input has no NaN). */
static int argmax_first(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return x[best] == -INFINITY ? -1 : best;
}

/* k-th largest of x[0..n) (1 <= k <= n) via a size-k min-heap: O(n log k) worst case,
 * about n comparisons on typical inputs. */
static float kth_largest(const float *x, int n, int k, float *heap) {
    int cnt = 0;
    for (int i = 0; i < n; i++) {
        float v = x[i];
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

/* Top-p order key: ascending by value, ties ascending by position (= by id). */
static int ord_less(const float *val, int a, int b) {
    return val[a] < val[b] || (val[a] == val[b] && a < b);
}

static void ord_sift(int *ord, int root, int end, const float *val) {
    for (;;) {
        int c = 2 * root + 1;
        if (c >= end) return;
        if (c + 1 < end && ord_less(val, ord[c], ord[c + 1])) c++;
        if (!ord_less(val, ord[root], ord[c])) return;
        int t = ord[root];
        ord[root] = ord[c];
        ord[c] = t;
        root = c;
    }
}

/* Heapsort of ord[0..m) (a permutation of 0..m-1) by ord_less; no recursion. */
static void ord_sort(int *ord, int m, const float *val) {
    for (int i = m / 2 - 1; i >= 0; i--) ord_sift(ord, i, m, val);
    for (int end = m - 1; end > 0; end--) {
        int t = ord[0];
        ord[0] = ord[end];
        ord[end] = t;
        ord_sift(ord, 0, end, val);
    }
}

/* Warpers + draw on NaN-free logits (cfg valid, do_sample set). */
static int warp_and_draw(float *logits, int n, const ct_sample_cfg *cfg, ct_rng *rng,
                         scratch_view s) {
    if (cfg->temperature != 1.0f) {
        const float t = cfg->temperature;
        for (int i = 0; i < n; i++) logits[i] = logits[i] / t;
    }

    /* Top-k (installed for 0 < k < n), then gather the finite survivors in id order. */
    int m = 0;
    if (cfg->top_k > 0 && cfg->top_k < n) {
        const float thr = kth_largest(logits, n, cfg->top_k, s.heap);
        for (int i = 0; i < n; i++) {
            if (logits[i] < thr) logits[i] = -INFINITY;
            else if (logits[i] != -INFINITY) s.cand[m++] = i;
        }
    } else {
        for (int i = 0; i < n; i++)
            if (logits[i] != -INFINITY) s.cand[m++] = i;
    }
    if (m == 0) return -1;

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

    /* Top-p (installed for top_p < 1): HF TopPLogitsWarper on the float softmax. */
    if (cfg->top_p < 1.0f && m > 1) {
        float *val = s.heap; /* candidate values by position (the heap is free now) */
        for (int j = 0; j < m; j++) {
            val[j] = logits[s.cand[j]];
            s.ord[j] = j;
        }
        ord_sort(s.ord, m, val);
        const float thr = (float)(1.0 - float_short_decimal(cfg->top_p));
        double cum = 0.0;
        for (int r = 0; r < m - 1; r++) { /* the last (largest) always survives */
            const int j = s.ord[r];
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
    nan_to_neg_inf(logits, n);
    if (!cfg->do_sample) return argmax_first(logits, n);
    return warp_and_draw(logits, n, cfg, rng, scratch_carve(scratch, n));
}

int ct_sample_talker(float *logits, int n, const ct_sample_cfg *cfg, const uint8_t *seen,
                     int n_generated, int min_new_tokens, int eos_id, int suppress_lo,
                     int suppress_hi, ct_rng *rng, void *scratch) {
    if (!logits || !cfg || n <= 0 || !cfg_valid(cfg)) return -1;
    if (cfg->do_sample && (!rng || !scratch)) return -1;
    nan_to_neg_inf(logits, n);

    if (seen && cfg->repetition_penalty != 1.0f) {
        const float p = cfg->repetition_penalty;
        for (int i = 0; i < n; i++) {
            if (!seen[i]) continue;
            const float x = logits[i];
            logits[i] = x < 0.0f ? x * p : x / p;
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

    if (!cfg->do_sample) return argmax_first(logits, n);
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
