/* Minimal protocol-buffers wire format: a growable write buffer (varints, tags,
   length-delimited fields, nested messages built in a child buffer) and a bounds-checked
   reader that walks the fields of one message. Enough for ONNX (onnx.proto, proto2/3 wire
   format); no schema, no reflection. */
#ifndef CT_EXPORT_PB_H
#define CT_EXPORT_PB_H

#include <stddef.h>
#include <stdint.h>

/* Wire types. */
enum { CT_PB_VARINT = 0, CT_PB_I64 = 1, CT_PB_LEN = 2, CT_PB_I32 = 5 };

/* Growable byte buffer. A failed allocation sets oom and turns later writes into no-ops. */
typedef struct {
    uint8_t *data;
    size_t len, cap;
    int oom;
} ct_pb;

/* Frees the buffer and zeroes it (a zeroed ct_pb is an empty valid buffer). */
void ct_pb_free(ct_pb *b);
/* Appends n raw bytes. */
void ct_pb_raw(ct_pb *b, const void *p, size_t n);
/* Appends v as a base-128 varint. */
void ct_pb_varint(ct_pb *b, uint64_t v);
/* Bytes the varint encoding of v takes (1..10). */
size_t ct_pb_varint_len(uint64_t v);
/* Field key (field << 3 | wire type). */
void ct_pb_tag(ct_pb *b, int field, int wire);
/* varint field; negative int64 values are written as 10-byte two's complement (proto int64). */
void ct_pb_int(ct_pb *b, int field, int64_t v);
/* 32-bit float field (wire type 5, little-endian). */
void ct_pb_float(ct_pb *b, int field, float v);
/* Length-delimited field holding n bytes. */
void ct_pb_bytes(ct_pb *b, int field, const void *p, size_t n);
/* Length-delimited field holding a NUL-terminated string. */
void ct_pb_str(ct_pb *b, int field, const char *s);
/* Appends child as an embedded message field (child is left untouched). */
void ct_pb_msg(ct_pb *b, int field, const ct_pb *child);
/* Packed repeated int64 field (proto3 default encoding of repeated scalars). */
void ct_pb_packed_ints(ct_pb *b, int field, const int64_t *v, size_t n);

/* Reader over one message's bytes [p, end). */
typedef struct {
    const uint8_t *p, *end;
    int bad; /* set on any malformed or truncated field */
} ct_pb_rd;

/* One decoded field: for VARINT v holds the value; for I32/I64 v holds the raw bits; for LEN
   data/len point into the message. start/stop span the whole field (key included). */
typedef struct {
    int field, wire;
    uint64_t v;
    const uint8_t *data;
    size_t len;
    const uint8_t *start, *stop;
} ct_pb_field;

/* Starts reading a message of n bytes at p. */
void ct_pb_rd_init(ct_pb_rd *r, const void *p, size_t n);
/* Reads the next field into f. Returns 1 on success, 0 at the end of the message or on a
   malformed field (then r->bad is set). Group wire types (3, 4) are malformed here. */
int ct_pb_next(ct_pb_rd *r, ct_pb_field *f);
/* Reads a varint from [*p, end); returns 0 on truncation/overlong encodings. */
int ct_pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

#endif
