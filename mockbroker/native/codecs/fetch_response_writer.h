/* FetchResponse v4-18 written in C from the very objects of the generated codec
   (mockbroker/protocol/generated/fetch_response.py), included by mockbroker/native/lanes/_fastfetch.c
   (setup, encode_response: see its module comment) and by fetch_from_logs.h, which writes the same
   record buffers (buffer_size, buffer_bytes, hole_threshold) once setup() has run (``ready``).  The
   includer defines MAX_SLOTS (struct_slots.h) first.  tests/protocol/test_fast_fetch.py holds it equal
   to the generated writer.
*/
#ifndef MOCKBROKER_FETCH_RESPONSE_WRITER_H
#define MOCKBROKER_FETCH_RESPONSE_WRITER_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "struct_slots.h"
#include "wire_writer.h"

enum { RESP, TOPIC, PART, ABORTED, DIVERGING, LEADER, SNAPSHOT, LAYOUTS };
enum { R_THROTTLE, R_ERROR, R_SESSION, R_RESPONSES, R_ENDPOINTS, R_TAGS };
enum { T_NAME, T_ID, T_PARTS, T_TAGS };
enum { P_INDEX, P_ERROR, P_HW, P_LSO, P_LOG_START, P_DIVERGING, P_LEADER, P_SNAPSHOT, P_ABORTED, P_REPLICA, P_RECORDS,
       P_TAGS };

static const char *const SLOT_NAMES[LAYOUTS][MAX_SLOTS + 1] = {
    {"throttle_time_ms", "error_code", "session_id", "responses", "node_endpoints", "unknown_tags", NULL},
    {"topic", "topic_id", "partitions", "unknown_tags", NULL},
    {"partition_index", "error_code", "high_watermark", "last_stable_offset", "log_start_offset", "diverging_epoch",
     "current_leader", "snapshot_id", "aborted_transactions", "preferred_read_replica", "records", "unknown_tags", NULL},
    {"producer_id", "first_offset", "unknown_tags", NULL},
    {"epoch", "end_offset", "unknown_tags", NULL},
    {"leader_id", "leader_epoch", "unknown_tags", NULL},
    {"end_offset", "epoch", "unknown_tags", NULL},
};

static Layout layouts[LAYOUTS];
static Py_ssize_t hole_threshold = 256;
static int ready = 0;

#define SLOT(obj, layout, i) (*(PyObject **)((char *)(obj) + layouts[layout].offset[i]))

static int find_slots(int which, PyObject *cls) {
    return layout_of(&layouts[which], cls, SLOT_NAMES[which]);
}

static PyObject *setup(PyObject *self, PyObject *args) {
    PyObject *cls[LAYOUTS];
    Py_ssize_t threshold;
    if (!PyArg_ParseTuple(args, "OOOOOOOn:setup", &cls[0], &cls[1], &cls[2], &cls[3], &cls[4], &cls[5], &cls[6],
                          &threshold))
        return NULL;
    ready = 0;
    for (int i = 0; i < LAYOUTS; i++)
        if (find_slots(i, cls[i]) < 0) return NULL;
    hole_threshold = threshold;
    ready = 1;
    Py_RETURN_NONE;
}

/* A struct of ``which`` whose fields are all at their defaults: ints of -1 and no unknown tags (the
   tagged fields a usual answer leaves out). */
static int all_default(PyObject *obj, int which) {
    if (obj == NULL || Py_TYPE(obj) != layouts[which].type || !is_empty(SLOT(obj, which, 2), 1)) return 0;
    int64_t a, b;
    return get_int(SLOT(obj, which, 0), -1, -1, &a) && get_int(SLOT(obj, which, 1), -1, -1, &b);
}

