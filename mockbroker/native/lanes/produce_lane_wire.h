/* The produce lane's wire side (included by _producelane.c): reading a usual Produce request (v3-12)
   into a Plan, and writing the answer to a Plan whose every partition was appended.  No Python state
   is touched here beyond creating the strings the Plan holds.
*/
#ifndef MOCKBROKER_PRODUCE_LANE_WIRE_H
#define MOCKBROKER_PRODUCE_LANE_WIRE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "batch_checks.h"
#include "wire_reader.h"

static inline int has(Reader *r, Py_ssize_t n) { return r->len - r->pos >= n; }

/* A request's topic names and client id, as str: the same few come in every request, so the last
   RECENT_TEXTS decoded are kept and handed out again when the bytes are equal (no decode, no new str).
   Bytes that are not UTF-8 are never kept: they raise as PyUnicode_DecodeUTF8 does. */
#define RECENT_TEXTS 8
static PyObject *recent_text[RECENT_TEXTS];
static int recent_next = 0;

static PyObject *decode_text(const unsigned char *bytes, Py_ssize_t n) {
    for (int i = 0; i < RECENT_TEXTS && recent_text[i] != NULL; i++) {
        PyObject *text = recent_text[i];
        if (PyUnicode_IS_COMPACT_ASCII(text) && PyUnicode_GET_LENGTH(text) == n &&
            memcmp(PyUnicode_DATA(text), bytes, (size_t)n) == 0)
            return Py_NewRef(text);
    }
    PyObject *text = PyUnicode_DecodeUTF8((const char *)bytes, n, NULL);
    if (text != NULL && PyUnicode_IS_COMPACT_ASCII(text)) {
        Py_XSETREF(recent_text[recent_next], Py_NewRef(text));
        recent_next = (recent_next + 1) % RECENT_TEXTS;
    }
    return text;
}

/* ---- reading the request -------------------------------------------------------------------- */


typedef struct {
    Py_ssize_t start, len;  /* the records in the frame */
    int32_t index;
    PyObject *log;          /* owned once the partition is checked */
    PyObject *producers;    /* owned: the log's producer state, for a batch with a producer id */
    int32_t last_seq;       /* of such a batch */
    BatchFields f;
    int64_t base_offset, log_start_offset;
} Part;

typedef struct {
    PyObject *name;         /* owned */
    PyObject *partitions;   /* owned: the topic's list */
    Py_ssize_t name_pos, name_len, first, count;
    Py_ssize_t max_bytes;
    int64_t lo, hi;
    int need_keys, check_records;
} TopicPlan;

typedef struct {
    TopicPlan *topics;
    Part *parts;
    Py_ssize_t ntopics, nparts;
} Plan;

static void plan_free(Plan *p) {
    for (Py_ssize_t i = 0; i < p->nparts; i++) {
        Py_XDECREF(p->parts[i].log);
        Py_XDECREF(p->parts[i].producers);
    }
    for (Py_ssize_t i = 0; i < p->ntopics; i++) {
        Py_XDECREF(p->topics[i].name);
        Py_XDECREF(p->topics[i].partitions);
    }
    PyMem_Free(p->topics);
    PyMem_Free(p->parts);
}

/* The body, when it has the usual shape (no transactional id, acks 1 or -1, records for every
   partition, no tagged fields, nothing after it); 0 otherwise. */
static int read_body(Reader *r, Plan *p) {
    int64_t n;
    int16_t acks;
    int32_t timeout;
    Py_ssize_t ntopics;
    if (!read_size(r, 0, &n) || n != -1) return 0;  /* a transactional id: the Python path */
    if (!read_i16(r, &acks) || (acks != 1 && acks != -1) || !read_i32(r, &timeout) || !read_count(r, &ntopics))
        return 0;
    if (ntopics == 0) return 0;
    p->topics = PyMem_Calloc(ntopics, sizeof(TopicPlan));
    Py_ssize_t cap = 4;
    p->parts = PyMem_Malloc(cap * sizeof(Part));
    if (p->topics == NULL || p->parts == NULL) return 0;
    for (Py_ssize_t t = 0; t < ntopics; t++) {
        TopicPlan *tp = &p->topics[p->ntopics++];
        if (!read_size(r, 0, &n) || n < 0 || !has(r, n)) return 0;
        tp->name_pos = r->pos;
        tp->name_len = (Py_ssize_t)n;
        tp->name = decode_text(r->b + r->pos, tp->name_len);
        if (tp->name == NULL) return 0;
        r->pos += tp->name_len;
        Py_ssize_t nparts;
        if (!read_count(r, &nparts) || nparts == 0) return 0;
        tp->first = p->nparts;
        tp->count = nparts;
        for (Py_ssize_t i = 0; i < nparts; i++) {
            if (p->nparts == cap) {
                cap *= 2;
                Part *grown = PyMem_Realloc(p->parts, cap * sizeof(Part));
                if (grown == NULL) return 0;
                p->parts = grown;
            }
            Part *part = &p->parts[p->nparts++];
            part->log = NULL;
            part->producers = NULL;
            if (!read_i32(r, &part->index) || !read_size(r, 1, &n) || n <= 0 || !has(r, n)) return 0;
            part->start = r->pos;
            part->len = (Py_ssize_t)n;
            r->pos += part->len;
            if (!no_tags(r)) return 0;
        }
        if (!no_tags(r)) return 0;
    }
    return no_tags(r) && r->pos == r->len;
}

