/* Shared by the fuzz targets that tokenize: the Qwen3 tokenizer of assets/, loaded once per
   process (NULL when it cannot be loaded; the assets are part of the tree, so callers trap). */
#ifndef CT_FUZZ_TOKENIZER_ASSET_H
#define CT_FUZZ_TOKENIZER_ASSET_H

#include "text/bpe.h"

#ifndef CT_SRC_DIR
#define CT_SRC_DIR "."
#endif

static ct_bpe *tokenizer(void) {
    static ct_bpe *tok;
    static int tried;
    if (!tried) {
        tried = 1;
        char err[512];
        if (ct_bpe_load(CT_SRC_DIR "/assets/qwen3-tokenizer", &tok, err, sizeof err) != CT_OK) tok = NULL;
    }
    return tok;
}

#endif
