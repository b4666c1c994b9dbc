// The public header compiled as C++ (extern "C", no C-only constructs): a few types and calls
// through it, linked against the shared C library alone.
#include <cstdio>
#include <cstring>
#include <string>

#include "codectalk.h"

static int failures;
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                          \
        }                                                                        \
    } while (0)

int main() {
    const char *ok = ct_status_str(CT_OK);
    CHECK(ok != nullptr && ok[0] != '\0');
    CHECK(std::string(ct_status_str(CT_ERR_NOMEM)) != ok);
    // the version macros, the project version CMake read from them, and the linked library agree
    char v[48];
    std::snprintf(v, sizeof v, "%d.%d.%d", CT_VERSION_MAJOR, CT_VERSION_MINOR, CT_VERSION_PATCH);
    CHECK(std::string(v) == CT_VERSION_STRING);
    CHECK(std::string(CT_VERSION_STRING) == CT_PROJECT_VERSION);
    CHECK(std::string(ct_version()) == CT_VERSION_STRING);

    ct_model_params mp = ct_model_params_default();
    CHECK(mp.size == sizeof(ct_model_params));

    ct_stop_reason r = CT_STOP_EOS;
    CHECK(ct_stop_reason_str(r) != nullptr);

    // the codec decoder is usable on its own: a missing directory is an I/O error with a message
    ct_codec *c = nullptr;
    char err[256] = "";
    ct_status st = ct_codec_load("/nonexistent/codectalk-model", &c, err, sizeof err);
    CHECK(st == CT_ERR_IO && c == nullptr && err[0] != '\0');
    ct_codec_stream_free(nullptr);
    ct_codec_free(nullptr);

    std::printf("header compiles as C++; codectalk %s, %s\n", ct_version(), ok);
    if (failures) std::fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
