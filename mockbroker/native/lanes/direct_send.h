/* The produce lane's answers sent straight to the client's socket (included by produce_lane_scene.h).

   transport.write() of uvloop's TCP transport costs about a third of the broker's CPU per small Produce
   request beyond the write system call itself (perf, the 1,000/s latency load: 32 % in write, 22 % of
   it the syscall).  When the transport holds nothing unsent and is not closing, the socket is exactly
   where a write() from the event loop would go next, so the lane sends there itself (send(2),
   non-blocking, no SIGPIPE).  Whatever the socket does not take at once -- the rest of a partial send,
   or everything on EAGAIN or an error -- goes to transport.write(), which queues it behind nothing and
   reports errors its own way (it meets the same error and closes the connection).  Order is kept: once
   the transport holds bytes, every later answer goes through it until it has drained.

   Only connections whose ``socket_fd`` is set send directly: Connection.connection_made sets it for a
   plaintext TCP transport (never TLS, where the socket carries records the transport encrypts), and it
   goes back to -1 when the connection closes (the descriptor may be reused after that).
*/
#ifndef MOCKBROKER_DIRECT_SEND_H
#define MOCKBROKER_DIRECT_SEND_H

#include <Python.h>
#include <errno.h>
#include <sys/socket.h>

#include "member_sites.h"
#include "produce_lane_slots.h"

static PyObject *s_socket_fd, *s_write_buffer_size, *s_is_closing;
static PyObject *s_write; /* "write", interned by setup_staging (produce_lane_staging.h) */
/* answers the socket took whole, answers it took a part of, answers that went to the transport whole */
static long long sent_whole = 0, sent_part = 0, sent_through = 0;

static int direct_send_setup(void) {
    return intern(&s_socket_fd, "socket_fd") || intern(&s_write_buffer_size, "get_write_buffer_size") ||
           intern(&s_is_closing, "is_closing");
}

/* The connection's socket when an answer may go straight to it now, else -1 (-2 with an error set). */
static int direct_fd(PyObject *conn, PyObject *transport) {
    static MemberSite fd_site;
    PyObject *value = site_get(&fd_site, conn, s_socket_fd);
    if (value == NULL) return -2;
    long fd = PyLong_AsLong(value);
    Py_DECREF(value);
    if (fd == -1 && PyErr_Occurred()) return -2;
    if (fd < 0) return -1;
    PyObject *pending = PyObject_CallMethodNoArgs(transport, s_write_buffer_size);
    if (pending == NULL) return -2;
    int unsent = PyObject_IsTrue(pending);
    Py_DECREF(pending);
    if (unsent) return unsent < 0 ? -2 : -1;
    PyObject *closing = PyObject_CallMethodNoArgs(transport, s_is_closing);
    if (closing == NULL) return -2;
    int open = closing == Py_False;
    Py_DECREF(closing);
    return open ? (int)fd : -1;
}

/* transport.write(out[start:]) (0, or -1 with an error set). */
static int transport_write_from(PyObject *transport, PyObject *out, Py_ssize_t start) {
    PyObject *rest = start == 0 ? Py_NewRef(out) : PySequence_GetSlice(out, start, PY_SSIZE_T_MAX);
    if (rest == NULL) return -1;
    PyObject *done = PyObject_CallMethodOneArg(transport, s_write, rest);
    Py_DECREF(rest);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* Send ``out`` (bytes or a bytearray) to the client: straight to the socket where the connection
   allows it, the rest (or all of it) through ``transport``.  0, or -1 with an error set. */
static int send_answer(PyObject *conn, PyObject *transport, PyObject *out) {
    int fd = direct_fd(conn, transport);
    if (fd == -2) return -1;
    if (fd < 0) {
        sent_through++;
        return transport_write_from(transport, out, 0);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(out, &view, PyBUF_SIMPLE) < 0) return -1;
    ssize_t sent;
    do {
        sent = send(fd, view.buf, (size_t)view.len, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    Py_ssize_t total = view.len;
    PyBuffer_Release(&view);
    if (sent == total) {
        sent_whole++;
        return 0;
    }
    if (sent > 0)
        sent_part++;
    else
        sent_through++;
    return transport_write_from(transport, out, sent > 0 ? (Py_ssize_t)sent : 0);
}

static PyObject *direct_send_counts(PyObject *self, PyObject *unused) {
    return Py_BuildValue("(LLL)", sent_whole, sent_part, sent_through);
}

#endif
