/* A long-polling Fetch answered from the logs (included by _fastfetch.c; includes fetch_from_logs.h): the C
   twin of mockbroker/handlers/k01_fetch._LongPoll for a fetch answer_from_logs takes.

   park(ctx, req, wanted, answer, loop, connection, version, correlation_id, broker_id, budget, isolation,
        min_bytes, wait_s)
       Makes a FetchWait and puts it where _LongPoll puts itself: on each wanted partition's log's
       listeners (an append calls it, and it asks the loop for one check however many appends come
       first), a timer at ``wait_s`` (loop.call_later), and ``answer``'s done callbacks (answered or
       cancelled: off the listeners, the timer cancelled).  A check reads the partitions with
       from_logs and settles ``answer`` (a mockbroker.handlers.pending.Pending) with Encoded(frame) once
       ``min_bytes`` are there or the connection has closed; the timer settles it with what is there.
       Where from_logs declines (a partition's leader or epoch moved meanwhile, a transaction opened)
       the handler's Python answers: ``fallback(ctx, req, wanted, answer, expired)`` (setup_wait).
   The broker's fetch.max.bytes is read when the request comes (``budget``), as Kafka fixes a fetch's
   parameters then. */
#ifndef MOCKBROKER_FETCH_WAIT_H
#define MOCKBROKER_FETCH_WAIT_H

#include <Python.h>

#include "member_sites.h"
#include "fetch_from_logs.h"

typedef struct {
    PyObject_HEAD
    PyObject *answer, *wanted, *logs, *loop, *timer, *connection, *ctx, *req;
    int version, correlation_id, isolation, scheduled;
    long long broker_id, budget, min_bytes;
} FetchWait;

static PyObject *encoded_type = NULL, *wait_fallback = NULL; /* setup_wait's */
static PyObject *s_settle, *s_call_soon, *s_call_later, *s_add_done_callback, *s_cancel, *s_state, *s_closed,
    *s_listeners, *s_check, *s_expire, *s_done;
static MemberSite state_site, closed_site, listeners_site;

static int wait_traverse(FetchWait *self, visitproc visit, void *arg) {
    Py_VISIT(self->answer);
    Py_VISIT(self->wanted);
    Py_VISIT(self->logs);
    Py_VISIT(self->loop);
    Py_VISIT(self->timer);
    Py_VISIT(self->connection);
    Py_VISIT(self->ctx);
    Py_VISIT(self->req);
    return 0;
}

static int wait_clear(FetchWait *self) {
    Py_CLEAR(self->answer);
    Py_CLEAR(self->wanted);
    Py_CLEAR(self->logs);
    Py_CLEAR(self->loop);
    Py_CLEAR(self->timer);
    Py_CLEAR(self->connection);
    Py_CLEAR(self->ctx);
    Py_CLEAR(self->req);
    return 0;
}

