/* FetchRequest v4-18 decoded in C into the very objects of the generated codec
   (mockbroker/protocol/generated/fetch_request.py), included by _fastfetch.c.

   setup_request(FetchRequest, ReplicaState, FetchTopic, FetchPartition, ForgottenTopic, zero_uuid)
       Called once by mockbroker.protocol.fast_fetch: finds where each slot of those classes lives.

   decode_request(frame, pos, version) -> (FetchRequest, end) or None
       The request body starting at frame[pos] (a memoryview of bytes), with the values the generated
       reader gives for this version (defaults where the version has no such field, a fresh
       ReplicaState and lists).  None whenever the body is anything but well formed without tagged
       fields (a cluster id, a replica state or directory, a high watermark, unknown tags): the
       generated reader then decodes it or names the problem.  This never decides an error.

   tests/protocol/test_fast_fetch.py holds it equal to the generated reader.  The includer defines
   MAX_SLOTS (struct_slots.h) first.
*/
#ifndef MOCKBROKER_FETCH_REQUEST_READER_H
#define MOCKBROKER_FETCH_REQUEST_READER_H

#include <Python.h>

#include "struct_slots.h"
#include "wire_reader.h"

enum { Q_REQ, Q_STATE, Q_TOPIC, Q_PART, Q_FORGOTTEN, Q_LAYOUTS };

static const char *const REQUEST_SLOTS[Q_LAYOUTS][MAX_SLOTS + 1] = {
    {"cluster_id", "replica_id", "replica_state", "max_wait_ms", "min_bytes", "max_bytes", "isolation_level",
     "session_id", "session_epoch", "topics", "forgotten_topics_data", "rack_id", "unknown_tags", NULL},
    {"replica_id", "replica_epoch", "unknown_tags", NULL},
    {"topic", "topic_id", "partitions", "unknown_tags", NULL},
    {"partition", "current_leader_epoch", "fetch_offset", "last_fetched_epoch", "log_start_offset",
     "partition_max_bytes", "replica_directory_id", "high_watermark", "unknown_tags", NULL},
    {"topic", "topic_id", "partitions", "unknown_tags", NULL},
};

static Layout request_layouts[Q_LAYOUTS];
static PyObject *zero_uuid = NULL, *empty_str = NULL, *max_int64 = NULL;
static int request_ready = 0;

#define QSLOT(obj, layout, i) (*(PyObject **)((char *)(obj) + request_layouts[layout].offset[i]))

static PyObject *setup_request(PyObject *self, PyObject *args) {
    PyObject *cls[Q_LAYOUTS], *uuid;
    if (!PyArg_ParseTuple(args, "OOOOOO:setup_request", &cls[0], &cls[1], &cls[2], &cls[3], &cls[4], &uuid))
        return NULL;
    request_ready = 0;
    for (int i = 0; i < Q_LAYOUTS; i++)
        if (layout_of(&request_layouts[i], cls[i], REQUEST_SLOTS[i]) < 0) return NULL;
    Py_XSETREF(zero_uuid, Py_NewRef(uuid));
    if (empty_str == NULL && (empty_str = PyUnicode_FromString("")) == NULL) return NULL;
    if (max_int64 == NULL && (max_int64 = PyLong_FromLongLong(INT64_MAX)) == NULL) return NULL;
    request_ready = 1;
    Py_RETURN_NONE;
}

/* A new instance with every slot set from ``values`` (references stolen; NULL values: a failure made
   earlier, and nothing is built). */
static PyObject *build(int which, PyObject **values) {
    Layout *layout = &request_layouts[which];
    PyObject *obj = NULL;
    int whole = 1;
    for (int i = 0; i < layout->count; i++) whole = whole && values[i] != NULL;
    if (whole) obj = layout->type->tp_alloc(layout->type, 0);
    for (int i = 0; i < layout->count; i++) {
        if (obj != NULL) QSLOT(obj, which, i) = values[i];
        else Py_XDECREF(values[i]);
    }
    return obj;
}

static inline int read_i64(Reader *r, int64_t *out) {
    NEED(r, 8);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | r->b[r->pos + i];
    *out = (int64_t)v;
    r->pos += 8;
    return 1;
}

/* A non-null string (a topic name, the rack id); NULL on any problem (Python error cleared). */
static PyObject *read_name(Reader *r) {
    int64_t n;
    if (!read_size(r, 0, &n) || n < 0 || r->len - r->pos < n) return NULL;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)r->b + r->pos, (Py_ssize_t)n, NULL);
    if (s == NULL) PyErr_Clear();
    r->pos += (Py_ssize_t)n;
    return s;
}

static PyObject *read_uuid(Reader *r) {
    if (r->len - r->pos < 16) return NULL;
    PyObject *id = PyBytes_FromStringAndSize((const char *)r->b + r->pos, 16);
    r->pos += 16;
    return id;
}

/* A topic's name and id as this version names topics: by name up to v12, by id from v13. */
static int read_topic_key(Reader *r, int version, PyObject **name, PyObject **id) {
    *name = version >= 13 ? Py_NewRef(empty_str) : read_name(r);
    *id = version >= 13 ? read_uuid(r) : Py_NewRef(zero_uuid);
    return *name != NULL && *id != NULL;
}

