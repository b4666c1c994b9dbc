/* Fuzz target: arbitrary bytes as an `export codec` manifest.json (docs/EXPORT.md). The reader
   must never crash; an accepted manifest must satisfy every rule it enforces (windows follow
   from context and chunk, outputs from chunk and hop, a program for every ramp size, plain file
   names, hex hashes); a refused one must carry a message. Program files are not opened. */
#include <stdint.h>
#include <string.h>

#include "export/codec_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_codec_manifest m;
    char err[512] = "";
    ct_status st = ct_codec_manifest_parse((const char *)data, size, "/nonexistent", 0, &m, err, sizeof err);
    if (st != CT_OK) {
        if (!err[0] || m.version != 0) __builtin_trap();
        return 0;
    }
    if (m.version != CT_MANIFEST_VERSION || m.n_ramp < 1 || m.n_ramp > CT_EXPORT_MAX_PROGRAMS || m.n_programs < 1 ||
        m.n_programs > CT_EXPORT_MAX_PROGRAMS || strncmp(m.codec_id, "sha256:", 7) != 0 || strlen(m.codec_id) != 71)
        __builtin_trap();
    for (int i = 0; i < m.n_programs; i++) {
        const ct_manifest_program *p = &m.programs[i];
        if (p->window_frames != m.context_frames + p->chunk_frames || p->out_samples != p->chunk_frames * m.hop ||
            strchr(p->path, '/') || strlen(p->sha256) != 64 || (p->external && strchr(p->data_path, '/')))
            __builtin_trap();
    }
    for (int i = 0; i < m.n_ramp; i++) {
        const ct_manifest_program *p = ct_codec_manifest_program(&m, m.ramp[i]);
        if (!p || p->chunk_frames < m.ramp[i]) __builtin_trap();
    }
    return 0;
}