/* A record buffer: bytes, bytearray or a contiguous memoryview (what write_records takes). */
static int buffer_size(PyObject *c, Py_ssize_t *n) {
    if (PyBytes_CheckExact(c)) *n = PyBytes_GET_SIZE(c);
    else if (PyByteArray_CheckExact(c)) *n = PyByteArray_GET_SIZE(c);
    else if (PyMemoryView_Check(c) && PyMemoryView_GET_BUFFER(c)->itemsize == 1 &&
             PyMemoryView_GET_BUFFER(c)->ndim == 1 && PyBuffer_IsContiguous(PyMemoryView_GET_BUFFER(c), 'C'))
        *n = PyMemoryView_GET_BUFFER(c)->len;
    else return 0;
    return 1;
}

static const char *buffer_bytes(PyObject *c) {
    if (PyBytes_CheckExact(c)) return PyBytes_AS_STRING(c);
    if (PyByteArray_CheckExact(c)) return PyByteArray_AS_STRING(c);
    return (const char *)PyMemoryView_GET_BUFFER(c)->buf;
}

/* runtime.write_records: the size, then each buffer copied, or left as a hole when larger than the
   threshold (``holes``: a list of (offset, buffer) in the final ``out``, which starts at ``base``). */
static int put_records(Writer *w, PyObject *records, PyObject *holes, Py_ssize_t base) {
    if (records == Py_None) return put_size(w, -1, 1);
    PyObject *one[1] = {records};
    PyObject **chunks = one;
    Py_ssize_t count = 1;
    if (PyList_CheckExact(records)) {
        chunks = PySequence_Fast_ITEMS(records);
        count = PyList_GET_SIZE(records);
    } else if (PyTuple_CheckExact(records)) {
        chunks = PySequence_Fast_ITEMS(records);
        count = PyTuple_GET_SIZE(records);
    }
    Py_ssize_t total = 0, n;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!buffer_size(chunks[i], &n)) return 0;
        total += n;
    }
    if ((!w->flexible && total > INT32_MAX) || !put_size(w, total, 1)) return 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        buffer_size(chunks[i], &n);
        if (n > hole_threshold) {
            PyObject *hole = Py_BuildValue("(nO)", base + w->len, chunks[i]);
            int failed = hole == NULL || PyList_Append(holes, hole) < 0;
            Py_XDECREF(hole);
            if (failed) return -1;
            continue;
        }
        if (!grow(w, n)) return 0;
        memcpy(w->buf + w->len, buffer_bytes(chunks[i]), (size_t)n);
        w->len += n;
    }
    return 1;
}

/* 1 written, 0 not the usual answer, -1 a Python error (a hole could not be kept) */
static int put_partition(Writer *w, PyObject *p, int version, PyObject *holes, Py_ssize_t base) {
    if (p == NULL || Py_TYPE(p) != layouts[PART].type || !is_empty(SLOT(p, PART, P_TAGS), 1)) return 0;
    if (!put_field(w, SLOT(p, PART, P_INDEX), 4) || !put_field(w, SLOT(p, PART, P_ERROR), 2) ||
        !put_field(w, SLOT(p, PART, P_HW), 8) || !put_field(w, SLOT(p, PART, P_LSO), 8))
        return 0;
    if (version >= 5 && !put_field(w, SLOT(p, PART, P_LOG_START), 8)) return 0;
    PyObject *aborted = SLOT(p, PART, P_ABORTED);
    if (aborted == Py_None) {
        if (!put_size(w, -1, 1)) return 0;
    } else {
        if (aborted == NULL || !PyList_CheckExact(aborted) || !put_size(w, PyList_GET_SIZE(aborted), 1)) return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(aborted); i++) {
            PyObject *a = PyList_GET_ITEM(aborted, i);
            if (Py_TYPE(a) != layouts[ABORTED].type || !is_empty(SLOT(a, ABORTED, 2), 1) ||
                !put_field(w, SLOT(a, ABORTED, 0), 8) || !put_field(w, SLOT(a, ABORTED, 1), 8) ||
                (w->flexible && !put_uvarint(w, 0)))
                return 0;
        }
    }
    if (version >= 11 && !put_field(w, SLOT(p, PART, P_REPLICA), 4)) return 0;
    int records = put_records(w, SLOT(p, PART, P_RECORDS), holes, base);
    if (records <= 0) return records;
    if (!w->flexible) return 1;
    if (!all_default(SLOT(p, PART, P_DIVERGING), DIVERGING) || !all_default(SLOT(p, PART, P_LEADER), LEADER) ||
        !all_default(SLOT(p, PART, P_SNAPSHOT), SNAPSHOT))
        return 0;
    return put_uvarint(w, 0);
}

