/* Prompt builder: the talker prefill layouts of docs/MODEL_PATH.md "Prompt" (CustomVoice, VoiceDesign,
   Base x-vector; streaming-text and non-streaming bodies) and the two ICL voice-clone layouts
   (docs/CLONING.md "ICL and x-vector-only modes"). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "model/session_internal.h"

/* Appends "a, b, c" of all names to buf. */
static void list_names(const ct_named_id *a, int n, const char *extra, char *buf, size_t cap) {
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < n && off + 2 < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", a[i].name);
    if (extra && off + 2 < cap) snprintf(buf + off, cap - off, "%s%s", n ? ", " : "", extra);
}

static ct_status tokenize(ct_session *s, const char *str, int32_t *ids, size_t cap, size_t *n) {
    char inner[512];
    ct_status st = ct_bpe_encode(s->m->tok, str, strlen(str), ids, cap, n, inner, sizeof inner);
    if (st == CT_ERR_LIMIT)
        return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: text of %zu tokens does not "
                       "fit the session context of %d positions", *n, s->cap);
    if (st != CT_OK) return ct_errf(s->err, sizeof s->err, st, "prompt: %s", inner);
    return CT_OK;
}

/* Text embeddings (text_embedding -> fc1 -> SiLU -> fc2) of ids[n] into out[n][H], batched
   over the session pool in chunks of the talker scratch (weights read once per chunk; the
   kernels' per-token arithmetic does not depend on the batch, so every row equals
   ct_embed_text of its id). */
void ct_embed_text_rows(ct_session *s, const int32_t *ids, int n, float *out) {
    const ct_model *m = s->m;
    const int TH = m->cfg.text_hidden, H = m->cfg.talker.hidden;
    ct_stack_scratch *sc = &s->ts;
    if (!sc->pool || sc->n_max < 1 || m->cfg.talker.ffn < TH) {
        for (int i = 0; i < n; i++) ct_embed_text(m, ids[i], out + (size_t)i * H, s->etmp);
        return;
    }
    for (int t0 = 0; t0 < n; t0 += sc->n_max) {
        const int k = n - t0 < sc->n_max ? n - t0 : sc->n_max;
        float *a = sc->g, *b = sc->u; /* [k][TH] each, free outside the stack forward */
        for (int i = 0; i < k; i++) ct_mat_row(&m->text_emb, ids[t0 + i], a + (size_t)i * TH);
        ct_matmul_pool(sc->pool, &m->tp_fc1, m->tp_b1, a, b, k);
        for (size_t i = 0; i < (size_t)k * TH; i++) b[i] = b[i] / (1.0f + expf(-b[i]));
        ct_matmul_pool(sc->pool, &m->tp_fc2, m->tp_b2, b, out + (size_t)t0 * H, k);
    }
}

/* Text rows [a, b) of the ICL text items X = [R_1..R_nr, T_1..T_nt, tts_eos] into out[b-a][H]. */
static void embed_icl_text(ct_session *s, const int32_t *R, int nr, const int32_t *T, int nt, int a, int b,
                           float *out) {
    const int H = s->m->cfg.talker.hidden;
    int lo = a, hi = b < nr ? b : nr; /* reference transcript part */
    if (lo < hi) ct_embed_text_rows(s, R + lo, hi - lo, out), out += (size_t)(hi - lo) * H;
    lo = a > nr ? a : nr, hi = b < nr + nt ? b : nr + nt; /* target text part */
    if (lo < hi) ct_embed_text_rows(s, T + (lo - nr), hi - lo, out), out += (size_t)(hi - lo) * H;
    if (a <= nr + nt && b > nr + nt) ct_embed_text_rows(s, &s->m->cfg.tts_eos, 1, out);
}

/* Adds the embedding of one reference frame codes[n_groups] (codebook 0 through the talker's
   codec table, g >= 1 through the predictor's, as decode feedback) to out[H]. */
