/* Speaking rate without a pitch change (the OpenAI `speed` parameter, 0.25-4.0): a streaming
   time-stretch through libsonic (Debian's libsonic0). Speed 1 is never processed: callers skip
   it, so normal-speed audio stays exactly the engine's. */
#ifndef CT_AUDIO_SPEED_H
#define CT_AUDIO_SPEED_H

#include <stddef.h>

#include "core/status.h"

#define CT_SPEED_MIN 0.25f
#define CT_SPEED_MAX 4.0f

typedef struct ct_speed ct_speed;

/* A mono stretcher at rate Hz playing speed times faster. CT_ERR_INVALID_ARG naming the range
   for a speed outside [0.25, 4] (or not finite); CT_ERR_NOMEM. */
ct_status ct_speed_create(int rate, float speed, ct_speed **out, char *err, size_t errcap);

/* Pushes n samples in (flush = 1: no more will come, let everything out) and pulls up to cap
   stretched samples into out; *n_out = how many. Call again with n = 0 while *n_out == cap to
   drain. CT_ERR_NOMEM when libsonic cannot grow its buffers. */
ct_status ct_speed_run(ct_speed *s, const float *pcm, size_t n, int flush, float *out, size_t cap, size_t *n_out,
                       char *err, size_t errcap);

void ct_speed_free(ct_speed *s);

#endif