static int put_topic(Writer *w, PyObject *t, int version, PyObject *holes, Py_ssize_t base) {
    if (t == NULL || Py_TYPE(t) != layouts[TOPIC].type || !is_empty(SLOT(t, TOPIC, T_TAGS), 1)) return 0;
    if (version >= 13) {
        PyObject *id = SLOT(t, TOPIC, T_ID);
        if (id == NULL || !PyBytes_CheckExact(id) || PyBytes_GET_SIZE(id) != 16 || !grow(w, 16)) return 0;
        memcpy(w->buf + w->len, PyBytes_AS_STRING(id), 16);
        w->len += 16;
    } else if (!put_string(w, SLOT(t, TOPIC, T_NAME), 0)) {
        return 0;
    }
    PyObject *parts = SLOT(t, TOPIC, T_PARTS);
    if (parts == NULL || !PyList_CheckExact(parts) || !put_size(w, PyList_GET_SIZE(parts), 1)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++) {
        int done = put_partition(w, PyList_GET_ITEM(parts, i), version, holes, base);
        if (done <= 0) return done;
    }
    return !w->flexible || put_uvarint(w, 0);
}

static int put_response(Writer *w, PyObject *resp, int version, PyObject *holes, Py_ssize_t base) {
    if (Py_TYPE(resp) != layouts[RESP].type || !is_empty(SLOT(resp, RESP, R_TAGS), 1)) return 0;
    if (version >= 16 && !is_empty(SLOT(resp, RESP, R_ENDPOINTS), 0)) return 0;
    if (!put_field(w, SLOT(resp, RESP, R_THROTTLE), 4)) return 0;
    if (version >= 7 && (!put_field(w, SLOT(resp, RESP, R_ERROR), 2) || !put_field(w, SLOT(resp, RESP, R_SESSION), 4)))
        return 0;
    PyObject *topics = SLOT(resp, RESP, R_RESPONSES);
    if (topics == NULL || !PyList_CheckExact(topics) || !put_size(w, PyList_GET_SIZE(topics), 1)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topics); i++) {
        int done = put_topic(w, PyList_GET_ITEM(topics, i), version, holes, base);
        if (done <= 0) return done;
    }
    return !w->flexible || put_uvarint(w, 0);
}

static PyObject *encode_response(PyObject *self, PyObject *args) {
    PyObject *resp, *out, *holes;
    int version;
    if (!PyArg_ParseTuple(args, "OiO!O!:encode_response", &resp, &version, &PyByteArray_Type, &out, &PyList_Type,
                          &holes))
        return NULL;
    if (!ready || version < 4 || version > 18) Py_RETURN_NONE;
    Writer w = {PyMem_Malloc(512), 0, 512, version >= 12};
    if (w.buf == NULL) return PyErr_NoMemory();
    Py_ssize_t start = PyByteArray_GET_SIZE(out), had_holes = PyList_GET_SIZE(holes);
    PyObject *result = NULL;
    int ok = put_response(&w, resp, version, holes, start);
    if (ok <= 0 || PyErr_Occurred()) { /* not the usual answer (or an error): the holes it kept go */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (PyList_SetSlice(holes, had_holes, PyList_GET_SIZE(holes), NULL) < 0) PyErr_Clear();
        PyErr_Restore(type, value, traceback);
        if (ok < 0 || PyErr_Occurred()) goto done;
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (append_to(&w, out) < 0) goto done;
    result = Py_NewRef(Py_True);
done:
    PyMem_Free(w.buf);
    return result;
}

#endif
