/* Incremental text of the stream engine (ct_stream_params.text_incremental): the appended text
   (validated UTF-8, split sequences carried over), utterances closed by the sentence splitter
   as the text arrives, and the tokens of the utterance a slot generates taken as soon as more
   text cannot change them. docs/STREAMING.md "Incremental text". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/engine_internal.h"
#include "text/bpe.h"

#define CT_TEXT_MAX_BYTES ((size_t)64 << 20) /* text one stream may append */

/* Grows *p (elements of size el) to hold need; 0 on out of memory. */
static int grow(void **p, size_t *cap, size_t need, size_t el) {
    if (need <= *cap) return 1;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * el);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

/* Length of the UTF-8 sequence a lead byte starts (0: not a lead byte). */
static int seq_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

/* Whether b[0..n) (n = seq_len(b[0])) is a valid sequence: continuation bytes, no overlong
   form, surrogate or code point above U+10FFFF. A prefix (k < n bytes) is checked as far as it
   goes. */
static int seq_ok(const unsigned char *b, int k) {
    for (int i = 1; i < k; i++)
        if ((b[i] & 0xC0) != 0x80) return 0;
    if (k >= 2) {
        if (b[0] == 0xE0 && b[1] < 0xA0) return 0;
        if (b[0] == 0xED && b[1] > 0x9F) return 0;
        if (b[0] == 0xF0 && b[1] < 0x90) return 0;
        if (b[0] == 0xF4 && b[1] > 0x8F) return 0;
    }
    return 1;
}

/* Appends bytes to s->itext (e->mu held). */
static ct_status put(ct_stream *s, const unsigned char *b, size_t n) {
    if (s->itext_len + n + 1 > CT_TEXT_MAX_BYTES) return CT_ERR_LIMIT;
    if (!grow((void **)&s->itext, &s->itext_cap, s->itext_len + n + 1, 1)) return CT_ERR_NOMEM;
    memcpy(s->itext + s->itext_len, b, n);
    s->itext_len += n;
    s->itext[s->itext_len] = 0;
    return CT_OK;
}

static int ended(const ct_stream *s) { return s->state == CT_STREAM_DONE || s->state == CT_STREAM_FAILED; }

/* Refuses a call on a stream that cannot take text (e->mu held); CT_OK when it can. */
static ct_status can_take(const ct_stream *s) {
    if (!s->incr || s->text_end) return CT_ERR_STATE;
    if (ended(s)) return s->status != CT_OK ? s->status : CT_ERR_STATE;
    return CT_OK;
}

/* Appends a piece (e->mu held); on bad bytes msg says why (the caller fails the stream). */
static ct_status append_locked(ct_stream *s, const unsigned char *p, size_t len, char *msg, size_t cap) {
    const uint64_t base = s->itext_len + (uint64_t)s->n_carry; /* offset of p[0] in the whole text */
    ct_status st = CT_OK;
    size_t i = 0, from = 0;
    if (s->n_carry) { /* finish the sequence the last piece split */
        int need = seq_len(s->carry[0]);
        while (s->n_carry < need && i < len) s->carry[s->n_carry++] = p[i++];
        if (!seq_ok(s->carry, s->n_carry))
            return ct_errf(msg, cap, CT_ERR_INVALID_ARG, "text: invalid UTF-8 at byte %zu (a sequence split "
                           "across pieces)", s->itext_len);
        if (s->n_carry < need) return CT_OK; /* still incomplete */
        st = put(s, s->carry, (size_t)need);
        s->n_carry = 0;
        from = i;
    }
    while (st == CT_OK && i < len) {
        int k = seq_len(p[i]);
        size_t have = len - i < (size_t)k ? len - i : (size_t)k;
        if (p[i] == 0 || k == 0 || !seq_ok(p + i, (int)have))
            return ct_errf(msg, cap, CT_ERR_INVALID_ARG, "text: %s at byte %llu (0x%02x)",
                           p[i] == 0 ? "a NUL byte" : "invalid UTF-8", (unsigned long long)(base + i), p[i]);
        if (have < (size_t)k) { /* split sequence: carried to the next piece */
            st = put(s, p + from, i - from);
            if (st == CT_OK) {
                memcpy(s->carry, p + i, have);
                s->n_carry = (int)have;
                return CT_OK;
            }
            break;
        }
        i += (size_t)k;
    }
    if (st == CT_OK) st = put(s, p + from, len - from);
    if (st == CT_ERR_LIMIT)
        return ct_errf(msg, cap, st, "text: over %zu MiB appended", CT_TEXT_MAX_BYTES >> 20);
    if (st != CT_OK) return ct_errf(msg, cap, st, "text: out of memory");
    return CT_OK;
}

