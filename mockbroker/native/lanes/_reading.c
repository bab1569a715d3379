/* The reading half of a server connection in C: asyncio.BufferedProtocol's get_buffer() and
   buffer_updated(), which the event loop calls around every read of every connection.

   mockbroker/server/connection.py keeps everything else (framing of what the lane leaves, the request
   loop, writing, closing) and a pure-Python twin of these two methods (PyReader), used where this
   extension is not built or MOCKBROKER_PURE_PYTHON is set.  Both keep their state in the same
   attributes (members here, slots there), so connection.py reads and writes them alike.  The usual
   read -- nothing queued, the C produce lane's borrow() answers every frame in it -- runs here with no
   Python call at all; the rest calls the connection's own methods, as the twin does:
   _split_staging (frames the lane left: the usual ones, whole and of allowed sizes, are queued here
   by split_usual instead), _failed_inside, _pause_reading and _process.  A large frame
   read into its own buffer is offered to borrow() whole (a third argument) once it is complete.
   tests/broker/test_framing.py and the ``frames`` fuzz target run both twins.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "frame_arena.h"

typedef struct {
    PyObject_HEAD
    PyObject *staging;    /* _staging: the memoryview the broker's connections share */
    PyObject *left;       /* _left: bytes of a partial frame, put back at the staging buffer's start */
    PyObject *frame;      /* _frame: None, or the buffer a large frame is read into */
    PyObject *frame_view; /* _frame_view */
    PyObject *queue;      /* _queue: frames read and not yet handled (a list) */
    PyObject *poison;     /* _poison: None, or why to close once the queue is answered */
    PyObject *borrow;     /* borrow: None, or the produce lane's borrow(connection, end[, frame]) */
    Py_ssize_t filled;    /* _filled: bytes of the large frame read so far */
    double last_active;   /* last_active: time.monotonic() of the last bytes read or written */
    char busy, closed, paused_reading;
} Reader;

static PyObject *s_lane_declined, *s_split_staging, *s_failed_inside, *s_pause_reading, *s_process;
static PyObject *empty_bytes, *no_frame; /* b"", and connection.py's _NO_FRAME once set_limits ran */
static Py_ssize_t max_queued_frames = 64;

static double monotonic_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* time.monotonic()'s clock */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The fields the two methods need, as connection.py sets them (a deleted one is an error, not a crash). */
static int fields_ready(Reader *self) {
    if (self->staging == NULL || self->left == NULL || self->frame == NULL || self->frame_view == NULL ||
        self->queue == NULL || self->poison == NULL || self->borrow == NULL || !PyList_Check(self->queue)) {
        PyErr_SetString(PyExc_AttributeError, "a connection's reading state is missing");
        return 0;
    }
    return 1;
}

static PyObject *call_method(Reader *self, PyObject *name, PyObject *arg) {
    return arg == NULL ? PyObject_CallMethodNoArgs((PyObject *)self, name)
                       : PyObject_CallMethodOneArg((PyObject *)self, name, arg);
}

/* get_buffer(sizehint): where the next read goes -- the rest of a large frame's own buffer, or the
   staging buffer after the partial frame left from the last read. */
static PyObject *get_buffer(Reader *self, PyObject *sizehint) {
    if (!fields_ready(self)) return NULL;
    if (self->frame != Py_None) return PySequence_GetSlice(self->frame_view, self->filled, PY_SSIZE_T_MAX);
    Py_buffer left, staging;
    if (PyObject_GetBuffer(self->left, &left, PyBUF_SIMPLE) < 0) return NULL;
    if (left.len == 0) {
        PyBuffer_Release(&left);
        return Py_NewRef(self->staging);
    }
    if (PyObject_GetBuffer(self->staging, &staging, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&left);
        return NULL;
    }
    Py_ssize_t n = left.len;
    int fits = n < staging.len;
    if (fits) memmove(staging.buf, left.buf, n);
    PyBuffer_Release(&staging);
    PyBuffer_Release(&left);
    if (!fits) {
        PyErr_SetString(PyExc_ValueError, "a partial frame larger than the staging buffer");
        return NULL;
    }
    return PySequence_GetSlice(self->staging, n, PY_SSIZE_T_MAX);
}

