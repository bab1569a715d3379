/* The usual Fetch from frame to answer (included by _fastfetch.c; includes the request reader, fetch_from_logs.h and
   fetch_wanted.h).

   fetch_lane(frame, version, correlation_id, topics, topics_by_id, broker_id, fetch_max_bytes, about_kind)
       -> (request, client_id, about, wanted, answer, bytes), or None
       ``frame``: a whole Fetch request frame (a memoryview) of ``version``.  For a request (v4-18) with
       its header well formed and without tagged fields, its body read by decode_request with nothing
       after it, no session (session_id 0 and epoch -1, or before v7), no forgotten topics, every
       partition found by wanted_from_request and read by from_logs: the decoded request, its client
       id, what the journal keeps of it (``(about_kind, (pairs, None))``, as faults.facts.journal_about
       makes it: each topic's name and its partitions in the request's order), the handler's Wanted
       list, and from_logs' frame and record bytes (None when fewer than min_bytes are there and the
       request will wait: nothing is written for it).  None otherwise, having changed nothing: the
       request takes the usual way (dispatch, the generated reader where the C one declines, the
       handler), which names any problem.  The caller decides between answering now and waiting
       (mockbroker/handlers/k01_fetch.serve). */
#ifndef MOCKBROKER_FETCH_LANE_H
#define MOCKBROKER_FETCH_LANE_H

#include <Python.h>

#include "fetch_request_reader.h"
#include "fetch_from_logs.h"
#include "fetch_wanted.h"

enum { QR_MAX_WAIT = 3, QR_MIN_BYTES = 4, QR_MAX_BYTES = 5, QR_ISOLATION = 6, QR_SESSION_ID = 7, QR_SESSION_EPOCH = 8, QR_TOPICS = 9, QR_FORGOTTEN = 10 };
enum { QT_TOPIC = 0, QT_ID = 1, QT_PARTS = 2 };
enum { QP_PARTITION = 0 };

/* The client id of a request header (frame[8:]); ``*pos`` moved past it (and the tag byte of a flexible
   header).  A new reference, Py_None for a null id, or NULL: not a usual header (no error set). */
static PyObject *header_client_id(const unsigned char *b, Py_ssize_t len, int flexible, Py_ssize_t *pos) {
    if (len < 10) return NULL;
    int16_t n = (int16_t)((b[8] << 8) | b[9]);
    PyObject *client_id;
    *pos = 10;
    if (n == -1) {
        client_id = Py_NewRef(Py_None);
    } else {
        if (n < 0 || 10 + (Py_ssize_t)n > len) return NULL;
        if ((client_id = PyUnicode_DecodeUTF8((const char *)b + 10, n, NULL)) == NULL) {
            PyErr_Clear(); /* not UTF-8: the usual way closes the connection and says so */
            return NULL;
        }
        *pos += n;
    }
    if (flexible) { /* no tagged fields in the header */
        if (*pos >= len || b[*pos] != 0) {
            Py_DECREF(client_id);
            return NULL;
        }
        *pos += 1;
    }
    return client_id;
}

/* The journal's pairs: (topic name, (partition, ...)) for each topic of the request. */
static PyObject *journal_pairs(PyObject *topics, PyObject *by_id, int use_ids) {
    Py_ssize_t count = PyList_GET_SIZE(topics);
    PyObject *pairs = PyTuple_New(count);
    for (Py_ssize_t i = 0; pairs != NULL && i < count; i++) {
        PyObject *t = PyList_GET_ITEM(topics, i), *name, *parts = QSLOT(t, Q_TOPIC, QT_PARTS);
        if (use_ids) {
            PyObject *topic = PyDict_GetItemWithError(by_id, QSLOT(t, Q_TOPIC, QT_ID)); /* borrowed: found before */
            name = topic == NULL ? NULL : from_log_get(topic, TP_NAME);
        } else {
            name = Py_NewRef(QSLOT(t, Q_TOPIC, QT_TOPIC));
        }
        PyObject *indexes = name == NULL ? NULL : PyTuple_New(PyList_GET_SIZE(parts));
        for (Py_ssize_t j = 0; indexes != NULL && j < PyList_GET_SIZE(parts); j++)
            PyTuple_SET_ITEM(indexes, j, Py_NewRef(QSLOT(PyList_GET_ITEM(parts, j), Q_PART, QP_PARTITION)));
        PyObject *pair = indexes == NULL ? NULL : PyTuple_Pack(2, name, indexes);
        Py_XDECREF(name);
        Py_XDECREF(indexes);
        if (pair == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a fetched topic went missing");
            Py_CLEAR(pairs);
            break;
        }
        PyTuple_SET_ITEM(pairs, i, pair);
    }
    return pairs;
}

