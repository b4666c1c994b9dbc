/* One released chunk of a stream's output as its reader saw it, the record the playback
   metrics (stream/metrics.h), calibration (edge/calibrate.h) and bench summaries share. */
#ifndef CT_STREAM_CHUNK_H
#define CT_STREAM_CHUNK_H

#include <stdint.h>

/* Arrival time (ms since the request was sent or submitted) and samples carried (0 for a
   chunk with no audio). */
typedef struct {
    double t_ms;
    int64_t samples;
} ct_chunk_rec;

#endif
