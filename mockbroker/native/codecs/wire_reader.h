/* Reading Kafka's wire primitives from a request frame, shared by the Produce extensions that include
   this file (mockbroker/native/codecs/_fastproduce.c, mockbroker/native/lanes/_producelane.c).  Every read is
   bounds-checked and answers 0 on a problem (the caller then leaves the frame to the generated codec,
   which names it); ``flexible`` selects compact lengths and tagged fields (Kafka's flexible versions).
*/
#ifndef MOCKBROKER_WIRE_READER_H
#define MOCKBROKER_WIRE_READER_H

#include <Python.h>
#include <stdint.h>

typedef struct {
    PyObject *frame;  /* the memoryview, for records slices */
    const unsigned char *b;
    Py_ssize_t len, pos;
    int flexible;
} Reader;

#define NEED(r, n) if ((r)->len - (r)->pos < (Py_ssize_t)(n)) return 0

static inline int read_i16(Reader *r, int16_t *out) {
    NEED(r, 2);
    *out = (int16_t)(((uint16_t)r->b[r->pos] << 8) | r->b[r->pos + 1]);
    r->pos += 2;
    return 1;
}

static inline int read_i32(Reader *r, int32_t *out) {
    NEED(r, 4);
    const unsigned char *p = r->b + r->pos;
    *out = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
    r->pos += 4;
    return 1;
}

static inline int read_uvarint(Reader *r, uint32_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift <= 28; shift += 7) {
        NEED(r, 1);
        unsigned char byte = r->b[r->pos++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            if (value > 0xFFFFFFFFu) return 0;
            *out = (uint32_t)value;
            return 1;
        }
    }
    return 0;
}

/* A length (strings, bytes) or count (arrays): -1 for null, 0 on a problem. */
static inline int read_size(Reader *r, int wide, int64_t *out) {
    if (r->flexible) {
        uint32_t n;
        if (!read_uvarint(r, &n)) return 0;
        *out = (int64_t)n - 1;
        return 1;
    }
    if (wide) {
        int32_t n;
        if (!read_i32(r, &n)) return 0;
        *out = n;
        return 1;
    }
    int16_t n;
    if (!read_i16(r, &n)) return 0;
    *out = n;
    return 1;
}

/* An array count that is not null and cannot claim more elements than bytes are left. */
static inline int read_count(Reader *r, Py_ssize_t *out) {
    int64_t n;
    if (!read_size(r, 1, &n) || n < 0 || n > r->len - r->pos) return 0;
    *out = (Py_ssize_t)n;
    return 1;
}

static inline int no_tags(Reader *r) {
    if (!r->flexible) return 1;
    NEED(r, 1);
    return r->b[r->pos++] == 0;
}

#endif