static PyObject *fetch_lane(PyObject *self, PyObject *args) {
    PyObject *frame, *topics, *by_id, *about_kind;
    int version, correlation_id;
    long long broker_id, fetch_max_bytes;
    if (!PyArg_ParseTuple(args, "OiiO!O!LLO:fetch_lane", &frame, &version, &correlation_id, &PyDict_Type, &topics,
                          &PyDict_Type, &by_id, &broker_id, &fetch_max_bytes, &about_kind))
        return NULL;
    if (!ready || !request_ready || wanted_layout.type == NULL || version < 4 || version > 18 || !PyMemoryView_Check(frame))
        Py_RETURN_NONE;
    Py_buffer *view = PyMemoryView_GET_BUFFER(frame);
    if (view->itemsize != 1 || view->ndim != 1 || !PyBuffer_IsContiguous(view, 'C')) Py_RETURN_NONE;
    Py_ssize_t pos;
    PyObject *client_id = header_client_id(view->buf, view->len, version >= 12, &pos);
    if (client_id == NULL) Py_RETURN_NONE;
    PyObject *wanted = NULL, *got = NULL, *pairs = NULL, *result = NULL, *about = NULL;
    Py_ssize_t end = 0;
    PyObject *request = read_request(frame, pos, version, &end);
    if (request == NULL) goto done;
    if (request == Py_None || end != view->len) goto decline; /* (bytes after the body: the usual way logs them) */
    int64_t session_id, session_epoch, max_bytes, isolation;
    PyObject *topic_list = QSLOT(request, Q_REQ, QR_TOPICS), *forgotten = QSLOT(request, Q_REQ, QR_FORGOTTEN);
    if (!get_int(QSLOT(request, Q_REQ, QR_SESSION_ID), INT32_MIN, INT32_MAX, &session_id) ||
        !get_int(QSLOT(request, Q_REQ, QR_SESSION_EPOCH), INT32_MIN, INT32_MAX, &session_epoch) ||
        !get_int(QSLOT(request, Q_REQ, QR_MAX_BYTES), INT32_MIN, INT32_MAX, &max_bytes) ||
        !get_int(QSLOT(request, Q_REQ, QR_ISOLATION), -128, 127, &isolation) || !PyList_CheckExact(topic_list) ||
        !PyList_CheckExact(forgotten) || PyList_GET_SIZE(forgotten) != 0)
        goto decline;
    if (version >= 7 && (session_id != 0 || session_epoch != -1)) goto decline; /* a session: the handler's */
    int use_ids = version >= 13;
    if ((wanted = make_wanted(topic_list, use_ids ? by_id : topics, broker_id, use_ids)) == NULL) goto done;
    if (wanted == Py_None) goto decline;
    long long budget = max_bytes < fetch_max_bytes ? max_bytes : fetch_max_bytes;
    int64_t max_wait, min_bytes;
    int waits = get_int(QSLOT(request, Q_REQ, QR_MAX_WAIT), INT32_MIN, INT32_MAX, &max_wait) &&
                get_int(QSLOT(request, Q_REQ, QR_MIN_BYTES), INT32_MIN, INT32_MAX, &min_bytes) && max_wait > 0 &&
                min_bytes > 0;
    /* a request that will wait writes nothing while fewer than min_bytes are there */
    got = from_logs(wanted, version, correlation_id, broker_id, budget, (int)isolation, waits ? min_bytes : 0, 0,
                    Py_None, 0);
    if (got == NULL) goto done;
    if (got == Py_None) goto decline;
    if ((pairs = journal_pairs(topic_list, by_id, use_ids)) == NULL) goto done;
    PyObject *inner = PyTuple_Pack(2, pairs, Py_None);
    about = inner == NULL ? NULL : PyTuple_Pack(2, about_kind, inner);
    Py_XDECREF(inner);
    if (about != NULL)
        result = PyTuple_Pack(6, request, client_id, about, wanted, PyTuple_GET_ITEM(got, 0), PyTuple_GET_ITEM(got, 1));
    goto done;
decline:
    if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
done:
    Py_XDECREF(about);
    Py_XDECREF(client_id);
    Py_XDECREF(request);
    Py_XDECREF(wanted);
    Py_XDECREF(got);
    Py_XDECREF(pairs);
    return result;
}

#endif