static void add_ref_frame(const ct_model *m, const int32_t *codes, float *out) {
    ct_embed_codec_add(m, codes[0], out);
    for (int g = 1; g < m->cfg.n_groups; g++) ct_embed_group_add(m, g, codes[g], out);
}

/* Checks the ICL fields of g (ref_codes / ref_frames / ref_text); *icl = 1 when they ask for ICL. */
static ct_status check_icl(ct_session *s, const ct_gen_params *g, int *icl) {
    const ct_config *c = &s->m->cfg;
    *icl = g->ref_codes != NULL || g->ref_frames != 0;
    if (!*icl) {
        if (g->ref_text)
            return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: ref_text without ref_codes: ICL "
                           "needs both (the reference clip's codes and its transcript); x-vector-only mode "
                           "takes neither");
        return CT_OK;
    }
    if (c->kind != CT_KIND_BASE)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: reference codes (ICL voice cloning) "
                       "are only accepted by Base models, this one is %s", ct_model_kind_name(c->kind));
    if (!g->ref_codes || g->ref_frames < 1)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: ref_frames %d with %s ref_codes: "
                       "ICL needs both, ref_frames >= 1", g->ref_frames, g->ref_codes ? "" : "no");
    if (g->ref_frames > s->cap)
        return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: %d reference frames do not fit the "
                       "session context of %d positions", g->ref_frames, s->cap);
    if (!g->xvector)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: ICL (ref_codes) needs the "
                       "reference clip's x-vector too (xvector)");
    if (!g->ref_text || !g->ref_text[0])
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: ICL needs the reference "
                       "transcript; use x-vector-only mode without ref_codes");
    const int G = c->n_groups, V = c->pred.vocab;
    for (int f = 0; f < g->ref_frames; f++)
        for (int k = 0; k < G; k++) {
            int32_t v = g->ref_codes[(size_t)f * G + k];
            if (v < 0 || v >= V)
                return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: reference code %d at frame "
                               "%d, group %d is outside [0, %d)", (int)v, f, k, V);
        }
    return CT_OK;
}