/* borrow(self, end[, frame]) -> its answer; on an Exception the connection's _failed_inside(exc) answers
   (*stop set) and anything else (KeyboardInterrupt) goes up to the loop. */
static int call_borrow(Reader *self, Py_ssize_t end, PyObject *frame, Py_ssize_t *answer, int *stop) {
    PyObject *end_obj = PyLong_FromSsize_t(end);
    if (end_obj == NULL) return -1;
    PyObject *args[3] = {(PyObject *)self, end_obj, frame};
    PyObject *borrow = Py_NewRef(self->borrow);
    PyObject *result = PyObject_Vectorcall(borrow, args, frame == NULL ? 2 : 3, NULL);
    Py_DECREF(borrow);
    Py_DECREF(end_obj);
    if (result == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL) PyException_SetTraceback(value, tb);
        PyObject *done = call_method(self, s_failed_inside, value);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        if (done == NULL) return -1;
        Py_DECREF(done);
        *stop = 1;
        return 0;
    }
    *answer = PyLong_AsSsize_t(result);
    Py_DECREF(result);
    return *answer == -1 && PyErr_Occurred() ? -1 : 0;
}

/* More of the large frame read into its own buffer.  Once it is whole it goes to the lane's
   borrow() when nothing is queued or pending (answered: dropped; refused: marked lane_declined so
   dispatch does not offer it again), else to the queue.  1: go on, 0: nothing more to do, -1: error. */
static int frame_filled(Reader *self, Py_ssize_t nbytes) {
    self->filled += nbytes;
    Py_ssize_t size = PyObject_Length(self->frame);
    if (size < 0) return -1;
    if (self->filled < size) return 0;
    PyObject *view = self->frame_view; /* the queue (or the lane) holds the frame from here */
    self->frame_view = Py_NewRef(no_frame);
    Py_SETREF(self->frame, Py_NewRef(Py_None));
    if (self->borrow != Py_None && PyList_GET_SIZE(self->queue) == 0 && !self->busy) {
        Py_ssize_t answer = 0;
        int stop = 0;
        if (call_borrow(self, 0, view, &answer, &stop) < 0 ||
            (!stop && answer < 0 && PyObject_SetAttr((PyObject *)self, s_lane_declined, view) < 0)) {
            Py_DECREF(view);
            return -1;
        }
        if (stop || answer == 1) {
            Py_DECREF(view);
            return stop ? 0 : 1;
        }
        if (!fields_ready(self)) { /* borrow() ran Python code */
            Py_DECREF(view);
            return -1;
        }
    }
    int appended = PyList_Append(self->queue, view);
    Py_DECREF(view);
    return appended < 0 ? -1 : 1;
}

/* connection._split_staging(pos, end) for the usual read: every frame in staging[pos:end] whole and of an
   allowed size (``max_request_bytes``), but perhaps a small partial one at the end (at most
   large_frame bytes announced).  Each whole frame copied out to the queue as a memoryview over bytes
   (the one at a negative ``pos`` -- ~pos -- marked lane_declined), the partial start kept in _left.
   1 done, 0 not the usual read (nothing changed: the Python method decides), -1 error. */
static Py_ssize_t large_frame = 32 * 1024;
static PyObject *s_max_request_bytes;

