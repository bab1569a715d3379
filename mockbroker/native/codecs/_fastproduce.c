/* Optional C codec for the one request every producer sends most: ProduceRequest decode and
   ProduceResponse encode, all versions (0-13), producing and reading the very objects of the
   generated codec (mockbroker/protocol/generated/produce_*.py).

   setup(ProduceRequest, TopicProduceData, PartitionProduceData, ProduceResponse,
         TopicProduceResponse, PartitionProduceResponse, LeaderIdAndEpoch, zero_uuid)
       Called once by mockbroker.protocol.fast_produce: finds where each slot of those classes lives.

   decode_request(frame, pos, version) -> (ProduceRequest, end) or None
       The request body starting at frame[pos] (frame: a memoryview of bytes).  None whenever the
       body is anything but well formed without tagged fields: the generated reader then runs and
       either decodes it (tagged fields) or names the problem.  This module never decides an error.

   encode_response(response, version, out) -> True or None
       Appends the body to the bytearray ``out`` when every field is what a usual answer holds (no
       record errors, default current leader, no node endpoints, no unknown tags, values in range);
       None (``out`` unchanged) otherwise, and the generated writer runs instead.

   tests/protocol/test_fast_produce.py holds both equal to the generated codec, on generated
   messages and on corrupted frames.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "wire_reader.h"
#include "wire_writer.h"

#define MAX_SLOTS 9

#include "struct_slots.h"

enum { REQ, TOPIC, PART, RESP, TRESP, PRESP, LEADER, LAYOUTS };

static const char *const SLOT_NAMES[LAYOUTS][MAX_SLOTS + 1] = {
    {"transactional_id", "acks", "timeout_ms", "topic_data", "unknown_tags", NULL},
    {"name", "topic_id", "partition_data", "unknown_tags", NULL},
    {"index", "records", "unknown_tags", NULL},
    {"responses", "throttle_time_ms", "node_endpoints", "unknown_tags", NULL},
    {"name", "topic_id", "partition_responses", "unknown_tags", NULL},
    {"index", "error_code", "base_offset", "log_append_time_ms", "log_start_offset", "record_errors",
     "error_message", "current_leader", "unknown_tags", NULL},
    {"leader_id", "leader_epoch", "unknown_tags", NULL},
};

static Layout layouts[LAYOUTS];
static PyObject *zero_uuid = NULL;
static PyObject *empty_str = NULL;
static int ready = 0;

#define SLOT(obj, layout, i) (*(PyObject **)((char *)(obj) + layouts[layout].offset[i]))

static int find_slots(int which, PyObject *cls) {
    return layout_of(&layouts[which], cls, SLOT_NAMES[which]);
}

static PyObject *setup(PyObject *self, PyObject *args) {
    PyObject *cls[LAYOUTS], *uuid;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:setup", &cls[0], &cls[1], &cls[2], &cls[3], &cls[4], &cls[5], &cls[6],
                          &uuid))
        return NULL;
    ready = 0;
    for (int i = 0; i < LAYOUTS; i++)
        if (find_slots(i, cls[i]) < 0)
            return NULL;
    Py_XSETREF(zero_uuid, Py_NewRef(uuid));
    if (empty_str == NULL && (empty_str = PyUnicode_FromString("")) == NULL)
        return NULL;
    ready = 1;
    Py_RETURN_NONE;
}

/* A new instance with every slot set from ``values`` (references stolen; all non-NULL). */
static PyObject *make(int which, PyObject **values) {
    Layout *layout = &layouts[which];
    PyObject *obj = layout->type->tp_alloc(layout->type, 0);
    if (obj == NULL) {
        for (int i = 0; i < layout->count; i++)
            Py_DECREF(values[i]);
        return NULL;
    }
    for (int i = 0; i < layout->count; i++)
        SLOT(obj, which, i) = values[i];
    return obj;
}

/* ---- decoding ------------------------------------------------------------------------------ */

/* A string; *out is None for null when ``nullable``; 0 on any problem (Python error cleared). */
static int read_string(Reader *r, int nullable, PyObject **out) {
    int64_t n;
    if (!read_size(r, 0, &n)) return 0;
    if (n < 0) {
        if (n != -1 || !nullable) return 0;
        *out = Py_NewRef(Py_None);
        return 1;
    }
    NEED(r, n);
    *out = PyUnicode_DecodeUTF8((const char *)r->b + r->pos, (Py_ssize_t)n, NULL);
    if (*out == NULL) {
        PyErr_Clear();
        return 0;
    }
    r->pos += (Py_ssize_t)n;
    return 1;
}


