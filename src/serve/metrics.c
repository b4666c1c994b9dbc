/* /metrics (see metrics.h). */
#include "serve/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/sbuf.h"

static const double TTFA_B[CT_SRV_TTFA_BUCKETS] = {0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10};
static const double RTF_B[CT_SRV_RTF_BUCKETS] = {0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 5};
static const int STATUS[CT_SRV_STATUS_KINDS - 1] = {200, 400, 401, 404, 405, 408, 411, 413, 429, 431, 500, 501, 503};

void ct_srv_metrics_init(ct_srv_metrics *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    for (int i = 0; i < CT_SRV_STATUS_KINDS; i++) atomic_init(&m->status[i], 0);
}

void ct_srv_metrics_destroy(ct_srv_metrics *m) { pthread_mutex_destroy(&m->mu); }

void ct_srv_metrics_status(ct_srv_metrics *m, int http_status) {
    int i = 0;
    while (i < CT_SRV_STATUS_KINDS - 1 && STATUS[i] != http_status) i++;
    atomic_fetch_add(&m->status[i], 1);
}

static void hist_add(uint64_t *h, const double *b, int nb, double v) {
    int i = 0;
    while (i < nb && v > b[i]) i++;
    h[i]++;
}

void ct_srv_metrics_stream(ct_srv_metrics *m, const ct_stream_info *si, int sample_rate) {
    double ttfa = si->ttfa_ms / 1e3, audio = sample_rate > 0 ? (double)si->samples / sample_rate : 0;
    double rtf = audio > 0 ? si->done_ms / 1e3 / audio : NAN;
    pthread_mutex_lock(&m->mu);
    if (isfinite(ttfa)) {
        hist_add(m->ttfa, TTFA_B, CT_SRV_TTFA_BUCKETS, ttfa);
        m->ttfa_sum += ttfa;
        m->ttfa_n++;
    }
    if (si->state == CT_STREAM_DONE && isfinite(rtf)) {
        hist_add(m->rtf, RTF_B, CT_SRV_RTF_BUCKETS, rtf);
        m->rtf_sum += rtf;
        m->rtf_n++;
    }
    pthread_mutex_unlock(&m->mu);
}

