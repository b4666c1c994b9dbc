/* The stream engine's private state (include/codectalk.h "the stream engine"): the engine,
   its stream slots, the streams, and the records the step stage hands to the codec stage.
   engine.c owns the scheduler loop; engine_stream.c the streams and the codec stage. */
#ifndef CT_STREAM_ENGINE_INTERNAL_H
#define CT_STREAM_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "codec/codec.h"
#include "codectalk.h"
#include "core/pool.h"
#include "model/session_internal.h"
#include "model/step.h"
#include "stream/metrics.h"
#include "stream/schedule.h"
#include "text/sentences.h"

#define CT_ENGINE_MAX_WINDOW 512 /* largest windowed-decode left context, frames */
#define CT_ENGINE_MAX_STREAMS 256 /* largest max_streams */
#define CT_ENGINE_COST_SAMPLES 8 /* measured frame periods of a batch size before they replace
                                    the prediction */
#define CT_ENGINE_PRIME_STATES 4 /* ICL decoder states kept after a reference (least recently
                                    used replaced; about 5 MB each for the published codec) */
#define CT_ENGINE_FRAMES_PER_BYTE 1.0 /* expected frames per byte of text: speech runs at about
                                         0.8 (15 characters a second at 12.5 Hz); rounded up */

/* What the step stage hands to the codec stage, in order. */
typedef enum {
    CT_REC_START = 0, /* an utterance begins: reset the slot's codec state for rec.st (ICL: primed
                         with the reference frames, their samples dropped) */
    CT_REC_FRAME = 1, /* one frame of codes */
    CT_REC_END = 2    /* the utterance ended (flush); last = 1: the stream's generation ended */
} ct_rec_kind;

typedef struct {
    ct_rec_kind kind;
    int slot, last;
    int step_end;                 /* FRAME: the last frame of its step (the codec stage then
                                     decodes the due chunks of the step's streams together) */
    ct_stream *st;
    double t;                     /* hand-off time, ms */
    int32_t codes[CT_MAX_GROUPS]; /* FRAME: [n_groups] */
} ct_rec;

/* A silence of left zero samples the reader gets when its position reaches at (a ring
   position): pauses take no ring space. */
typedef struct {
    uint64_t at;
    size_t left;
} ct_pause;

/* A stream slot: one stream's KV and codec state, reserved at create. */
typedef struct {
    int idx;
    ct_session *sess;     /* step stage: the talker/predictor state of the bound stream */
    /* bound stream (e->mu) */
    ct_stream *st;        /* NULL = free */
    int utt;              /* utterance generating */
    int prefill_due;      /* its prefill has not finished */
    int prefilling;       /* its prefill began (ct_session_begin) and has passes left: one runs
                             per scheduler pass, between the other streams' decode steps */
    double prefill_ms;    /* that prefill's busy time so far */
    int frames_left;      /* frames the utterance may still make */
    int utt_frames;       /* frames the utterance made */
    uint8_t voice[32];    /* the voice key of the last stream it prefilled (ct_stream.voice) */
    uint64_t used;        /* when it was last bound (e->slot_tick); 0: never */
    /* codec stage */
    ct_stream *cst;       /* stream the codec state below belongs to */
    ct_codec_stream *cs;  /* exact stateful decoder */
    ct_sched sched;
    int32_t *pend;        /* [max_chunk + 1][G] frames received, not decoded */
    int npend, produced;  /* pending frames; frames of the utterance received */
    int dirty;            /* frames came since its due chunks were last shipped */
    ct_sched_obs obs;     /* shipping: the observation its chunks are asked with */
    int rem, shipping;    /* shipping: frames left of the schedule's current chunk; chunks left */
    int32_t *hist;        /* [CT_ENGINE_MAX_WINDOW][G] windowed context, oldest first */
    int n_hist;
    float *pcm;           /* [max_chunk * spf] */
} ct_slot;