static int split_usual(Reader *self, Py_ssize_t pos, Py_ssize_t end) {
    int declined = pos < 0;
    if (declined) pos = ~pos;
    if (!PyMemoryView_Check(self->staging)) return 0;
    Py_buffer *view = PyMemoryView_GET_BUFFER(self->staging);
    if (view->itemsize != 1 || view->ndim != 1 || end > view->len || pos > end) return 0;
    PyObject *limit_obj = PyObject_GetAttr((PyObject *)self, s_max_request_bytes);
    if (limit_obj == NULL) return -1;
    long long limit = PyLong_AsLongLong(limit_obj);
    Py_DECREF(limit_obj);
    if (limit == -1 && PyErr_Occurred()) return -1;
    const unsigned char *b = view->buf;
    Py_ssize_t at = pos;
    while (end - at >= 4) { /* a first look: anything unusual is the Python method's */
        int32_t size = (int32_t)(((uint32_t)b[at] << 24) | ((uint32_t)b[at + 1] << 16) | ((uint32_t)b[at + 2] << 8) |
                                 (uint32_t)b[at + 3]);
        if (size < 0 || size > limit) return 0;
        if (end - at - 4 < size) {
            if (size > large_frame) return 0;
            break;
        }
        at += 4 + (Py_ssize_t)size;
    }
    while (end - pos >= 4) {
        Py_ssize_t size = (Py_ssize_t)(((uint32_t)b[pos] << 24) | ((uint32_t)b[pos + 1] << 16) |
                                       ((uint32_t)b[pos + 2] << 8) | (uint32_t)b[pos + 3]);
        if (end - pos - 4 < size) break;
        PyObject *copy = PyBytes_FromStringAndSize((const char *)b + pos + 4, size);
        PyObject *frame = copy == NULL ? NULL : PyMemoryView_FromObject(copy);
        Py_XDECREF(copy);
        int failed = frame == NULL || (declined && PyObject_SetAttr((PyObject *)self, s_lane_declined, frame) < 0) ||
                     PyList_Append(self->queue, frame) < 0;
        Py_XDECREF(frame);
        if (failed) return -1;
        declined = 0;
        pos += 4 + size;
    }
    PyObject *left = pos < end ? PyBytes_FromStringAndSize((const char *)b + pos, end - pos) : Py_NewRef(empty_bytes);
    if (left == NULL) return -1;
    Py_XSETREF(self->left, left);
    return 1;
}

/* buffer_updated(nbytes): the read is in; frames that came whole are answered (by the lane's borrow())
   or queued and handled in order. */
static PyObject *buffer_updated(Reader *self, PyObject *arg) {
    Py_ssize_t nbytes = PyLong_AsSsize_t(arg);
    if (nbytes == -1 && PyErr_Occurred()) return NULL;
    if (!fields_ready(self)) return NULL;
    if (self->closed || self->poison != Py_None) Py_RETURN_NONE;
    self->last_active = monotonic_now();
    if (self->frame != Py_None) {
        int go_on = frame_filled(self, nbytes);
        if (go_on <= 0) return go_on < 0 ? NULL : Py_NewRef(Py_None);
    } else {
        Py_ssize_t left = PyObject_Length(self->left);
        if (left < 0) return NULL;
        Py_ssize_t end = left + nbytes, start = 0;
        if (self->borrow != Py_None && PyList_GET_SIZE(self->queue) == 0 && !self->busy) {
            int stop = 0;
            if (call_borrow(self, end, NULL, &start, &stop) < 0) return NULL;
            if (stop) Py_RETURN_NONE;
        }
        if (start == end) {
            Py_XSETREF(self->left, Py_NewRef(empty_bytes));
        } else {
            int split = split_usual(self, start, end);
            if (split < 0) return NULL;
            if (split > 0) goto queued;
            PyObject *from = PyLong_FromSsize_t(start), *to = PyLong_FromSsize_t(end);
            PyObject *args[3] = {(PyObject *)self, from, to};
            PyObject *done = from && to ? PyObject_VectorcallMethod(s_split_staging, args, 3, NULL) : NULL;
            Py_XDECREF(from);
            Py_XDECREF(to);
            if (done == NULL) return NULL;
            Py_DECREF(done);
            if (self->closed) Py_RETURN_NONE;
        }
    }
queued:
    if (!fields_ready(self)) return NULL; /* the calls above ran Python code */
    if (PyList_GET_SIZE(self->queue) > max_queued_frames) {
        PyObject *done = call_method(self, s_pause_reading, NULL);
        if (done == NULL) return NULL;
        Py_DECREF(done);
    }
    if (!self->busy && (PyList_GET_SIZE(self->queue) > 0 || self->poison != Py_None || self->paused_reading)) {
        PyObject *done = call_method(self, s_process, NULL);
        if (done == NULL) return NULL;
        Py_DECREF(done);
    }
    Py_RETURN_NONE;
}

static PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Reader *self = (Reader *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->staging = Py_NewRef(Py_None);
    self->left = Py_NewRef(empty_bytes);
    self->frame = Py_NewRef(Py_None);
    self->frame_view = Py_NewRef(no_frame);
    self->queue = PyList_New(0);
    self->poison = Py_NewRef(Py_None);
    self->borrow = Py_NewRef(Py_None);
    if (self->queue == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int reader_traverse(Reader *self, visitproc visit, void *arg) {
    Py_VISIT(self->staging);
    Py_VISIT(self->left);
    Py_VISIT(self->frame);
    Py_VISIT(self->frame_view);
    Py_VISIT(self->queue);
    Py_VISIT(self->poison);
    Py_VISIT(self->borrow);
    return 0;
}

static int reader_clear(Reader *self) {
    Py_CLEAR(self->staging);
    Py_CLEAR(self->left);
    Py_CLEAR(self->frame);
    Py_CLEAR(self->frame_view);
    Py_CLEAR(self->queue);
    Py_CLEAR(self->poison);
    Py_CLEAR(self->borrow);
    return 0;
}

static void reader_dealloc(Reader *self) {
    PyObject_GC_UnTrack(self);
    reader_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef reader_members[] = {
    {"_staging", T_OBJECT_EX, offsetof(Reader, staging), 0, NULL},
    {"_left", T_OBJECT_EX, offsetof(Reader, left), 0, NULL},
    {"_frame", T_OBJECT_EX, offsetof(Reader, frame), 0, NULL},
    {"_frame_view", T_OBJECT_EX, offsetof(Reader, frame_view), 0, NULL},
    {"_queue", T_OBJECT_EX, offsetof(Reader, queue), 0, NULL},
    {"_poison", T_OBJECT_EX, offsetof(Reader, poison), 0, NULL},
    {"borrow", T_OBJECT_EX, offsetof(Reader, borrow), 0, NULL},
    {"_filled", T_PYSSIZET, offsetof(Reader, filled), 0, NULL},
    {"last_active", T_DOUBLE, offsetof(Reader, last_active), 0, NULL},
    {"_busy", T_BOOL, offsetof(Reader, busy), 0, NULL},
    {"closed", T_BOOL, offsetof(Reader, closed), 0, NULL},
    {"_paused_reading", T_BOOL, offsetof(Reader, paused_reading), 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef reader_methods[] = {
    {"get_buffer", (PyCFunction)get_buffer, METH_O, "get_buffer(sizehint) -> where the next read goes."},
    {"buffer_updated", (PyCFunction)buffer_updated, METH_O, "buffer_updated(nbytes): a read is in."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mockbroker.native._reading.Reader",
    .tp_doc = "The reading half of a server connection (see mockbroker/server/connection.py).",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = reader_new,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_traverse = (traverseproc)reader_traverse,
    .tp_clear = (inquiry)reader_clear,
    .tp_members = reader_members,
    .tp_methods = reader_methods,
};

/* set_limits(max_queued_frames, no_frame[, large_frame]): connection.py's MAX_QUEUED_FRAMES (reading pauses
   past it), _NO_FRAME (the _frame_view of a connection not reading a large frame) and LARGE_FRAME (a
   partial frame announcing more gets a buffer of its own: _split_staging's Python does that). */
static PyObject *set_limits(PyObject *module, PyObject *args) {
    Py_ssize_t n;
    PyObject *sentinel;
    Py_ssize_t large = large_frame;
    if (!PyArg_ParseTuple(args, "nO|n:set_limits", &n, &sentinel, &large)) return NULL;
    max_queued_frames = n;
    large_frame = large;
    Py_XSETREF(no_frame, Py_NewRef(sentinel));
    Py_RETURN_NONE;
}

/* The pages under [at, at + size) present and writable in one call (MADV_POPULATE_WRITE, Linux 5.14+;
   elsewhere they fault in as recv writes): ``outward`` takes the partial pages at either end too. */
static void populate(char *at, Py_ssize_t size, int outward) {
#ifdef MADV_POPULATE_WRITE
    static uintptr_t page = 0;
    if (page == 0) {
        long size_of_page = sysconf(_SC_PAGESIZE);
        page = size_of_page > 0 ? (uintptr_t)size_of_page : 4096;
    }
    uintptr_t from = (uintptr_t)at, to = (uintptr_t)at + (uintptr_t)size;
    uintptr_t start = outward ? from & ~(page - 1) : (from + page - 1) & ~(page - 1);
    uintptr_t stop = outward ? (to + page - 1) & ~(page - 1) : to & ~(page - 1);
    if (stop > start) (void)madvise((void *)start, stop - start, MADV_POPULATE_WRITE); /* a hint: errors ignored */
#else
    (void)at, (void)size, (void)outward;
#endif
}

/* frame_buffer(size): a buffer of ``size`` bytes for one large frame, not zero-filled, its pages present:
   an ArenaFrame in huge pages (frame_arena.h), or else a bytearray.  bytearray(size) would write every
   byte once more before recv does and fault its pages in one by one; for the 128 KiB produce requests
   librdkafka sends for 100 B records that took about a tenth off the broker's CPU, huge pages a third
   more.  Its old contents are never seen: a frame is handled only once recv has filled all of it. */
static PyObject *frame_buffer(PyObject *module, PyObject *arg) {
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) return NULL;
    PyObject *buf = arena_frame(size);
    if (buf != NULL) {
        populate(((ArenaFrame *)buf)->buf, size, 1);
        return buf;
    }
    buf = PyByteArray_FromStringAndSize(NULL, size);
    if (buf == NULL) return NULL;
    populate(PyByteArray_AS_STRING(buf), size, 0);
    return buf;
}

static PyMethodDef module_methods[] = {
    {"set_limits", set_limits, METH_VARARGS, "set_limits(max_queued_frames, no_frame)."},
    {"arena_count", arena_count, METH_NOARGS, "arena_count() -> how many frame arenas are mapped now."},
    {"use_arenas", use_arenas, METH_O, "use_arenas(flag) -> the setting before: 1 huge-page arenas, 0 never, -1 as THP is set."},
    {"frame_buffer", frame_buffer, METH_O, "frame_buffer(size) -> an ArenaFrame or a bytearray, not zero-filled, its pages present."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mockbroker.native._reading",
    "Optional C reading half of server connections (see mockbroker/server/connection.py).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__reading(void) {
    if ((s_lane_declined = PyUnicode_InternFromString("lane_declined")) == NULL ||
        (s_split_staging = PyUnicode_InternFromString("_split_staging")) == NULL ||
        (s_max_request_bytes = PyUnicode_InternFromString("max_request_bytes")) == NULL ||
        (s_failed_inside = PyUnicode_InternFromString("_failed_inside")) == NULL ||
        (s_pause_reading = PyUnicode_InternFromString("_pause_reading")) == NULL ||
        (s_process = PyUnicode_InternFromString("_process")) == NULL ||
        (empty_bytes = PyBytes_FromStringAndSize(NULL, 0)) == NULL)
        return NULL;
    no_frame = Py_NewRef(empty_bytes); /* until set_limits */
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&ArenaFrameType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddObjectRef(m, "ArenaFrame", (PyObject *)&ArenaFrameType) < 0 ||
        PyModule_AddIntConstant(m, "ARENA_FRAME_MAX", ARENA_FRAME_MAX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
