/* Writing Kafka's wire primitives into a growing buffer, shared by the C response encoders that include
   this file (mockbroker/native/codecs/_fastproduce.c, mockbroker/native/lanes/_fastfetch.c).  A value that is
   not what the generated writer would accept (not an int, out of range, not a str) answers 0: the
   caller then leaves the whole answer to the generated codec, which names the problem.  ``flexible``
   selects compact lengths (Kafka's flexible versions).
*/
#ifndef MOCKBROKER_WIRE_WRITER_H
#define MOCKBROKER_WIRE_WRITER_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    int flexible;
} Writer;

static int grow(Writer *w, Py_ssize_t n) {
    if (w->len + n <= w->cap) return 1;
    Py_ssize_t cap = w->cap * 2 > w->len + n ? w->cap * 2 : w->len + n + 256;
    char *buf = PyMem_Realloc(w->buf, cap);
    if (buf == NULL) return 0;
    w->buf = buf;
    w->cap = cap;
    return 1;
}

/* ``v`` in ``bytes`` (1-8) big-endian bytes; on little-endian hosts the low bytes of v moved to the top
   and byte-swapped, all eight stored (room for them is made) and the length moved by ``bytes``. */
static int put_int(Writer *w, int64_t v, int bytes) {
    if (!grow(w, 8)) return 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t big = __builtin_bswap64((uint64_t)v << (8 * (8 - bytes)));
    memcpy(w->buf + w->len, &big, 8);
    w->len += bytes;
#else
    for (int i = bytes - 1; i >= 0; i--)
        w->buf[w->len++] = (char)((uint64_t)v >> (8 * i));
#endif
    return 1;
}

static int put_uvarint(Writer *w, uint64_t v) {
    if (!grow(w, 10)) return 0;
    while (v >= 0x80) {
        w->buf[w->len++] = (char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    w->buf[w->len++] = (char)v;
    return 1;
}

static int put_size(Writer *w, Py_ssize_t n, int wide) {  /* n = -1: null */
    if (w->flexible) return put_uvarint(w, (uint64_t)(n + 1));
    return put_int(w, n, wide ? 4 : 2);
}

/* An int field within [lo, hi]; 0 when it is not an int or out of range. */
static int get_int(PyObject *obj, int64_t lo, int64_t hi, int64_t *out) {
    if (obj == NULL || !PyLong_Check(obj)) return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred()) || v < lo || v > hi) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

static int put_field(Writer *w, PyObject *obj, int bytes) {
    int64_t v;
    int64_t hi = bytes == 8 ? INT64_MAX : ((int64_t)1 << (8 * bytes - 1)) - 1;
    return get_int(obj, -hi - 1, hi, &v) && put_int(w, v, bytes);
}

static int put_string(Writer *w, PyObject *s, int nullable) {
    if (s == Py_None && nullable) return put_size(w, -1, 0);
    if (s == NULL || !PyUnicode_CheckExact(s)) return 0;
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(s, &n);
    if (utf8 == NULL) {
        PyErr_Clear();  /* lone surrogates: the generated writer says so */
        return 0;
    }
    if (!w->flexible && n > 32767) return 0;
    if (!put_size(w, n, 0) || !grow(w, n)) return 0;
    memcpy(w->buf + w->len, utf8, n);
    w->len += n;
    return 1;
}

static int is_empty(PyObject *obj, int none_ok) {  /* unknown_tags, record_errors, node_endpoints */
    return obj != NULL && ((none_ok && obj == Py_None) || (PyList_CheckExact(obj) && PyList_GET_SIZE(obj) == 0));
}

/* Append what ``w`` holds to the bytearray ``out``: 0 on success, -1 with a Python error set. */
static int append_to(Writer *w, PyObject *out) {
    Py_ssize_t start = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, start + w->len) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(out) + start, w->buf, w->len);
    return 0;
}

#endif
