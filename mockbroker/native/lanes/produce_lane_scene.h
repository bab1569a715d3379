/* What borrow() (produce_lane_staging.h) and the answers it writes share (api_versions_staging.h,
   kept_answers.h, lane_journal.h): the Scene one borrow() call reads once, the clocks, and the answers
   written to the connection (held for one send per read, or at once: direct_send.h). */
#ifndef MOCKBROKER_PRODUCE_LANE_SCENE_H
#define MOCKBROKER_PRODUCE_LANE_SCENE_H

#include <Python.h>
#include <string.h>
#include <time.h>

#include "member_sites.h"
#include "direct_send.h"

static PyObject *no_faults = NULL, *answered_name = NULL;
static PyObject *s_now_ms, *s_peer, *s_client_software, *s_transport, *s_closed, *s_last_active;

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* time.monotonic() and time.perf_counter() on Linux */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What every request of one borrow() call shares: read when its first Produce frame comes.  ``held``:
   the answers of a read's frames, written together when borrow() returns (one send for the read, as a
   client that pipelines its requests gets them), NULL where each answer is written at once. */
typedef struct {
    PyObject *cluster, *topics, *broker_generation, *cap, *journal, *clock, *held, *transport;
    long node_id;
    long long cap_limit;
    int journal_on, system_clock;
} Scene;

static void scene_free(Scene *sc) {
    Py_CLEAR(sc->cluster);
    Py_CLEAR(sc->topics);
    Py_CLEAR(sc->broker_generation);
    Py_CLEAR(sc->cap);
    Py_CLEAR(sc->journal);
    Py_CLEAR(sc->clock);
    Py_CLEAR(sc->held);
    Py_CLEAR(sc->transport);
}

/* Write the held answers (in one buffer) and forget them, unless the connection closed since they
   were made. */
static int write_held(Scene *sc, PyObject *conn) {
    Py_ssize_t n = sc->held == NULL ? 0 : PyList_GET_SIZE(sc->held);
    if (n == 0) return 0;
    static MemberSite closed_site;
    int closed = site_true(&closed_site, conn, s_closed);
    if (closed) return closed < 0 ? -1 : 0;
    PyObject *out = NULL;
    if (n == 1) {
        out = Py_NewRef(PyList_GET_ITEM(sc->held, 0));
    } else {
        Py_ssize_t total = 0;
        for (Py_ssize_t i = 0; i < n; i++) total += PyByteArray_GET_SIZE(PyList_GET_ITEM(sc->held, i));
        out = PyBytes_FromStringAndSize(NULL, total);
        if (out == NULL) return -1;
        char *at = PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *answer = PyList_GET_ITEM(sc->held, i);
            memcpy(at, PyByteArray_AS_STRING(answer), (size_t)PyByteArray_GET_SIZE(answer));
            at += PyByteArray_GET_SIZE(answer);
        }
    }
    int failed = PyList_SetSlice(sc->held, 0, n, NULL) < 0 || send_answer(conn, sc->transport, out) < 0;
    Py_DECREF(out);
    return failed ? -1 : 0;
}

static int now_ms_of(Scene *sc, long long *out) {
    if (sc->system_clock) { /* SystemClock.now_ms: time.time_ns() // 1_000_000 */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *out = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        return 0;
    }
    PyObject *value = PyObject_CallMethodNoArgs(sc->clock, s_now_ms);
    if (value == NULL) return -1;
    *out = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Connection.write of one answer (a bytearray): nothing goes to a closed connection. */
static int write_answer(Scene *sc, PyObject *conn, PyObject *answer) {
    static MemberSite closed_site, transport_site, last_active_site;
    int closed = site_true(&closed_site, conn, s_closed);
    if (closed) return closed < 0 ? -1 : 0;
    PyObject *transport = site_get(&transport_site, conn, s_transport);
    if (transport == NULL) return -1;
    int failed = 0;
    if (transport != Py_None) {
        PyObject *now = PyFloat_FromDouble(monotonic_s());
        failed = now == NULL || site_set(&last_active_site, conn, s_last_active, now) < 0;
        Py_XDECREF(now);
        if (!failed && sc->held != NULL && PyByteArray_CheckExact(answer)) {
            Py_XSETREF(sc->transport, Py_NewRef(transport));
            failed = PyList_Append(sc->held, answer) < 0;
        } else if (!failed) { /* written at once, after what is held (the lane's answers are bytearrays) */
            failed = write_held(sc, conn) < 0 || send_answer(conn, transport, answer) < 0;
        }
    }
    Py_DECREF(transport);
    return failed ? -1 : 0;
}

#endif
