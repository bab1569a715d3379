/* Kept answers written from a connection's staging buffer by borrow() (produce_lane_staging.h includes
   this; what it shares with borrow() -- Scene, the clock, write_answer -- is produce_lane_scene.h's,
   file_answered lane_journal.h's).

   Requests some clients send again and again with the same bytes (every producer and consumer asks
   Metadata for its topics on each connection it opens) are answered from the answer kept for an equal
   request: the cluster's ``kept_answers`` dict, keyed (api key, version, the connection's listener,
   the request body's bytes), holds (its API's answer count, broker config generation, the answer frame
   with a zero correlation id, the journal's ``about``, the answer's error codes).  An entry is used
   while the count (mockbroker.state.answer_epoch: EPOCH for Metadata, BROKERS for FindCoordinator) and
   the config generation are what they were when it was made; otherwise, and for a body never seen,
   kept_answers.answer() (Python) decodes it, runs the handler as dispatch would -- only for requests
   its API calls ordinary, answered without side effects -- and gives the entry (kept or not), or None:
   the frame is left to dispatch, and so are equal ones while the entry it kept without a frame is
   current.

   The header is checked as dispatch reads it: a client id of UTF-8 (else dispatch closes the
   connection), and for flexible versions no header tagged fields (else dispatch decodes them). */
#ifndef MOCKBROKER_KEPT_ANSWERS_H
#define MOCKBROKER_KEPT_ANSWERS_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "member_sites.h"
#include "produce_lane_slots.h"
#include "produce_lane_scene.h"
#include "lane_journal.h"

#define KEPT_KEYS 128
static PyObject *kept_fn = NULL, *kept_names[KEPT_KEYS], *kept_epochs[KEPT_KEYS];
static int kept_flexible[KEPT_KEYS]; /* the first flexible version of a kept API (-1: none) */
static PyObject *s_kept_answers, *s_listener, *s_value;
static long long kept_count = 0, kept_made = 0;

/* 1 when the entry (a 5-tuple) was made at the current count (``counter``'s) and config generation */
static int kept_current(Scene *sc, PyObject *entry, PyObject *counter) {
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 5) return 0;
    static MemberSite value_site;
    PyObject *epoch = site_get(&value_site, counter, s_value);
    if (epoch == NULL) return -1;
    int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(entry, 0), epoch, Py_EQ);
    Py_DECREF(epoch);
    if (same == 1) same = PyObject_RichCompareBool(PyTuple_GET_ITEM(entry, 1), sc->broker_generation, Py_EQ);
    return same;
}

/* One whole frame (``h``: its bytes after the size) of a kept API: 1 answered, 0 left to dispatch
   (nothing changed), -1 error. */