static void metric(ct_sbuf *s, const char *name, const char *type, const char *help, double v) {
    ct_sbuf_printf(s, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

static void histo(ct_sbuf *s, const char *name, const char *help, const uint64_t *h, const double *b, int nb,
                  double sum, uint64_t n) {
    ct_sbuf_printf(s, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t acc = 0;
    for (int i = 0; i < nb; i++) {
        acc += h[i];
        ct_sbuf_printf(s, "%s_bucket{le=\"%g\"} %llu\n", name, b[i], (unsigned long long)acc);
    }
    acc += h[nb];
    ct_sbuf_printf(s, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.17g\n%s_count %llu\n", name, (unsigned long long)acc,
                   name, sum, name, (unsigned long long)n);
}

char *ct_srv_metrics_text(ct_srv_metrics *m, ct_engine *e) {
    ct_engine_counters k = ct_engine_get_counters(e);
    ct_engine_limits l = ct_engine_get_limits(e);
    ct_sbuf s;
    ct_sbuf_init(&s);
    metric(&s, "codectalk_ready", "gauge", "1 after warm-up", ct_engine_ready(e, NULL, 0) > 0 ? 1 : 0);
    metric(&s, "codectalk_streams_active", "gauge", "streams holding a slot", k.active);
    metric(&s, "codectalk_streams_max", "gauge", "stream slots", l.max_streams);
    metric(&s, "codectalk_requests_waiting", "gauge", "requests in the admission queue", k.queued);
    metric(&s, "codectalk_queue_capacity", "gauge", "admission queue size", l.queue_cap);
    metric(&s, "codectalk_requests_admitted_total", "counter", "requests given a stream slot", (double)k.admitted);
    metric(&s, "codectalk_requests_rejected_total", "counter", "requests refused with 503 (queue full)",
           (double)k.rejected);
    metric(&s, "codectalk_requests_queued_total", "counter", "requests that had to wait for a slot",
           (double)k.queued_total);
    metric(&s, "codectalk_requests_completed_total", "counter", "requests whose generation finished",
           (double)k.completed);
    metric(&s, "codectalk_requests_failed_total", "counter", "requests that failed", (double)k.failed);
    metric(&s, "codectalk_requests_cancelled_total", "counter", "requests cancelled (client gone)",
           (double)k.cancelled);
    metric(&s, "codectalk_requests_deferred_kv_total", "counter",
           "requests that waited at the queue's head for a slot (its KV)", (double)k.deferred_kv);
    metric(&s, "codectalk_requests_deferred_compute_total", "counter",
           "requests held back because one more stream would not keep up with playback", (double)k.deferred_compute);
    metric(&s, "codectalk_requests_timed_out_total", "counter",
           "requests failed by their deadline or first-audio timeout", (double)k.timed_out);
    metric(&s, "codectalk_prefill_deferrals_total", "counter",
           "scheduler passes on which a ready prefill was held back by the playback-slack throttle",
           (double)k.deferrals);
    metric(&s, "codectalk_prefill_forced_total", "counter", "prefills started after the longest deferral",
           (double)k.forced_admissions);
    metric(&s, "codectalk_underruns_total", "counter", "ring-buffer player stalls (engine clock)",
           (double)k.underruns);
    metric(&s, "codectalk_underrun_seconds_total", "counter", "total stall time", k.underrun_ms / 1e3);
    metric(&s, "codectalk_kv_bytes_in_use", "gauge", "worst-case talker KV reserved by admitted streams",
           (double)k.kv_bytes_in_use);
    metric(&s, "codectalk_kv_budget_bytes", "gauge", "talker KV budget", (double)l.kv_budget_bytes);
    metric(&s, "codectalk_icl_primes_total", "counter",
           "ICL utterances whose decoder was primed with the reference codes", (double)k.icl_primes);
    metric(&s, "codectalk_icl_prime_reuses_total", "counter",
           "ICL primes taken from a kept decoder state of the same reference", (double)k.icl_prime_reuses);
    metric(&s, "codectalk_prompt_positions_total", "counter", "prompt positions of every prefill",
           (double)k.prompt_positions);
    metric(&s, "codectalk_prompt_reused_positions_total", "counter",
           "prompt positions kept from the slot's previous prefill or copied from another slot's instead of run",
           (double)k.prompt_reused);
    metric(&s, "codectalk_prompt_shared_positions_total", "counter",
           "prompt positions copied from another slot's KV instead of run", (double)k.prompt_shared);
    metric(&s, "codectalk_prompt_cached_positions_total", "counter",
           "prompt positions copied from the prompt cache instead of run", (double)k.prompt_cached);
    metric(&s, "codectalk_audio_seconds_total", "counter", "audio produced", k.audio_s);
    metric(&s, "codectalk_steps_total", "counter", "batched decode steps", (double)k.steps);
    metric(&s, "codectalk_step_seconds", "gauge", "EWMA of one batched decode step (all streams)", k.step_ms / 1e3);
    metric(&s, "codectalk_prefill_seconds", "gauge", "EWMA of one prefill", k.prefill_ms / 1e3);
    metric(&s, "codectalk_write_timeouts_total", "counter",
           "streams cancelled because the client took no bytes for --write-timeout", (double)atomic_load(&m->write_timeouts));
    metric(&s, "codectalk_header_timeouts_total", "counter",
           "connections closed without a complete request header in --header-timeout",
           (double)atomic_load(&m->header_timeouts));
    metric(&s, "codectalk_body_timeouts_total", "counter",
           "connections closed without a complete request body in --timeout", (double)atomic_load(&m->body_timeouts));
    metric(&s, "codectalk_connections_refused_total", "counter",
           "connections refused (per-address limit, or every connection taken)", (double)atomic_load(&m->conn_refused));
    pthread_mutex_lock(&m->mu);
    histo(&s, "codectalk_ttfa_seconds", "submission to first audio", m->ttfa, TTFA_B, CT_SRV_TTFA_BUCKETS,
          m->ttfa_sum, m->ttfa_n);
    histo(&s, "codectalk_rtf", "wall time from submission to end over audio duration", m->rtf, RTF_B,
          CT_SRV_RTF_BUCKETS, m->rtf_sum, m->rtf_n);
    pthread_mutex_unlock(&m->mu);
    ct_sbuf_printf(&s, "# HELP codectalk_http_responses_total HTTP responses by status\n"
                       "# TYPE codectalk_http_responses_total counter\n");
    for (int i = 0; i < CT_SRV_STATUS_KINDS; i++) {
        unsigned long long v = atomic_load(&m->status[i]);
        if (i == CT_SRV_STATUS_KINDS - 1)
            ct_sbuf_printf(&s, "codectalk_http_responses_total{code=\"other\"} %llu\n", v);
        else
            ct_sbuf_printf(&s, "codectalk_http_responses_total{code=\"%d\"} %llu\n", STATUS[i], v);
    }
    if (!ct_sbuf_ok(&s)) {
        ct_sbuf_free(&s);
        return NULL;
    }
    return s.data; /* owned by the caller now */
}