static PyObject *read_fetch_partition(Reader *r, int version) {
    int32_t index, leader_epoch = -1, fetched_epoch = -1, max_bytes;
    int64_t offset, log_start = -1;
    if (!read_i32(r, &index) || (version >= 9 && !read_i32(r, &leader_epoch)) || !read_i64(r, &offset) ||
        (version >= 12 && !read_i32(r, &fetched_epoch)) || (version >= 5 && !read_i64(r, &log_start)) ||
        !read_i32(r, &max_bytes) || !no_tags(r))
        return NULL;
    PyObject *values[] = {PyLong_FromLong(index), PyLong_FromLong(leader_epoch), PyLong_FromLongLong(offset),
                          PyLong_FromLong(fetched_epoch), PyLong_FromLongLong(log_start), PyLong_FromLong(max_bytes),
                          Py_NewRef(zero_uuid), Py_NewRef(max_int64), Py_NewRef(Py_None)};
    return build(Q_PART, values);
}

/* A list of ``count`` elements read by ``read`` (NULL on any problem). */
static PyObject *read_list(Reader *r, int version, PyObject *(*read)(Reader *, int)) {
    Py_ssize_t count;
    PyObject *list;
    if (!read_count(r, &count) || (list = PyList_New(count)) == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = read(r, version);
        if (item == NULL) {
            Py_DECREF(list); /* a list partly filled holds NULLs: its dealloc skips them */
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* A forgotten partition's index. */
static PyObject *read_index(Reader *r, int version) {
    int32_t index;
    return read_i32(r, &index) ? PyLong_FromLong(index) : NULL;
}

/* A topic as this version names it, with a list of ``read``'s items: a FetchTopic (its partitions)
   or a ForgottenTopic (partition indexes). */
static PyObject *read_topic_with(Reader *r, int version, int which, PyObject *(*read)(Reader *, int)) {
    PyObject *name, *id, *items = NULL;
    if (read_topic_key(r, version, &name, &id)) items = read_list(r, version, read);
    if (items != NULL && !no_tags(r)) Py_CLEAR(items);
    PyObject *values[] = {name, id, items, Py_NewRef(Py_None)};
    return build(which, values);
}

static PyObject *read_fetch_topic(Reader *r, int version) {
    return read_topic_with(r, version, Q_TOPIC, read_fetch_partition);
}

static PyObject *read_forgotten(Reader *r, int version) {
    return read_topic_with(r, version, Q_FORGOTTEN, read_index);
}

/* The request at frame[pos:] (a new reference, its end in *end), Py_None when not the usual one, NULL on
   an error that is not the data's (memory). */
static PyObject *read_request(PyObject *frame, Py_ssize_t pos, int version, Py_ssize_t *end) {
    if (!request_ready || !PyMemoryView_Check(frame) || version < 4 || version > 18) Py_RETURN_NONE;
    Py_buffer *view = PyMemoryView_GET_BUFFER(frame);
    if (view->itemsize != 1 || view->ndim != 1 || !PyBuffer_IsContiguous(view, 'C') || pos < 0 || pos > view->len)
        Py_RETURN_NONE;
    Reader r = {frame, (const unsigned char *)view->buf, view->len, pos, version >= 12};
    int32_t replica_id = -1, max_wait, min_bytes, max_bytes, session_id = 0, session_epoch = -1;
    unsigned char isolation;
    PyObject *topics = NULL, *forgotten = NULL, *rack = NULL, *result = NULL;
    if ((version <= 14 && !read_i32(&r, &replica_id)) || !read_i32(&r, &max_wait) || !read_i32(&r, &min_bytes) ||
        !read_i32(&r, &max_bytes) || r.len - r.pos < 1)
        goto done;
    isolation = r.b[r.pos++];
    if (version >= 7 && (!read_i32(&r, &session_id) || !read_i32(&r, &session_epoch))) goto done;
    if ((topics = read_list(&r, version, read_fetch_topic)) == NULL) goto done;
    forgotten = version >= 7 ? read_list(&r, version, read_forgotten) : PyList_New(0);
    rack = forgotten == NULL ? NULL : version >= 11 ? read_name(&r) : Py_NewRef(empty_str);
    if (rack == NULL || !no_tags(&r)) goto done;
    PyObject *state_values[] = {PyLong_FromLong(-1), PyLong_FromLong(-1), Py_NewRef(Py_None)};
    PyObject *values[] = {Py_NewRef(Py_None), PyLong_FromLong(replica_id), build(Q_STATE, state_values),
                          PyLong_FromLong(max_wait), PyLong_FromLong(min_bytes), PyLong_FromLong(max_bytes),
                          PyLong_FromLong((signed char)isolation), PyLong_FromLong(session_id),
                          PyLong_FromLong(session_epoch), topics, forgotten, rack, Py_NewRef(Py_None)};
    topics = forgotten = rack = NULL; /* build() has them now */
    result = build(Q_REQ, values);
    *end = r.pos;
done:
    Py_XDECREF(topics);
    Py_XDECREF(forgotten);
    Py_XDECREF(rack);
    if (result != NULL) return result;
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError))
        PyErr_Clear(); /* a problem in the data: the generated reader will name it */
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *decode_request(PyObject *self, PyObject *args) {
    PyObject *frame;
    Py_ssize_t pos, end = 0;
    int version;
    if (!PyArg_ParseTuple(args, "Oni:decode_request", &frame, &pos, &version)) return NULL;
    PyObject *request = read_request(frame, pos, version, &end);
    if (request == NULL || request == Py_None) return request;
    return Py_BuildValue("(Nn)", request, end);
}

#endif
