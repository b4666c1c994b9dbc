/* The manifest of the exported codec programs (docs/EXPORT.md, manifest): a versioned contract
   between `export codec` and the clients that run the programs. The writer records the codec
   id, context, hop, sample rate, the ramp and per program its chunk size, shapes, file and
   SHA-256; the reader checks every field against the others and every program file against
   its hash, and names what is wrong. */
#ifndef CT_EXPORT_CODEC_MANIFEST_H
#define CT_EXPORT_CODEC_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "export/export.h"

#define CT_MANIFEST_VERSION 1

typedef struct {
    int chunk_frames, window_frames, out_samples;
    char path[160];  /* file name inside the manifest's directory */
    char sha256[65]; /* of the .onnx file */
    int external;    /* 1: weights in data_path */
    char data_path[176];
    char data_sha256[65];
    uint64_t bytes, weight_bytes;
} ct_manifest_program;

typedef struct {
    int version;       /* CT_MANIFEST_VERSION */
    char codec_id[80]; /* ct_codec_id of the exported model */
    char model[512];   /* the model directory it was exported from (information) */
    int context_frames, num_quantizers, codebook_size, hop, sample_rate;
    int n_ramp, ramp[CT_EXPORT_MAX_PROGRAMS]; /* chunk schedule: ramp[i] for chunk i, the last repeats */
    int n_programs;
    ct_manifest_program programs[CT_EXPORT_MAX_PROGRAMS]; /* one per distinct ramp size */
} ct_codec_manifest;

/* Writes dir/manifest.json (through a temporary file and a rename) for m, whose program files
   must exist in dir: their SHA-256 sums are computed here. CT_ERR_IO naming the file. */
ct_status ct_codec_manifest_write(const char *dir, ct_codec_manifest *m, char *err, size_t errcap);

/* Reads and validates dir/manifest.json into *m: the version, every field's type and range,
   window_frames = context + chunk, out_samples = chunk * hop, the shapes, a program for every
   ramp size, plain file names; with check_files each program file (and its external data)
   must exist and match its SHA-256. CT_ERR_IO (missing file), CT_ERR_FORMAT (a field, a
   shape, a hash: the message names the program and both values), CT_ERR_UNSUPPORTED (another
   manifest version). */
ct_status ct_codec_manifest_read(const char *dir, int check_files, ct_codec_manifest *m, char *err, size_t errcap);

/* The same on manifest text[len] (need not be NUL-terminated) of directory dir, whose program
   files are checked when check_files is set (a fuzzer passes 0). */
ct_status ct_codec_manifest_parse(const char *text, size_t len, const char *dir, int check_files, ct_codec_manifest *m,
                                  char *err, size_t errcap);

/* The program that decodes n new frames: the smallest chunk size >= n; NULL when none is. */
const ct_manifest_program *ct_codec_manifest_program(const ct_codec_manifest *m, int n);

#endif
