/* Wyoming event framing: parse one event from a buffer, format one for the wire. */
#include "serve/wyoming_event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The protocol version written in every header ("version"), the wyoming package we follow. */
#define CT_WY_VERSION "1.7.2"

ct_wy_limits ct_wy_limits_default(void) {
    ct_wy_limits l = {65536, 1u << 20, 1u << 20};
    return l;
}

void ct_wy_event_clear(ct_wy_event *ev) {
    if (!ev) return;
    json_decref(ev->data);
    memset(ev, 0, sizeof *ev);
}

/* A length field: absent or null = 0; else an integer in [0, max]. -1 with err when not. */
static int get_len(const json_t *hdr, const char *key, size_t max, size_t *out, char *err, size_t errcap) {
    const json_t *v = json_object_get(hdr, key);
    *out = 0;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        snprintf(err, errcap, "'%s' must be a non-negative integer", key);
        return -1;
    }
    json_int_t x = json_integer_value(v);
    if ((unsigned long long)x > max) {
        snprintf(err, errcap, "'%s' %lld exceeds the limit of %zu bytes", key, (long long)x, max);
        return -1;
    }
    *out = (size_t)x;
    return 0;
}

int ct_wy_parse(const uint8_t *buf, size_t n, const ct_wy_limits *lim, ct_wy_event *ev, size_t *used,
                char *err, size_t errcap) {
    ct_wy_limits dl = ct_wy_limits_default();
    if (!lim) lim = &dl;
    memset(ev, 0, sizeof *ev);
    *used = 0;
    if (n == 0) return 0; /* buf may be NULL then */
    size_t scan = n < lim->max_line ? n : lim->max_line;
    const uint8_t *nl = memchr(buf, '\n', scan);
    if (!nl) {
        if (n >= lim->max_line) {
            snprintf(err, errcap, "event header line longer than %zu bytes", lim->max_line);
            return -1;
        }
        return 0;
    }
    size_t line = (size_t)(nl - buf);
    json_error_t je;
    json_t *hdr = json_loadb((const char *)buf, line, 0, &je);
    if (!hdr || !json_is_object(hdr)) {
        snprintf(err, errcap, "event header is not a JSON object%s%.120s", hdr ? "" : ": ", hdr ? "" : je.text);
        json_decref(hdr);
        return -1;
    }
    const json_t *t = json_object_get(hdr, "type");
    const json_t *d = json_object_get(hdr, "data");
    size_t dlen = 0, plen = 0;
    int bad = 0;
    if (!json_is_string(t) || json_string_length(t) == 0 || json_string_length(t) >= sizeof ev->type ||
        strlen(json_string_value(t)) != json_string_length(t)) {
        snprintf(err, errcap, "event header needs a 'type' string of 1..%zu bytes", sizeof ev->type - 1);
        bad = 1;
    } else if (d && !json_is_null(d) && !json_is_object(d)) {
        snprintf(err, errcap, "event '%s': 'data' must be an object", json_string_value(t));
        bad = 1;
    } else if (get_len(hdr, "data_length", lim->max_data, &dlen, err, errcap) ||
               get_len(hdr, "payload_length", lim->max_payload, &plen, err, errcap)) {
        bad = 1;
    }
    if (bad) {
        json_decref(hdr);
        return -1;
    }
    size_t total = line + 1 + dlen + plen;
    if (n < total) {
        json_decref(hdr);
        *used = total;
        return 0;
    }
    json_t *data = d && json_is_object(d) ? json_deep_copy(d) : json_object();
    if (!data) {
        json_decref(hdr);
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    if (dlen > 0) {
        json_t *x = json_loadb((const char *)buf + line + 1, dlen, 0, &je);
        if (!x || !json_is_object(x)) {
            snprintf(err, errcap, "event '%s': the %zu bytes of data_length are not a JSON object",
                     json_string_value(t), dlen);
            json_decref(x);
            json_decref(data);
            json_decref(hdr);
            return -1;
        }
        json_object_update(data, x);
        json_decref(x);
    }
    snprintf(ev->type, sizeof ev->type, "%s", json_string_value(t));
    ev->data = data;
    ev->payload = plen ? buf + line + 1 + dlen : NULL;
    ev->payload_len = plen;
    *used = total;
    json_decref(hdr);
    return 1;
}

uint8_t *ct_wy_format(const char *type, const json_t *data, const void *payload, size_t payload_len, size_t *len) {
    char *dj = NULL;
    size_t dn = 0;
    if (data && json_object_size(data) > 0) {
        dj = json_dumps(data, JSON_COMPACT);
        if (!dj) return NULL;
        dn = strlen(dj);
    }
    json_t *h = json_object();
    json_object_set_new(h, "type", json_string(type));
    json_object_set_new(h, "version", json_string(CT_WY_VERSION));
    if (dn) json_object_set_new(h, "data_length", json_integer((json_int_t)dn));
    if (payload_len) json_object_set_new(h, "payload_length", json_integer((json_int_t)payload_len));
    char *hj = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    uint8_t *out = NULL;
    if (hj) {
        size_t hn = strlen(hj);
        out = malloc(hn + 1 + dn + payload_len);
        if (out) {
            memcpy(out, hj, hn);
            out[hn] = '\n';
            if (dn) memcpy(out + hn + 1, dj, dn);
            if (payload_len) memcpy(out + hn + 1 + dn, payload, payload_len);
            *len = hn + 1 + dn + payload_len;
        }
    }
    free(hj);
    free(dj);
    return out;
}
