/* Language codes to the language names Qwen3-TTS configs use: ISO 639-1/639-3 codes and BCP 47
   tags ("en", "en-US", "zh_CN", "cmn", "de-DE") map to "english", "chinese", "german", ... */
#ifndef CT_TEXT_LANGCODE_H
#define CT_TEXT_LANGCODE_H

/* The language name for a code or tag (case-insensitive; the primary subtag decides: "pt-BR" ->
   "portuguese"), or NULL when it is not a code this table knows. Names pass through as NULL:
   the caller looks names up itself first. */
const char *ct_language_from_code(const char *code);

#endif