struct ct_stream {
    ct_engine *e;
    int refs;             /* caller + engine (e->mu) */
    int internal;         /* the warm-up stream: not counted, not the caller's */
    /* request (immutable after submit) */
    ct_gen_params g;      /* strings point at the copies below */
    char *text, *speaker, *language, *instruct;
    float *xvector;       /* [g.xvector_len] */
    int32_t *ref_codes;   /* ICL: [g.ref_frames][G] reference codes (prompt, and the codec's priming) */
    char *ref_text;       /* ICL: the reference transcript */
    char *utt_text;       /* [strlen(text) + 1] the utterance being prefilled */
    ct_span *utts;        /* [n_utts] */
    int n_utts;
    ct_pause *pauses;     /* [n_utts] silences between utterances, in ring order (e->mu) */
    int n_pauses, pause_rd; /* recorded; the next one the reader has not finished */
    int starts;           /* codec stage: utterances begun (the next START's index) */
    ct_stream_params p;
    ct_sched_params sp;
    /* state (e->mu) */
    ct_stream_state state;
    ct_status status;
    char err[512];
    int cancel;
    int inflight;         /* frames handed on whose output is not in the ring yet (per stream:
                             a slot may take a new stream before the codec stage is done) */
    int need;             /* frames until its next chunk is due (codec stage estimate) */
    int held;             /* CT_HELD_* reasons it was already counted as held back for */
    double *est;          /* [n_utts + 1] expected frames of utterances u.. (suffix sums) */
    uint8_t voice[32];    /* SHA-256 of what the prompt's leading rows come from (speaker, language,
                             instruction, x-vector, reference, layout): admission prefers a free
                             slot that last ran this voice, whose KV the prefill reuses */
    ct_stream *next;      /* admission queue link */
    pthread_cond_t cv;    /* output or state changed */
    /* output ring: [ring_cap] units of unit_bytes; [head, tail) readable (e->mu) */
    unsigned char *ring;
    size_t ring_cap, unit_bytes;
    int units_per_frame;  /* PCM: samples per frame; codes: 1 */
    uint64_t head, tail;
    double t_submit;      /* ct_now_ms() at submit */
    ct_stream_info info;
    ct_chunk_rec *tl;     /* [tl_cap] released chunks */
    int tl_n, tl_cap;
    /* incremental text (p.text_incremental; engine_text.c). utts[0..n_utts) are the closed
       utterances; the text after them is still open. */
    int incr;
    char *itext;          /* [itext_cap] the text appended so far, valid UTF-8 (e->mu) */
    size_t itext_len, itext_cap;
    unsigned char carry[4]; /* an incomplete UTF-8 sequence ending the last piece (e->mu) */
    int n_carry;
    int text_end;         /* ct_stream_end_text called (e->mu) */
    double t_text;        /* engine clock of the last piece or the end (e->mu) */
    int pump;             /* the engine thread has text work for it (e->mu) */
    int utts_cap;         /* engine thread from here on */
    char *etext;          /* [ecap] the engine thread's copy of itext */
    size_t elen, ecap;
    int eend;             /* the copy is the whole text */
    size_t closed_end;    /* end of the last closed utterance in etext */
    int open_utt;         /* 1: text after closed_end forms an utterance not closed yet */
    size_t open_off, open_lb; /* its start, and how far its tokens may be taken now */
    ct_span *ssp;         /* [ssp_cap] splitter scratch */
    size_t ssp_cap;
    int tok_utt;          /* the utterance tok[] belongs to (-1 none) */
    size_t tok_at;        /* etext offset up to which its tokens are taken */
    int32_t *tok;         /* [tok_cap] its tokens so far */
    int n_tok, tok_cap, tok_given, tok_final, tok_closed;
};