ct_status ct_stream_append_text(ct_stream *s, const char *utf8, size_t len) {
    if (!s || (!utf8 && len)) return CT_ERR_INVALID_ARG;
    ct_engine *e = s->e;
    char msg[200];
    pthread_mutex_lock(&e->mu);
    ct_status st = can_take(s);
    if (st == CT_OK) {
        st = append_locked(s, (const unsigned char *)utf8, len, msg, sizeof msg);
        if (st != CT_OK) ct_stream_fail_locked(s, st, msg);
    }
    if (st == CT_OK) {
        s->t_text = ct_engine_now(e);
        s->pump = 1;
        pthread_cond_signal(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    return st;
}

ct_status ct_stream_end_text(ct_stream *s) {
    if (!s) return CT_ERR_INVALID_ARG;
    ct_engine *e = s->e;
    pthread_mutex_lock(&e->mu);
    ct_status st = can_take(s);
    if (st == CT_OK && s->n_carry) {
        char msg[160];
        snprintf(msg, sizeof msg, "text: ends inside a UTF-8 sequence at byte %zu", s->itext_len);
        ct_stream_fail_locked(s, CT_ERR_INVALID_ARG, msg);
        st = CT_ERR_INVALID_ARG;
    }
    if (st == CT_OK) {
        s->text_end = 1;
        s->t_text = ct_engine_now(e);
        s->pump = 1;
        pthread_cond_signal(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    return st;
}

ct_status ct_engine_text_first(ct_stream *s, const char *text, char *err, size_t errcap) {
    s->incr = 1;
    s->tok_utt = -1;
    s->pump = 1;
    if (!text || !text[0]) return CT_OK;
    char msg[200];
    ct_status st = append_locked(s, (const unsigned char *)text, strlen(text), msg, sizeof msg);
    if (st != CT_OK) return ct_errf(err, errcap, st, "submit: %s", msg);
    return CT_OK;
}

int ct_engine_text_prefill_ready(const ct_slot *sl) {
    const ct_stream *s = sl->st;
    return !s->incr || (s->tok_utt == sl->utt && s->n_tok > 0);
}

int ct_engine_text_last_utt(const ct_slot *sl) {
    const ct_stream *s = sl->st;
    if (!s->incr) return sl->utt + 1 >= s->n_utts;
    return s->eend && !s->open_utt && sl->utt + 1 >= s->n_utts;
}

/* Fails the stream (no lock held). */
static void fail(ct_engine *e, ct_stream *s, ct_status st, const char *msg) {
    pthread_mutex_lock(&e->mu);
    ct_stream_fail_locked(s, st, msg);
    pthread_mutex_unlock(&e->mu);
}

/* Tokenizes etext[a..b) onto s->tok. */
static ct_status take_tokens(ct_engine *e, ct_stream *s, size_t a, size_t b, char *err, size_t errcap) {
    size_t n = 0;
    char inner[300];
    const ct_bpe *tok = e->m->tok;
    ct_status st = ct_bpe_encode(tok, s->etext + a, b - a, NULL, 0, &n, inner, sizeof inner);
    if (st != CT_OK && st != CT_ERR_LIMIT) return ct_errf(err, errcap, st, "text: %s", inner);
    if ((size_t)s->n_tok + n > (size_t)e->p.max_context)
        return ct_errf(err, errcap, CT_ERR_LIMIT, "text: utterance %d has over %zu tokens, more than the context "
                       "of %d positions", s->tok_utt + 1, (size_t)s->n_tok + n, e->p.max_context);
    size_t cap = (size_t)s->tok_cap;
    if (!grow((void **)&s->tok, &cap, (size_t)s->n_tok + n + 1, sizeof(int32_t)))
        return ct_errf(err, errcap, CT_ERR_NOMEM, "text: out of memory");
    s->tok_cap = (int)cap;
    st = ct_bpe_encode(tok, s->etext + a, b - a, s->tok + s->n_tok, n, &n, inner, sizeof inner);
    if (st != CT_OK) return ct_errf(err, errcap, st, "text: %s", inner);
    s->n_tok += (int)n;
    return CT_OK;
}

/* Closes the utterances the splitter can no longer change and finds the open one's extent. */
static ct_status split(ct_engine *e, ct_stream *s, char *err, size_t errcap) {
    const size_t base = s->closed_end, rest = s->elen - base;
    const int whole = s->p.utterance_bytes <= 0;
    const size_t max = whole ? rest + 1 : (size_t)s->p.utterance_bytes;
    size_t ns = ct_split_utterances(s->etext + base, rest, max, NULL, 0);
    if (!grow((void **)&s->ssp, &s->ssp_cap, ns + 1, sizeof(ct_span))) goto oom;
    ns = ct_split_utterances(s->etext + base, rest, max, s->ssp, ns);
    size_t close = s->eend ? ns : ns >= 3 ? ns - 2 : 0; /* two more after it: its end is decided */
    size_t cap = (size_t)s->utts_cap;
    if (!grow((void **)&s->utts, &cap, (size_t)s->n_utts + close + 1, sizeof(ct_span))) goto oom;
    s->utts_cap = (int)cap;
    for (size_t i = 0; i < close; i++) {
        s->utts[s->n_utts + (int)i] = s->ssp[i];
        s->utts[s->n_utts + (int)i].off += base;
        s->closed_end = base + s->ssp[i].off + s->ssp[i].len;
    }
    int n_utts = s->n_utts + (int)close;
    s->open_utt = ns > close;
    if (s->open_utt) {
        size_t off = base + s->ssp[close].off, len = s->ssp[close].len;
        s->open_off = off;
        s->open_lb = off + len;
        if (!whole) { /* it may still end after its second-to-last sentence */
            size_t m = ct_split_sentences(s->etext + off, len, max, NULL, 0);
            if (!grow((void **)&s->ssp, &s->ssp_cap, m + 1, sizeof(ct_span))) goto oom;
            m = ct_split_sentences(s->etext + off, len, max, s->ssp, m);
            if (m >= 2) s->open_lb = off + s->ssp[m - 2].off + s->ssp[m - 2].len;
        }
    }
    /* expected frames per utterance (admission, Retry-After) and the timeline's room */
    int known = n_utts + s->open_utt, n_est = known > s->info.utterance + 1 ? known : s->info.utterance + 1;
    double *est = malloc(sizeof(double) * (size_t)(n_est + 2));
    int tl_cap = (known + 1) * (e->p.max_context + 1);
    if (!est) goto oom;
    est[n_est] = est[n_est + 1] = 0;
    for (int u = n_est - 1; u >= 0; u--) {
        double bytes = u < n_utts ? (double)s->utts[u].len : u == n_utts && s->open_utt ? (double)(s->elen - s->open_off) : 0;
        double f = bytes * CT_ENGINE_FRAMES_PER_BYTE;
        if (f > e->p.max_context) f = e->p.max_context;
        est[u] = est[u + 1] + (f < 1 ? 1 : f);
    }
    pthread_mutex_lock(&e->mu);
    free(s->est);
    s->est = est;
    s->n_utts = n_utts;
    s->info.utterances = known;
    int ok = 1;
    if (tl_cap > s->tl_cap) {
        ct_chunk_rec *tl = realloc(s->tl, sizeof(ct_chunk_rec) * (size_t)tl_cap);
        if (tl) s->tl = tl, s->tl_cap = tl_cap;
        else ok = 0;
    }
    pthread_mutex_unlock(&e->mu);
    if (ok) return CT_OK;
oom:
    return ct_errf(err, errcap, CT_ERR_NOMEM, "text: out of memory");
}

int ct_engine_text_pump(ct_engine *e, ct_slot *sl) {
    ct_stream *s = sl->st;
    char err[600];
    pthread_mutex_lock(&e->mu);
    s->pump = 0;
    int dead = ended(s) || s->cancel, oom = 0;
    size_t add = s->itext_len - s->elen;
    if (!dead && add) {
        if (grow((void **)&s->etext, &s->ecap, s->itext_len + 1, 1)) {
            memcpy(s->etext + s->elen, s->itext + s->elen, add);
            s->elen += add;
            s->etext[s->elen] = 0;
        } else {
            oom = 1;
        }
    }
    s->eend = s->text_end && !oom;
    int utt = sl->utt, prefill_due = sl->prefill_due;
    pthread_mutex_unlock(&e->mu);
    if (dead) return 0;
    ct_status st = oom ? ct_errf(err, sizeof err, CT_ERR_NOMEM, "text: out of memory") : split(e, s, err, sizeof err);
    /* tokens of the slot's utterance: all of a closed one, the stable part of the open one */
    if (st == CT_OK && s->tok_utt != utt && utt <= s->n_utts && (utt < s->n_utts || s->open_utt)) {
        s->tok_utt = utt;
        s->n_tok = s->tok_given = s->tok_final = s->tok_closed = 0;
        s->tok_at = utt < s->n_utts ? s->utts[utt].off : s->open_off;
    }
    if (st == CT_OK && s->tok_utt == utt && !s->tok_final) {
        if (utt < s->n_utts) {
            size_t end = s->utts[utt].off + s->utts[utt].len;
            if (end > s->tok_at) st = take_tokens(e, s, s->tok_at, end, err, sizeof err);
            s->tok_at = end;
            s->tok_final = 1;
        } else if (s->open_lb > s->tok_at) {
            size_t b = 0;
            char inner[300];
            st = ct_bpe_stable_prefix(e->m->tok, s->etext + s->tok_at, s->open_lb - s->tok_at, &b, inner, sizeof inner);
            if (st != CT_OK) ct_errf(err, sizeof err, st, "text: %s", inner);
            else if (b > 0) {
                st = take_tokens(e, s, s->tok_at, s->tok_at + b, err, sizeof err);
                s->tok_at += b;
            }
        }
    }
    /* a running utterance gets its new rows (the prefill takes the first ones itself) */
    if (st == CT_OK && s->tok_utt == utt && !prefill_due) {
        int more = s->n_tok - s->tok_given;
        if (more > 0) st = ct_session_text_more(sl->sess, s->tok + s->tok_given, more);
        s->tok_given = s->n_tok;
        if (st != CT_OK) snprintf(err, sizeof err, "%s", ct_session_errmsg(sl->sess));
        else if (s->tok_final && !s->tok_closed) ct_session_text_close(sl->sess);
        s->tok_closed = s->tok_final;
        pthread_mutex_lock(&e->mu);
        s->info.text_tokens += more > 0 ? more : 0;
        ct_run_info ri = ct_session_run_info(sl->sess);
        sl->frames_left = ri.frame_limit - ri.frames;
        pthread_mutex_unlock(&e->mu);
    }
    if (st != CT_OK) {
        fail(e, s, st, err);
        return 0;
    }
    if (s->eend && prefill_due && utt >= s->n_utts) { /* nothing left to say */
        if (s->n_utts == 0) fail(e, s, CT_ERR_INVALID_ARG, "text: the text is empty");
        return 1;
    }
    return 0;
}