ct_status ct_prompt_build(ct_session *s, const ct_gen_params *g) {
    const ct_model *m = s->m;
    const ct_config *c = &m->cfg;
    const int H = c->talker.hidden;
    char names[1024];
    if (!s->text_ids && (!g->text || !g->text[0]))
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: text is empty");

    /* speaker / language / instruct rules per model kind */
    const ct_named_id *spk = NULL;
    if (c->kind == CT_KIND_CUSTOM_VOICE) {
        if (!g->speaker || !g->speaker[0]) {
            list_names(c->speakers, c->n_speakers, NULL, names, sizeof names);
            return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: this CustomVoice "
                           "model needs a speaker; valid speakers: %s", names);
        }
        spk = ct_config_find_speaker(c, g->speaker);
        if (!spk) {
            list_names(c->speakers, c->n_speakers, NULL, names, sizeof names);
            return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: unknown speaker "
                           "'%s'; valid speakers: %s", g->speaker, names);
        }
    } else if (g->speaker && g->speaker[0]) {
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: a %s model has no named "
                       "speakers (got '%s')", ct_model_kind_name(c->kind), g->speaker);
    }
    if (g->xvector) {
        if (c->kind != CT_KIND_BASE)
            return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: an x-vector is only "
                           "accepted by Base models, this one is %s", ct_model_kind_name(c->kind));
        if (g->xvector_len != H)
            return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: x-vector has %d "
                           "values, the talker hidden size is %d", g->xvector_len, H);
    }
    int icl = 0;
    ct_status st = check_icl(s, g, &icl);
    if (st != CT_OK) return st;
    int has_instruct = g->instruct && g->instruct[0];
    if (c->kind == CT_KIND_VOICE_DESIGN && !has_instruct)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: a VoiceDesign model needs "
                       "an instruction describing the voice");
    if (has_instruct && c->kind == CT_KIND_BASE)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: Base models take no "
                       "instruction");
    if (has_instruct && c->kind == CT_KIND_CUSTOM_VOICE && strcmp(c->size_tag, "0b6") == 0)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: 0.6B CustomVoice models "
                       "do not support instructions (the reference ignores them)");
    int lang_id = -1;
    const char *lang = g->language;
    if (lang && lang[0] && strcasecmp(lang, "auto") != 0) {
        const ct_named_id *L = ct_config_find_lang(c, lang);
        if (!L) {
            list_names(c->langs, c->n_langs, "auto", names, sizeof names);
            return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: unknown language "
                           "'%s'; valid languages: %s", lang, names);
        }
        lang_id = L->id;
    }
    /* dialect override: chinese or auto + a dialect speaker */
    if (spk && spk->dialect[0]) {
        const ct_named_id *zh = ct_config_find_lang(c, "chinese");
        if (lang_id < 0 || (zh && lang_id == zh->id)) {
            const ct_named_id *d = ct_config_find_lang(c, spk->dialect);
            if (d) lang_id = d->id;
        }
    }
    int non_streaming = g->non_streaming;
    if (non_streaming < 0) non_streaming = s->text_open ? 0 : c->kind != CT_KIND_BASE;
    if (s->text_open && icl)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: incremental text does not take an "
                       "ICL reference (ref_codes); use an x-vector-only voice");
    if (non_streaming && s->text_open)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: incremental text needs the "
                       "streaming-text layout (non_streaming 0 or -1)");

    /* target text tokens: <|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n */
    size_t tl = s->text_ids ? 0 : strlen(g->text);
    static const char pre[] = "<|im_start|>assistant\n", post[] = "<|im_end|>\n<|im_start|>assistant\n";
    if (tl > (size_t)s->cap * 64)
        return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: text of %zu bytes cannot fit "
                       "the session context of %d positions", tl, s->cap);
    char *full = (char *)s->trailing; /* borrow: trailing rows are rebuilt below */
    size_t full_cap = (size_t)s->cap * H * sizeof(float);
    if (sizeof pre + tl + sizeof post > full_cap)
        return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: text too long");
    memcpy(full, pre, sizeof pre - 1);
    if (tl) memcpy(full + sizeof pre - 1, g->text, tl);
    memcpy(full + sizeof pre - 1 + tl, post, sizeof post);
    size_t idcap = (size_t)s->cap + 64, n = 0;
    const int32_t role[3] = {c->im_start, c->assistant, 198};
    const int32_t tail[5] = {c->im_end, 198, c->im_start, c->assistant, 198};
    if (s->text_ids) { /* tokens given (incremental text): the same id layout as tokenizing */
        if (s->text_n < 1 || (size_t)s->text_n + 8 > idcap)
            return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: %d text tokens do not fit the "
                           "session context of %d positions", s->text_n, s->cap);
        n = (size_t)s->text_n + 8;
        memcpy(s->ids, role, sizeof role);
        memcpy(s->ids + 3, s->text_ids, sizeof(int32_t) * (size_t)s->text_n);
        memcpy(s->ids + n - 5, tail, sizeof tail);
    } else {
        st = tokenize(s, full, s->ids, idcap, &n);
        if (st != CT_OK) return st;
    }
    const int32_t *ids = s->ids;
    if (n < 9 || memcmp(ids, role, sizeof role) != 0 || memcmp(ids + n - 5, tail, sizeof tail) != 0)
        return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: the text merges with the "
                       "chat template around it (does it start or end with a newline?)");
    int N = (int)n - 8;
    s->text_tokens = N;

    /* instruction tokens come first; tokenize them after the target (ids buffer reuse) */
    int n_instr = 0;
    int32_t *iids = s->ids + n;
    size_t icap = idcap > n ? idcap - n : 0;
    if (has_instruct) {
        size_t il = strlen(g->instruct);
        static const char ipre[] = "<|im_start|>user\n", ipost[] = "<|im_end|>\n";
        if (sizeof ipre + il + sizeof ipost > full_cap)
            return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: instruction too long");
        char *ibuf = full + sizeof pre + tl + sizeof post;
        if ((size_t)(ibuf - full) + sizeof ipre + il + sizeof ipost > full_cap)
            return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: instruction too long");
        memcpy(ibuf, ipre, sizeof ipre - 1);
        memcpy(ibuf + sizeof ipre - 1, g->instruct, il);
        memcpy(ibuf + sizeof ipre - 1 + il, ipost, sizeof ipost);
        size_t ni = 0;
        st = tokenize(s, ibuf, iids, icap, &ni);
        if (st != CT_OK) return st;
        n_instr = (int)ni;
    }

    /* ICL reference transcript: <|im_start|>assistant\n{ref_text}<|im_end|>\n, ids[3:-2]
       (Base models take no instruction, so its ids take the instruction's place) */
    int n_ref = 0;
    const int32_t *R = iids + 3;
    if (icl) {
        size_t rl = strlen(g->ref_text);
        static const char rpost[] = "<|im_end|>\n";
        char *rbuf = full + sizeof pre + tl + sizeof post;
        if (rl > (size_t)s->cap * 64 || (size_t)(rbuf - full) + sizeof pre + rl + sizeof rpost > full_cap)
            return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: reference transcript of %zu bytes "
                           "cannot fit the session context of %d positions", rl, s->cap);
        memcpy(rbuf, pre, sizeof pre - 1);
        memcpy(rbuf + sizeof pre - 1, g->ref_text, rl);
        memcpy(rbuf + sizeof pre - 1 + rl, rpost, sizeof rpost);
        size_t nr = 0;
        st = tokenize(s, rbuf, iids, (size_t)2 * idcap - n, &nr);
        if (st != CT_OK) return st;
        const int32_t rtail[2] = {c->im_end, 198};
        if (nr < 5 || memcmp(iids, role, sizeof role) != 0 || memcmp(iids + nr - 2, rtail, sizeof rtail) != 0)
            return ct_errf(s->err, sizeof s->err, CT_ERR_INVALID_ARG, "prompt: the reference transcript merges "
                           "with the chat template around it (does it start or end with a newline?)");
        n_ref = (int)nr - 5;
    }

    /* codec header list */
    int list[8], nl = 0;
    if (lang_id >= 0) {
        list[nl++] = c->codec_think;
        list[nl++] = c->codec_think_bos;
        list[nl++] = lang_id;
        list[nl++] = c->codec_think_eos;
    } else {
        list[nl++] = c->codec_nothink;
        list[nl++] = c->codec_think_bos;
        list[nl++] = c->codec_think_eos;
    }
    int spk_slot = -1;
    if (spk) list[nl++] = spk->id;
    else if (g->xvector) spk_slot = nl, list[nl++] = -1;
    list[nl++] = c->codec_pad;
    list[nl++] = c->codec_bos;
    int header = nl - 1;
    const int F = icl ? g->ref_frames : 0, nx = n_ref + N + 1; /* ICL: reference frames, text items */
    int body = non_streaming ? N + 2 : 1;
    if (icl) body = non_streaming ? nx + 1 + F : F + 1;
    int L = n_instr + 3 + header + body;
    if (L + 2 > s->cap) {
        if (icl)
            return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: %d prefill positions (%d reference "
                           "frames, %d reference and %d text tokens) do not fit the session context of %d",
                           L, F, n_ref, N, s->cap);
        return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: %d prefill positions do not fit "
                       "the session context of %d (text has %d tokens)", L, s->cap, N);
    }
    if (icl && !non_streaming && nx - (F + 1) > s->cap)
        return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: %d text items beyond the %d reference "
                       "frames do not fit the session context of %d", nx - (F + 1), F, s->cap);

    /* the trailing overlay rows are written last because `full` borrowed their storage */
    float *P = s->pad_row;
    float *row = s->prompt;
    ct_embed_text_rows(s, iids, n_instr, row);
    row += (size_t)n_instr * H;
    ct_embed_text_rows(s, ids, 3, row);
    row += (size_t)3 * H;
    for (int i = 0; i < header; i++, row += H) {
        if (i == header - 1) ct_embed_text_rows(s, &c->tts_bos, 1, row);
        else memcpy(row, P, (size_t)H * sizeof(float));
        if (i == spk_slot)
            for (int j = 0; j < H; j++) row[j] += g->xvector[j];
        else
            ct_embed_codec_add(m, list[i], row);
    }
    const int32_t *T = ids + 3;
    int n_trailing = 0;
    if (icl && non_streaming) {
        /* X_k + c(pad) for the R + N + 1 text items, P + c(bos), then P + frame_f */
        embed_icl_text(s, R, n_ref, T, N, 0, nx, row);
        for (int k = 0; k < nx; k++, row += H) ct_embed_codec_add(m, c->codec_pad, row);
        memcpy(row, P, (size_t)H * sizeof(float));
        ct_embed_codec_add(m, c->codec_bos, row);
        row += H;
        for (int f = 0; f < F; f++, row += H) {
            memcpy(row, P, (size_t)H * sizeof(float));
            add_ref_frame(m, g->ref_codes + (size_t)f * c->n_groups, row);
        }
    } else if (icl) {
        /* X summed with Y = [c(bos), frame_1..frame_F]: X padded with P to F + 1 items, or its
           items past F + 1 become the trailing overlay (written below) */
        int both = nx < F + 1 ? nx : F + 1;
        embed_icl_text(s, R, n_ref, T, N, 0, both, row);
        for (int k = both; k < F + 1; k++) memcpy(row + (size_t)k * H, P, (size_t)H * sizeof(float));
        ct_embed_codec_add(m, c->codec_bos, row);
        row += H;
        for (int f = 0; f < F; f++, row += H) add_ref_frame(m, g->ref_codes + (size_t)f * c->n_groups, row);
        n_trailing = nx - both;
    } else if (non_streaming) {
        ct_embed_text_rows(s, T, N, row);
        for (int i = 0; i < N; i++, row += H) ct_embed_codec_add(m, c->codec_pad, row);
        ct_embed_text_rows(s, &c->tts_eos, 1, row);
        ct_embed_codec_add(m, c->codec_pad, row);
        row += H;
        memcpy(row, P, (size_t)H * sizeof(float));
        ct_embed_codec_add(m, c->codec_bos, row);
        row += H;
    } else {
        ct_embed_text_rows(s, T, 1, row);
        ct_embed_codec_add(m, c->codec_bos, row);
        row += H;
        /* copy the remaining text ids off the borrowed buffer before overwriting it */
        n_trailing = s->text_open ? N - 1 : N; /* T_2..T_N then E (open text: no E yet) */
    }
    s->prompt_len = L;
    /* before the text: the instruction, role block and header; an ICL clone's transcript rows
       (non-streaming: R_k + c(pad); streaming: R_k + Y_k while both last) */
    s->voice_rows = n_instr + 3 + header + (icl ? (non_streaming ? n_ref : (n_ref < F + 1 ? n_ref : F + 1)) : 0);
    if (icl) {
        if (n_trailing) embed_icl_text(s, R, n_ref, T, N, nx - n_trailing, nx, s->trailing);
    } else if (n_trailing) {
        if (n_trailing > s->cap)
            return ct_errf(s->err, sizeof s->err, CT_ERR_LIMIT, "prompt: text too long");
        /* ids live in s->ids (not in the borrowed buffer), so this is safe */
        ct_embed_text_rows(s, T + 1, N - 1, s->trailing);
        if (!s->text_open) ct_embed_text_rows(s, &c->tts_eos, 1, s->trailing + (size_t)(N - 1) * H);
    }
    s->n_trailing = n_trailing;
    return CT_OK;
}