static int answer_kept(Scene *sc, PyObject *broker, PyObject *conn, const unsigned char *h, Py_ssize_t size) {
    int api_key = h[1], version = h[2] << 8 | h[3];
    if (size < 10) return 0;
    int32_t correlation_id = (int32_t)((uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7]);
    int16_t client_len = (int16_t)(h[8] << 8 | h[9]);
    Py_ssize_t pos = 10 + (client_len > 0 ? client_len : 0);
    if (client_len < -1 || pos > size) return 0;
    if (kept_flexible[api_key] >= 0 && version >= kept_flexible[api_key]) { /* no header tagged fields */
        if (pos >= size || h[pos] != 0) return 0;
        pos++;
    }
    if (sc->journal_on && (entry_type == NULL || !Py_IS_TYPE(sc->journal, journal_type))) return 0;
    PyObject *client_id = client_len < 0 ? Py_NewRef(Py_None)
                                         : PyUnicode_DecodeUTF8((const char *)h + 10, client_len, NULL);
    if (client_id == NULL) { /* not UTF-8: dispatch closes the connection */
        PyErr_Clear();
        return 0;
    }
    double started = monotonic_s();
    long long now_ms;
    static MemberSite listener_site, kept_site, peer_site, software_site;
    PyObject *body = PyBytes_FromStringAndSize((const char *)h + pos, size - pos);
    PyObject *listener = body ? site_get(&listener_site, conn, s_listener) : NULL;
    PyObject *kept = listener ? site_get(&kept_site, sc->cluster, s_kept_answers) : NULL;
    PyObject *key = kept ? Py_BuildValue("(iiOO)", api_key, version, listener, body) : NULL;
    PyObject *entry = NULL, *answer = NULL;
    int failed = key == NULL || now_ms_of(sc, &now_ms) < 0;
    if (!failed && PyDict_CheckExact(kept)) {
        entry = PyDict_GetItemWithError(kept, key);
        int current = entry == NULL ? (PyErr_Occurred() ? -1 : 0) : kept_current(sc, entry, kept_epochs[api_key]);
        failed = current < 0;
        entry = current == 1 ? Py_NewRef(entry) : NULL;
        if (entry != NULL && PyTuple_GET_ITEM(entry, 2) == Py_None) Py_SETREF(entry, Py_NewRef(Py_None)); /* dispatch's */
    }
    if (!failed && entry == NULL) { /* never seen, or stale: made (and kept) by kept_answers.answer */
        entry = PyObject_CallFunction(kept_fn, "OOiiiOO", broker, conn, api_key, version, (int)correlation_id,
                                      client_id, body);
        failed = entry == NULL;
        if (!failed && entry != Py_None && (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 5 ||
                                            !PyBytes_Check(PyTuple_GET_ITEM(entry, 2)) ||
                                            PyBytes_GET_SIZE(PyTuple_GET_ITEM(entry, 2)) < 8)) {
            PyErr_SetString(PyExc_TypeError, "kept_answers.answer() must give None or a 5-tuple with the frame");
            failed = 1;
        }
        if (!failed && entry != Py_None) kept_made++;
    }
    int answered = !failed && entry != Py_None;
    if (answered) { /* the frame, with this request's correlation id */
        PyObject *frame = PyTuple_GET_ITEM(entry, 2);
        answer = PyByteArray_FromStringAndSize(PyBytes_AS_STRING(frame), PyBytes_GET_SIZE(frame));
        failed = answer == NULL;
        if (!failed) {
            unsigned char *a = (unsigned char *)PyByteArray_AS_STRING(answer);
            for (int i = 0; i < 4; i++) a[4 + i] = (unsigned char)((uint32_t)correlation_id >> (24 - 8 * i));
        }
    }
    if (answered && !failed && sc->journal_on) {
        PyObject *peer = site_get(&peer_site, conn, s_peer), *software = site_get(&software_site, conn, s_client_software);
        failed = peer == NULL || software == NULL ||
                 file_answered(sc, peer, client_id, software, kept_names[api_key], api_key, version, correlation_id,
                               PyTuple_GET_ITEM(entry, 3), PyTuple_GET_ITEM(entry, 4),
                               (monotonic_s() - started) * 1000.0, now_ms) < 0;
        Py_XDECREF(peer);
        Py_XDECREF(software);
    }
    if (answered && !failed) failed = write_answer(sc, conn, answer) < 0;
    Py_XDECREF(answer);
    Py_XDECREF(entry);
    Py_XDECREF(key);
    Py_XDECREF(kept);
    Py_XDECREF(listener);
    Py_XDECREF(body);
    Py_DECREF(client_id);
    if (failed) return -1;
    if (answered) kept_count++;
    return answered;
}

/* setup_kept_answers(answer, apis): ``apis`` maps each kept API's key to (its name, its first flexible
   version or -1, the answer count its answers depend on: an object whose ``value`` slot counts). */
static PyObject *setup_kept_answers(PyObject *self, PyObject *args) {
    PyObject *fn, *apis;
    if (!PyArg_ParseTuple(args, "OO!:setup_kept_answers", &fn, &PyDict_Type, &apis)) return NULL;
    if (intern(&s_kept_answers, "kept_answers") || intern(&s_listener, "listener") || intern(&s_value, "value"))
        return NULL;
    PyObject *key, *value;
    Py_ssize_t i = 0;
    while (PyDict_Next(apis, &i, &key, &value)) {
        long api_key = PyLong_AsLong(key);
        PyObject *name, *counter;
        int flexible;
        if (api_key == -1 && PyErr_Occurred()) return NULL;
        if (api_key < 0 || api_key >= KEPT_KEYS || api_key == 0 || api_key == 18) {
            PyErr_Format(PyExc_ValueError, "setup_kept_answers: api key %ld is not one the lane may keep", api_key);
            return NULL;
        }
        if (!PyArg_ParseTuple(value, "UiO:setup_kept_answers", &name, &flexible, &counter)) return NULL;
        Py_XSETREF(kept_names[api_key], Py_NewRef(name));
        Py_XSETREF(kept_epochs[api_key], Py_NewRef(counter));
        kept_flexible[api_key] = flexible;
    }
    Py_XSETREF(kept_fn, Py_NewRef(fn));
    Py_RETURN_NONE;
}

/* (requests answered from kept answers, entries kept_answers.answer() made for them) */
static PyObject *kept_taken(PyObject *self, PyObject *unused) { return Py_BuildValue("(LL)", kept_count, kept_made); }

#endif