static PyObject *read_partition(Reader *r) {
    int32_t index;
    int64_t n;
    if (!read_i32(r, &index) || !read_size(r, 1, &n)) return NULL;
    PyObject *records;
    if (n < 0) {
        if (n != -1) return NULL;
        records = Py_NewRef(Py_None);
    } else {
        if (r->len - r->pos < n) return NULL;
        records = PySequence_GetSlice(r->frame, r->pos, r->pos + (Py_ssize_t)n);
        if (records == NULL) return NULL;
        r->pos += (Py_ssize_t)n;
    }
    if (!no_tags(r)) {
        Py_DECREF(records);
        return NULL;
    }
    PyObject *index_obj = PyLong_FromLong(index);
    if (index_obj == NULL) {
        Py_DECREF(records);
        return NULL;
    }
    PyObject *values[] = {index_obj, records, Py_NewRef(Py_None)};
    return make(PART, values);
}

static PyObject *read_topic(Reader *r, int version) {
    PyObject *name, *topic_id;
    if (version >= 13) {
        if (r->len - r->pos < 16) return NULL;
        topic_id = PyBytes_FromStringAndSize((const char *)r->b + r->pos, 16);
        if (topic_id == NULL) return NULL;
        r->pos += 16;
        name = Py_NewRef(empty_str);
    } else {
        if (!read_string(r, 0, &name)) return NULL;
        topic_id = Py_NewRef(zero_uuid);
    }
    Py_ssize_t count;
    PyObject *partitions = NULL;
    if (!read_count(r, &count) || (partitions = PyList_New(count)) == NULL) goto fail;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *part = read_partition(r);
        if (part == NULL) goto fail;
        PyList_SET_ITEM(partitions, i, part);
    }
    if (!no_tags(r)) goto fail;
    PyObject *values[] = {name, topic_id, partitions, Py_NewRef(Py_None)};
    return make(TOPIC, values);
fail:
    Py_DECREF(name);
    Py_DECREF(topic_id);
    Py_XDECREF(partitions);  /* a list only partly filled holds NULLs: list dealloc skips them */
    return NULL;
}

static PyObject *decode_request(PyObject *self, PyObject *args) {
    PyObject *frame;
    Py_ssize_t pos;
    int version;
    if (!PyArg_ParseTuple(args, "Oni:decode_request", &frame, &pos, &version))
        return NULL;
    if (!ready || !PyMemoryView_Check(frame) || version < 0 || version > 13)
        Py_RETURN_NONE;
    Py_buffer *view = PyMemoryView_GET_BUFFER(frame);
    if (view->itemsize != 1 || view->ndim != 1 || !PyBuffer_IsContiguous(view, 'C') || pos < 0 || pos > view->len)
        Py_RETURN_NONE;
    Reader r = {frame, (const unsigned char *)view->buf, view->len, pos, version >= 9};
    PyObject *txn_id = NULL, *topics = NULL, *acks_obj = NULL, *timeout_obj = NULL;
    int16_t acks;
    int32_t timeout;
    Py_ssize_t count;
    if (version >= 3) {
        if (!read_string(&r, 1, &txn_id)) goto fallback;
    } else {
        txn_id = Py_NewRef(Py_None);
    }
    if (!read_i16(&r, &acks) || !read_i32(&r, &timeout) || !read_count(&r, &count)) goto fallback;
    if ((topics = PyList_New(count)) == NULL) goto error;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *topic = read_topic(&r, version);
        if (topic == NULL) goto fallback;
        PyList_SET_ITEM(topics, i, topic);
    }
    if (!no_tags(&r)) goto fallback;
    if ((acks_obj = PyLong_FromLong(acks)) == NULL || (timeout_obj = PyLong_FromLong(timeout)) == NULL) goto error;
    PyObject *values[] = {txn_id, acks_obj, timeout_obj, topics, Py_NewRef(Py_None)};
    PyObject *request = make(REQ, values);
    if (request == NULL) return NULL;
    return Py_BuildValue("(Nn)", request, r.pos);
fallback:
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError))
        PyErr_Clear();  /* a problem in the data: the generated reader will name it */
error:
    Py_XDECREF(txn_id);
    Py_XDECREF(topics);
    Py_XDECREF(acks_obj);
    Py_XDECREF(timeout_obj);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ---- encoding ------------------------------------------------------------------------------ */