static void wait_dealloc(FetchWait *self) {
    PyObject_GC_UnTrack(self);
    wait_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* 1 while the answer is still to come, 0 when settled or cancelled, -1 on error. */
static int still_waiting(FetchWait *self) {
    if (self->answer == NULL || self->wanted == NULL) return 0;
    PyObject *state = site_get(&state_site, self->answer, s_state);
    if (state == NULL) return -1;
    int waiting = PyLong_CheckExact(state) && PyLong_AsLong(state) == 0;
    Py_DECREF(state);
    return waiting;
}

/* answer.settle(Encoded(frame)): 0, or -1 on error. */
static int settle_encoded(FetchWait *self, PyObject *frame) {
    PyObject *encoded = PyObject_CallOneArg(encoded_type, frame);
    if (encoded == NULL) return -1;
    PyObject *done = PyObject_CallMethodOneArg(self->answer, s_settle, encoded);
    Py_DECREF(encoded);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* Read the partitions and settle the answer when it is time (``expired``: whatever is there). */
static PyObject *wait_answer(FetchWait *self, int expired) {
    int waiting = still_waiting(self);
    if (waiting <= 0) return waiting < 0 ? NULL : Py_NewRef(Py_None);
    int now = expired; /* answer with what is there: the wait is over, or the connection closed */
    if (!now && self->connection != NULL) {
        PyObject *closed = site_get(&closed_site, self->connection, s_closed);
        now = closed == NULL ? -1 : PyObject_IsTrue(closed);
        Py_XDECREF(closed);
        if (now < 0) return NULL;
    }
    PyObject *got = from_logs(self->wanted, self->version, self->correlation_id, self->broker_id, self->budget,
                              self->isolation, now ? 0 : self->min_bytes, 0, Py_None, 0);
    if (got == NULL) return NULL;
    if (got == Py_None) { /* not the usual partitions any more: the handler's Python answers */
        Py_DECREF(got);
        PyObject *args[5] = {self->ctx, self->req, self->wanted, self->answer, expired ? Py_True : Py_False};
        return PyObject_Vectorcall(wait_fallback, args, 5, NULL);
    }
    PyObject *frame = PyTuple_GET_ITEM(got, 0); /* None: fewer than min_bytes yet */
    int failed = frame != Py_None && settle_encoded(self, frame) < 0;
    Py_DECREF(got);
    return failed ? NULL : Py_NewRef(Py_None);
}

static PyObject *wait_check(FetchWait *self, PyObject *unused) {
    self->scheduled = 0;
    return wait_answer(self, 0);
}

static PyObject *wait_expire(FetchWait *self, PyObject *unused) {
    return wait_answer(self, 1);
}

/* The answer's done callback: off the logs' listeners, the timer cancelled, what it held let go. */
static PyObject *wait_done(FetchWait *self, PyObject *answer) {
    for (Py_ssize_t i = 0; self->logs != NULL && i < PyList_GET_SIZE(self->logs); i++) {
        if (PyList_GET_ITEM(self->logs, i) == NULL) break; /* (park failed before this one) */
        PyObject *listeners = site_get(&listeners_site, PyList_GET_ITEM(self->logs, i), s_listeners);
        if (listeners == NULL) return NULL;
        if (PyList_CheckExact(listeners))
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(listeners); j++)
                if (PyList_GET_ITEM(listeners, j) == (PyObject *)self) {
                    if (PyList_SetSlice(listeners, j, j + 1, NULL) < 0) {
                        Py_DECREF(listeners);
                        return NULL;
                    }
                    break;
                }
        Py_DECREF(listeners);
    }
    if (self->timer != NULL) {
        PyObject *done = PyObject_CallMethodNoArgs(self->timer, s_cancel);
        if (done == NULL) return NULL;
        Py_DECREF(done);
    }
    Py_CLEAR(self->wanted);
    Py_CLEAR(self->logs);
    Py_CLEAR(self->timer);
    Py_CLEAR(self->ctx);
    Py_CLEAR(self->req);
    Py_CLEAR(self->connection);
    Py_RETURN_NONE;
}

/* An append to one of its partitions: one check on the loop's next pass. */
static PyObject *wait_call(FetchWait *self, PyObject *args, PyObject *kwargs) {
    if (self->scheduled || self->loop == NULL) Py_RETURN_NONE;
    PyObject *check = PyObject_GetAttr((PyObject *)self, s_check);
    if (check == NULL) return NULL;
    PyObject *handle = PyObject_CallMethodOneArg(self->loop, s_call_soon, check);
    Py_DECREF(check);
    if (handle == NULL) return NULL;
    Py_DECREF(handle);
    self->scheduled = 1;
    Py_RETURN_NONE;
}

static PyMethodDef wait_methods[] = {
    {"check", (PyCFunction)wait_check, METH_NOARGS, "Read the partitions; answer once min_bytes are there."},
    {"expire", (PyCFunction)wait_expire, METH_NOARGS, "The wait is over: answer with what is there."},
    {"done", (PyCFunction)wait_done, METH_O, "The answer's done callback: off the listeners, timer cancelled."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FetchWaitType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mockbroker.native._fastfetch.FetchWait",
    .tp_basicsize = sizeof(FetchWait),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A long-polling Fetch answered from the logs (fetch_wait.h).",
    .tp_traverse = (traverseproc)wait_traverse,
    .tp_clear = (inquiry)wait_clear,
    .tp_dealloc = (destructor)wait_dealloc,
    .tp_call = (ternaryfunc)wait_call,
    .tp_methods = wait_methods,
};

static PyObject *setup_wait(PyObject *self, PyObject *args) {
    PyObject *encoded, *fallback;
    if (!PyArg_ParseTuple(args, "OO:setup_wait", &encoded, &fallback)) return NULL;
    const char *names[] = {"settle", "call_soon", "call_later", "add_done_callback", "cancel", "state", "closed",
                           "listeners", "check", "expire", "done"};
    PyObject **slots[] = {&s_settle, &s_call_soon, &s_call_later, &s_add_done_callback, &s_cancel, &s_state,
                          &s_closed, &s_listeners, &s_check, &s_expire, &s_done};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (*slots[i] == NULL && (*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return NULL;
    if (PyType_Ready(&FetchWaitType) < 0) return NULL;
    Py_XSETREF(encoded_type, Py_NewRef(encoded));
    Py_XSETREF(wait_fallback, Py_NewRef(fallback));
    Py_RETURN_NONE;
}

static PyObject *park(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 13 || !PyList_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "park() takes 13 arguments, the third a list");
        return NULL;
    }
    PyObject *ctx = args[0], *req = args[1], *wanted = args[2], *answer = args[3], *loop = args[4],
             *connection = args[5];
    long long numbers[6]; /* version, correlation_id, broker_id, budget, isolation, min_bytes */
    for (int i = 0; i < 6; i++)
        if ((numbers[i] = PyLong_AsLongLong(args[6 + i])) == -1 && PyErr_Occurred()) return NULL;
    double wait_s = PyFloat_AsDouble(args[12]);
    if (wait_s == -1.0 && PyErr_Occurred()) return NULL;
    int version = (int)numbers[0], correlation_id = (int)numbers[1], isolation = (int)numbers[4];
    long long broker_id = numbers[2], budget = numbers[3], min_bytes = numbers[5];
    if (encoded_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "park() before setup_wait()");
        return NULL;
    }
    if (intern_sites() < 0) return NULL;
    FetchWait *wait = PyObject_GC_New(FetchWait, &FetchWaitType);
    if (wait == NULL) return NULL;
    wait->answer = Py_NewRef(answer);
    wait->wanted = Py_NewRef(wanted);
    wait->loop = Py_NewRef(loop);
    wait->connection = Py_NewRef(connection);
    wait->ctx = Py_NewRef(ctx);
    wait->req = Py_NewRef(req);
    wait->timer = NULL;
    wait->logs = PyList_New(PyList_GET_SIZE(wanted));
    wait->version = version;
    wait->correlation_id = correlation_id;
    wait->isolation = isolation;
    wait->scheduled = 0;
    wait->broker_id = broker_id;
    wait->budget = budget;
    wait->min_bytes = min_bytes;
    PyObject_GC_Track(wait);
    PyObject *result = NULL, *expire = NULL, *done = NULL, *delay = NULL;
    if (wait->logs == NULL) goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(wanted); i++) {
        PyObject *log = from_log_get(PyList_GET_ITEM(wanted, i), FW_LOG), *listeners;
        if (log == NULL) goto fail;
        PyList_SET_ITEM(wait->logs, i, log);
        if ((listeners = site_get(&listeners_site, log, s_listeners)) == NULL) goto fail;
        int failed = PyList_Append(listeners, (PyObject *)wait) < 0; /* itself: no bound method, no cycle */
        Py_DECREF(listeners);
        if (failed) goto fail;
    }
    if ((expire = PyObject_GetAttr((PyObject *)wait, s_expire)) == NULL || (delay = PyFloat_FromDouble(wait_s)) == NULL ||
        (wait->timer = PyObject_CallMethodObjArgs(loop, s_call_later, delay, expire, NULL)) == NULL)
        goto fail;
    if ((done = PyObject_GetAttr((PyObject *)wait, s_done)) == NULL) goto fail;
    PyObject *added = PyObject_CallMethodOneArg(answer, s_add_done_callback, done);
    if (added == NULL) goto fail;
    Py_DECREF(added);
    result = Py_NewRef(Py_None);
fail:
    if (result == NULL) { /* undo what was registered (the caller answers with an error) */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyObject *undone = wait_done(wait, NULL);
        Py_XDECREF(undone);
        PyErr_Clear();
        PyErr_Restore(type, value, traceback);
    }
    Py_XDECREF(expire);
    Py_XDECREF(done);
    Py_XDECREF(delay);
    Py_DECREF(wait);
    return result;
}

#endif
