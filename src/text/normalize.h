/* Optional text normaliser (docs/TEXT.md "Normaliser"): numbers, ordinals, years, dates,
   times, currencies, percentages, units and common abbreviations written out as words, in
   English or Chinese; other languages are left as written. Off unless asked for
   (ct_stream_params.normalize), so the default output stays the official implementation's. */
#ifndef CT_TEXT_NORMALIZE_H
#define CT_TEXT_NORMALIZE_H

#include <stddef.h>

#include "core/status.h"

/* Normalises text[0..len) into *out (malloc'd, NUL-terminated; the caller frees it). language:
   "english" or "chinese" (names or codes such as "en-US", "zh-CN") read every number that way;
   "auto", "" or NULL decide each number by the script of the nearest letters (Han, kana or
   Hangul: Chinese; else English); any other language copies the text unchanged. Bytes that are
   not valid UTF-8 are copied as they are. Returns CT_OK, CT_ERR_NOMEM, or CT_ERR_INVALID_ARG
   (NULL arguments). */
ct_status ct_normalize(const char *text, size_t len, const char *language, char **out, char *err, size_t errcap);

#endif