static int put_partition(Writer *w, PyObject *p, int version) {
    if (p == NULL || Py_TYPE(p) != layouts[PRESP].type || !is_empty(SLOT(p, PRESP, 8), 1)) return 0;
    if (!put_field(w, SLOT(p, PRESP, 0), 4) || !put_field(w, SLOT(p, PRESP, 1), 2) ||
        !put_field(w, SLOT(p, PRESP, 2), 8))
        return 0;
    if (version >= 2 && !put_field(w, SLOT(p, PRESP, 3), 8)) return 0;
    if (version >= 5 && !put_field(w, SLOT(p, PRESP, 4), 8)) return 0;
    if (version >= 8) {
        if (!is_empty(SLOT(p, PRESP, 5), 0) || !put_size(w, 0, 1) || !put_string(w, SLOT(p, PRESP, 6), 1)) return 0;
    }
    if (version >= 10) {  /* current_leader is a tagged field, written only when it is not the default */
        PyObject *leader = SLOT(p, PRESP, 7);
        int64_t id, epoch;
        if (leader == NULL || Py_TYPE(leader) != layouts[LEADER].type || !is_empty(SLOT(leader, LEADER, 2), 1) ||
            !get_int(SLOT(leader, LEADER, 0), -1, -1, &id) || !get_int(SLOT(leader, LEADER, 1), -1, -1, &epoch))
            return 0;
    }
    return !w->flexible || put_uvarint(w, 0);
}

static int put_topic(Writer *w, PyObject *t, int version) {
    if (t == NULL || Py_TYPE(t) != layouts[TRESP].type || !is_empty(SLOT(t, TRESP, 3), 1)) return 0;
    if (version >= 13) {
        PyObject *id = SLOT(t, TRESP, 1);
        if (id == NULL || !PyBytes_CheckExact(id) || PyBytes_GET_SIZE(id) != 16 || !grow(w, 16)) return 0;
        memcpy(w->buf + w->len, PyBytes_AS_STRING(id), 16);
        w->len += 16;
    } else if (!put_string(w, SLOT(t, TRESP, 0), 0)) {
        return 0;
    }
    PyObject *parts = SLOT(t, TRESP, 2);
    if (parts == NULL || !PyList_CheckExact(parts) || !put_size(w, PyList_GET_SIZE(parts), 1)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++)
        if (!put_partition(w, PyList_GET_ITEM(parts, i), version)) return 0;
    return !w->flexible || put_uvarint(w, 0);
}

static int put_response(Writer *w, PyObject *resp, int version) {
    if (Py_TYPE(resp) != layouts[RESP].type || !is_empty(SLOT(resp, RESP, 3), 1)) return 0;
    if (version >= 10 && !is_empty(SLOT(resp, RESP, 2), 0)) return 0;
    PyObject *topics = SLOT(resp, RESP, 0);
    if (topics == NULL || !PyList_CheckExact(topics) || !put_size(w, PyList_GET_SIZE(topics), 1)) return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topics); i++)
        if (!put_topic(w, PyList_GET_ITEM(topics, i), version)) return 0;
    if (version >= 1 && !put_field(w, SLOT(resp, RESP, 1), 4)) return 0;
    return !w->flexible || put_uvarint(w, 0);
}

static PyObject *encode_response(PyObject *self, PyObject *args) {
    PyObject *resp, *out;
    int version;
    if (!PyArg_ParseTuple(args, "OiO!:encode_response", &resp, &version, &PyByteArray_Type, &out))
        return NULL;
    if (!ready || version < 0 || version > 13)
        Py_RETURN_NONE;
    Writer w = {PyMem_Malloc(256), 0, 256, version >= 9};
    if (w.buf == NULL)
        return PyErr_NoMemory();
    PyObject *result = NULL;
    int ok = put_response(&w, resp, version);
    if (PyErr_Occurred()) goto done;
    if (!ok) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (append_to(&w, out) < 0) goto done;
    result = Py_NewRef(Py_True);
done:
    PyMem_Free(w.buf);
    return result;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(*generated classes, zero_uuid): learn where their slots live."},
    {"decode_request", decode_request, METH_VARARGS,
     "decode_request(frame, pos, version) -> (ProduceRequest, end) or None (see the module comment)."},
    {"encode_response", encode_response, METH_VARARGS,
     "encode_response(response, version, out) -> True, or None when the generated writer must run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mockbroker.native._fastproduce",
    "Optional C codec for ProduceRequest / ProduceResponse (see protocol/fast_produce.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__fastproduce(void) { return PyModule_Create(&module); }