static PyObject *read_client_id(Reader *r, int *ok) {
    int16_t n;
    *ok = 0;
    if (!read_i16(r, &n)) return NULL;
    if (n < 0) {
        if (n != -1) return NULL;
        *ok = 1;
        return Py_NewRef(Py_None);
    }
    if (!has(r, n)) return NULL;
    PyObject *id = decode_text(r->b + r->pos, n);
    if (id == NULL) {
        PyErr_Clear();
        return NULL;
    }
    r->pos += n;
    *ok = 1;
    return id;
}

/* ---- the answer ------------------------------------------------------------------------------ */

typedef struct {
    unsigned char *p;
    int flexible;
} Out;

static void put(Out *o, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) *o->p++ = (unsigned char)(v >> (8 * i));
}

static void put_uvarint(Out *o, uint64_t v) {
    while (v >= 0x80) {
        *o->p++ = (unsigned char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *o->p++ = (unsigned char)v;
}

static void put_size(Out *o, int64_t n, int wide) {  /* n = -1: null */
    if (o->flexible)
        put_uvarint(o, (uint64_t)(n + 1));
    else
        put(o, (uint64_t)n, wide ? 4 : 2);
}

#define PART_BYTES 48   /* index, error, 3 offsets, record errors, error message, tags: at most */
#define TOPIC_BYTES 16  /* name length, partition count, tags: at most */

static PyObject *encode_answer(const unsigned char *b, Plan *p, int version) {
    Py_ssize_t bound = 32;
    for (Py_ssize_t t = 0; t < p->ntopics; t++) bound += TOPIC_BYTES + p->topics[t].name_len;
    bound += PART_BYTES * p->nparts;
    PyObject *answer = PyByteArray_FromStringAndSize(NULL, bound);
    if (answer == NULL) return NULL;
    unsigned char *start = (unsigned char *)PyByteArray_AS_STRING(answer);
    Out o = {start + 4, version >= 9};
    memcpy(o.p, b + 4, 4);  /* the correlation id */
    o.p += 4;
    if (o.flexible) *o.p++ = 0;  /* response header v1: no tagged fields */
    put_size(&o, p->ntopics, 1);
    for (Py_ssize_t t = 0; t < p->ntopics; t++) {
        TopicPlan *tp = &p->topics[t];
        put_size(&o, tp->name_len, 0);
        memcpy(o.p, b + tp->name_pos, tp->name_len);
        o.p += tp->name_len;
        put_size(&o, tp->count, 1);
        for (Py_ssize_t i = tp->first; i < tp->first + tp->count; i++) {
            Part *part = &p->parts[i];
            put(&o, (uint32_t)part->index, 4);
            put(&o, 0, 2);
            put(&o, (uint64_t)part->base_offset, 8);
            put(&o, (uint64_t)-1, 8);  /* log_append_time_ms (v2+): CreateTime topics only here */
            if (version >= 5) put(&o, (uint64_t)part->log_start_offset, 8);
            if (version >= 8) {
                put_size(&o, 0, 1);   /* record_errors */
                put_size(&o, -1, 0);  /* error_message */
            }
            if (o.flexible) *o.p++ = 0;
        }
        if (o.flexible) *o.p++ = 0;
    }
    put(&o, 0, 4);  /* throttle_time_ms */
    if (o.flexible) *o.p++ = 0;
    Py_ssize_t size = o.p - start;
    put(&(Out){start, 0}, (uint64_t)(size - 4), 4);
    if (PyByteArray_Resize(answer, size) < 0) {
        Py_DECREF(answer);
        return NULL;
    }
    return answer;
}

#endif