struct ct_engine {
    const ct_model *m;
    const ct_codec *codec;
    ct_engine_params p;   /* borrowed pointers cleared */
    int placement, talker_threads, codec_threads;
    int *tcpus, *ccpus;   /* owned copies */
    int n_tcpus, n_ccpus;
    int G, spf, rate;
    uint64_t kv_per_tok, kv_per_stream, kv_budget, kv_used;
    int n_slots;
    ct_slot *slots;       /* [n_slots] */
    ct_pool *pool;        /* the step (serial: everything) */
    ct_pool *cpool;       /* overlapped codec stage, codec_threads > 1; else NULL */
    ct_batch *batch;
    ct_session **bs;      /* [n_slots] step scratch */
    ct_prompt_group *prompts; /* every slot's session: a start copies another slot's prompt
                             positions (ct_session_join_prompts) */
    ct_slot **act;        /* [n_slots] */
    int32_t *bcodes;      /* [n_slots][G] */
    int *bgot;            /* [n_slots] */
    /* overlapped frame queue (e->mu) */
    ct_rec *q;            /* [q_cap] */
    int q_cap, q_head, q_n, codec_stop;
    pthread_cond_t cv_q_data, cv_q_space;
    pthread_t th, cth;
    int th_on, cth_on;
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* wakes the engine thread */
    int refs;             /* the handle + every live stream */
    int stop, ready;
    char ready_err[600];
    ct_stream *wq_head, *wq_tail; /* admission queue */
    int wq_len, n_active;
    atomic_int active_snapshot;   /* n_active for the codec stage's dynamic schedules */
    double defer_since;   /* NAN = not deferring */
    int holding;          /* the queue's head is held back by the compute rule or the throttle */
    double frame_ms;      /* audio ms of one frame */
    int prefill_chunk;    /* tokens per prefill pass */
    double pass_ms;       /* EWMA of one prefill pass (the first with its begin), wall ms: what
                             a running stream waits before each of its steps while a prompt runs */
    double period_ms[CT_ENGINE_MAX_STREAMS + 1]; /* EWMA of the step's wall ms per batch size */
    int period_n[CT_ENGINE_MAX_STREAMS + 1];     /* samples in it */
    atomic_int vclock_on; /* test clock (ct_engine_test_clock) */
    atomic_llong vclock_us;
    double v_fixed, v_per_stream, v_prefill;
    ct_engine_counters k; /* active/queued filled on read */
    /* ICL: decoder states after a reference (engine_stream.c), allocated on first use; the
       codec stage's thread only */
    struct {
        uint8_t key[32];  /* sha256 of the reference codes */
        int64_t pos;
        float *state;     /* [prime_floats] ct_codec_stream_state_save */
        uint64_t used;    /* prime_tick of the last use; 0 = empty */
    } prime[CT_ENGINE_PRIME_STATES];
    uint64_t prime_tick;
    uint64_t slot_tick;   /* admissions so far: ct_slot.used (e->mu) */
    size_t prime_floats;
};

enum { CT_HELD_KV = 1, CT_HELD_COMPUTE = 2 };

/* engine.c */
/* The engine's clock, ms (ct_now_ms unless a test set a virtual one). */
double ct_engine_now(const ct_engine *e);
/* Test hook: from the call on, the engine's clock is virtual. It stands still except that each
   batched step of n streams advances it by step_fixed_ms + step_per_stream_ms * n and each
   prefill pass by prefill_ms, and those are what the engine measures. Call before the first submit,
   with serial placement (the codec stage then runs inside the step). */
void ct_engine_test_clock(ct_engine *e, double step_fixed_ms, double step_per_stream_ms, double prefill_ms);
/* Test hook: the engine thread calls it right after a stream's text pump, before it takes the
   engine's lock again (a window in which a release or a failure signals a thread that is not
   waiting). NULL outside tests. */
extern void (*ct_engine_test_after_pump)(ct_engine *e);

/* engine_text.c (incremental text; the engine thread, no lock held) */
/* Takes the text appended to sl's stream: closes utterances, takes the tokens of the slot's
   utterance that can no longer change and hands them to its session. Returns 1 when the
   stream's text is used up (ended, nothing left to generate: the caller ends the slot), 0
   otherwise; fails the stream on an error. */
int ct_engine_text_pump(ct_engine *e, ct_slot *sl);
/* Makes s (being submitted, not shared yet) an incremental stream with text (NULL or "" = none
   yet) as its first piece; CT_ERR_INVALID_ARG (not UTF-8) with the message in err. */
ct_status ct_engine_text_first(ct_stream *s, const char *text, char *err, size_t errcap);
/* 1 when sl's due prefill has its first token (always for a whole-text stream). e->mu held. */
int ct_engine_text_prefill_ready(const ct_slot *sl);
/* The utterance just ended was the stream's last (incremental: the text has ended and nothing
   follows). Engine thread. */
int ct_engine_text_last_utt(const ct_slot *sl);

/* engine_stream.c */
/* Processes one record on the codec stage (serial: the engine thread; never with e->mu). */
/* 1 when a request submitted now would be refused (CT_ERR_LIMIT): the queue holds queue_cap
   beyond the slots that can start now (none while the head is held back; no more than the KV
   budget fits). Under e->mu. */
int ct_engine_full_locked(const ct_engine *e);

void ct_engine_take(ct_engine *e, const ct_rec *r);
/* Marks s failed with status st and msg (no-op when already ended) and counts it. e->mu held. */
void ct_stream_fail_locked(ct_stream *s, ct_status st, const char *msg);
/* Drops one reference (e->mu held); returns 1 when the engine itself must now be freed (the
   caller unlocks first, then calls ct_engine_core_free). */
int ct_stream_unref_locked(ct_stream *s);
/* Frees the engine's remaining core (mutex, conds, struct) after its last reference. */
void ct_engine_core_free(ct_engine *e);
/* Output units a stream can still take before its ring is full (e->mu held). */
size_t ct_stream_room_locked(const ct_stream *s);

#endif
