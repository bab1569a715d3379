/* Produce frames answered from the connection's staging buffer, without a Python call per request.

   Included by _producelane.c; produce_frame() is produce_lane_frame.h's.  Connection.buffer_updated (server/connection.py)
   hands the bytes of one read to borrow() when the connection has nothing queued or pending; borrow()
   answers the leading whole Produce frames the lane takes (and ApiVersions, api_versions_staging.h, and
   requests with kept answers, kept_answers.h), in order, and tells where it stopped: at a frame that
   is not whole, not one of those, or that the lane refuses (then nothing changed for it and the
   connection copies it out and dispatches it as usual, without offering it to the lane again).  What
   produce_lane.serve does in Python around the lane for one request is done here for each: the same
   broker and connection state (produce_lane.usual_for's declaration, read by lane_usual.h), the memory cap's
   room, the journal entry (Journal.start), the answer written (Connection.write; straight to the socket
   where nothing waits in the transport: direct_send.h).

   setup_staging(lane_settings, produce_about, total_cap_key, system_clock_type, crc32c_function,
                 load_decompress, max_refreshes)
       Once, from produce_lane.py: the Python pieces borrow() calls (lane_settings(cluster, topic) when
       a topic's lane settings are missing or stale; the getters of the CRC and decompression functions,
       called on first use) and the constants it needs (MAX_REFRESHES as serve() uses it).
   borrow(broker, connection, end) -> int
       Answers Produce frames from ``connection._staging[:end]``.  Returns the offset of the first byte
       not consumed, or ``~offset`` when the lane refused the whole frame starting there.
   borrow(broker, connection, 0, frame) -> int
       A large frame read into its own buffer (``frame``: a memoryview of it, without the size), whole,
       with nothing queued: 1 answered, 0 left to dispatch (not a Produce, or the pre-checks say no),
       -1 refused by the lane.  Its stored batches are views of the frame as dispatch's way makes them.
   setup_journal(JournalEntry, Journal)
       Once: borrow() files its journal entries itself, as Journal.start files an answered one (the
       next number, JournalEntry's slots, appended to the ring), into journals of exactly that class.
   setup_api_versions(answer_body, about)
       Once: borrow() answers ApiVersions (v0-4), the first request of nearly every connection, too: a
       well-formed request whose client software name and version Kafka accepts, with no tagged
       fields and nothing after its body; anything else is dispatched.  ``answer_body(cluster,
       version)`` gives the handler's encoded answer (k18_api_versions.usual_answer_body), ``about``
       the journal's form of a request about nothing; the connection's client_software is set as the
       handler sets it (api_versions_staging.h).  api_versions_taken() counts them.
   setup_kept_answers(answer, apis)
       Once: borrow() answers requests of the APIs in ``apis`` (Metadata, FindCoordinator) that repeat
       byte for byte from the cluster's kept answers, and asks ``answer`` (kept_answers.answer) for those
       it has none of (kept_answers.h); kept_taken() counts them.
   enable_staging(flag) / staging_taken() -> int
       Tests turn borrowing off (as they turn dispatch's lane off) and count the requests it answered.
*/
#ifndef MOCKBROKER_PRODUCE_LANE_STAGING_H
#define MOCKBROKER_PRODUCE_LANE_STAGING_H

#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "member_sites.h"
#include "produce_lane_slots.h"
#include "produce_lane_frame.h"
#include "produce_lane_scene.h"
#include "direct_send.h"
#include "lane_journal.h"
#include "api_versions_staging.h"
#include "kept_answers.h"
#include "lane_usual.h"

static PyObject *lane_settings_fn = NULL, *produce_about = NULL, *total_cap_key = NULL, *system_clock_type = NULL,
                *crc32c_getter = NULL, *decompress_getter = NULL, *crc32c_fn = NULL, *decompress_fn = NULL,
                *produce_name = NULL;
static PyObject *s_cluster, *s_enabled, *s_broker_generation, *s_staging, *s_max_request_bytes, *s_memory_cap,
    *s_total, *s_values, *s_journal, *s_clock, *s_topics, *s_node_id;
static int staging_on = 1;

static long long staging_count = 0;

static int max_refreshes = 0; /* produce_lane.MAX_REFRESHES, from setup_staging */

static PyObject *setup_staging(PyObject *self, PyObject *args) {
    PyObject *settings, *about, *cap_key, *clock_type, *crc_get, *decompress_get;
    int refreshes;
    if (!PyArg_ParseTuple(args, "OOUOOOi:setup_staging", &settings, &about, &cap_key, &clock_type, &crc_get,
                          &decompress_get, &refreshes))
        return NULL;
    if (intern(&s_cluster, "cluster") || intern(&s_enabled, "enabled") ||
        intern(&s_broker_generation, "generation") || intern(&s_staging, "_staging") ||
        intern(&s_max_request_bytes, "max_request_bytes") || intern(&s_memory_cap, "memory_cap") ||
        intern(&s_total, "total") || intern(&s_values, "values") || intern(&s_journal, "journal") ||
        intern(&s_clock, "clock") || intern(&s_now_ms, "now_ms") || intern(&s_topics, "topics") ||
        intern(&s_node_id, "node_id") || intern(&s_peer, "peer") || intern(&s_client_software, "client_software") ||
        intern(&s_transport, "transport") || intern(&s_closed, "closed") ||
        intern(&s_write, "write") || intern(&s_last_active, "last_active") || intern(&produce_name, "Produce") ||
        intern(&answered_name, "answered") || direct_send_setup())
        return NULL;
    if (no_faults == NULL && (no_faults = PyTuple_New(0)) == NULL) return NULL;
    Py_XSETREF(lane_settings_fn, Py_NewRef(settings));
    Py_XSETREF(produce_about, Py_NewRef(about));
    Py_XSETREF(total_cap_key, Py_NewRef(cap_key));
    Py_XSETREF(system_clock_type, Py_NewRef(clock_type));
    Py_XSETREF(crc32c_getter, Py_NewRef(crc_get));
    Py_XSETREF(decompress_getter, Py_NewRef(decompress_get));
    max_refreshes = refreshes;
    Py_RETURN_NONE;
}

static PyObject *enable_staging(PyObject *self, PyObject *flag) {
    int on = PyObject_IsTrue(flag);
    if (on < 0) return NULL;
    staging_on = on;
    Py_RETURN_NONE;
}

static PyObject *staging_taken(PyObject *self, PyObject *unused) { return PyLong_FromLongLong(staging_count); }

/* 1 when the lane may be tried (as produce_lane.serve decides), 0 when not, -1 on error */
static int scene_load(Scene *sc, PyObject *broker) {
    static MemberSite cluster_site, config_site, values_site, generation_site, node_site, topics_site, cap_site,
        journal_site, clock_site, journal_on_site;
    int usual = usual_broker(broker); /* the declaration of produce_lane.py, handed over by setup_usual */
    if (usual <= 0) return usual;
    if ((sc->cluster = site_get(&cluster_site, broker, s_cluster)) == NULL) return -1;
    PyObject *config = site_get(&config_site, sc->cluster, s_config);
    if (config == NULL) return -1;
    PyObject *values = site_get(&values_site, config, s_values);
    sc->broker_generation = site_get(&generation_site, config, s_broker_generation);
    Py_DECREF(config);
    PyObject *limit = values && PyDict_Check(values) ? PyDict_GetItemWithError(values, total_cap_key) : NULL;
    int limit_ok = limit != NULL && PyLong_Check(limit);
    sc->cap_limit = limit_ok ? PyLong_AsLongLong(limit) : 0;
    Py_XDECREF(values);
    if (!limit_ok || sc->broker_generation == NULL || (sc->cap_limit == -1 && PyErr_Occurred())) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "borrow(): the broker config is not what it was");
        return -1;
    }
    PyObject *node = site_get(&node_site, broker, s_node_id);
    if (node == NULL) return -1;
    sc->node_id = PyLong_AsLong(node);
    Py_DECREF(node);
    if (sc->node_id == -1 && PyErr_Occurred()) return -1;
    if ((sc->topics = site_get(&topics_site, sc->cluster, s_topics)) == NULL ||
        (sc->cap = site_get(&cap_site, sc->cluster, s_memory_cap)) == NULL ||
        (sc->journal = site_get(&journal_site, sc->cluster, s_journal)) == NULL ||
        (sc->clock = site_get(&clock_site, sc->cluster, s_clock)) == NULL)
        return -1;
    if (!PyDict_Check(sc->topics)) return 0;
    if ((sc->journal_on = site_true(&journal_on_site, sc->journal, s_enabled)) < 0) return -1;
    sc->system_clock = Py_IS_TYPE(sc->clock, (PyTypeObject *)system_clock_type);
    return 1;
}

/* memory_cap.total: read (room) and, after an append, grown by what the lane counted */
static int cap_room(Scene *sc, Py_ssize_t *room) {
    if (sc->cap_limit < 0) {
        *room = -1;
        return 0;
    }
    static MemberSite total_site;
    PyObject *value = site_get(&total_site, sc->cap, s_total);
    if (value == NULL) return -1;
    long long total = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (total == -1 && PyErr_Occurred()) return -1;
    long long left = sc->cap_limit - total;
    *room = left < 0 ? 0 : left > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)left;
    return 0;
}

static int cap_grow(Scene *sc, PyObject *counted) {
    static MemberSite total_site, grown_site;
    PyObject *total = site_get(&total_site, sc->cap, s_total);
    if (total == NULL) return -1;
    PyObject *grown = PyNumber_Add(total, counted);
    Py_DECREF(total);
    if (grown == NULL) return -1;
    int failed = site_set(&grown_site, sc->cap, s_total, grown);
    Py_DECREF(grown);
    return failed;
}

/* The journal entry and the answer on the wire, for one request the lane took. */
static int finish_request(Scene *sc, PyObject *conn, PyObject *result, long long now_ms, int version,
                          int32_t correlation_id, double started) {
    PyObject *answer = PyTuple_GET_ITEM(result, 0), *counted = PyTuple_GET_ITEM(result, 1);
    PyObject *pairs = PyTuple_GET_ITEM(result, 2), *client_id = PyTuple_GET_ITEM(result, 3);
    if (cap_grow(sc, counted) < 0) return -1;
    if (pairs != Py_None) {
        static MemberSite peer_site, software_site;
        PyObject *peer = site_get(&peer_site, conn, s_peer), *software = site_get(&software_site, conn, s_client_software);
        PyObject *facts = PyTuple_Pack(2, pairs, Py_None);
        PyObject *about = facts ? PyTuple_Pack(2, produce_about, facts) : NULL; /* the journal's frozen form */
        Py_XDECREF(facts);
        double latency_ms = (monotonic_s() - started) * 1000.0;
        int failed = peer == NULL || software == NULL || about == NULL;
        if (!failed && entry_type != NULL && Py_IS_TYPE(sc->journal, journal_type)) {
            failed = file_answered(sc, peer, client_id, software, produce_name, 0, version, correlation_id, about,
                                   no_faults, latency_ms, now_ms) < 0;
        } else if (!failed) {
            PyObject *entry = PyObject_CallMethod(sc->journal, "start", "LlOOOOiiiO()ds", now_ms, sc->node_id, peer,
                                                  client_id, software, produce_name, 0, version, (int)correlation_id,
                                                  about, latency_ms, "answered");
            failed = entry == NULL;
            Py_XDECREF(entry);
        }
        Py_XDECREF(about);
        Py_XDECREF(peer);
        Py_XDECREF(software);
        if (failed) return -1;
    }
    return write_answer(sc, conn, answer);
}

/* One whole Produce frame (``frame``: its bytes after the size, ``h`` their start) through the lane:
   1 answered, 0 refused (nothing changed), -1 error.  ``borrowed``: the frame lies in the shared staging
   buffer, so every stored batch is copied out. */
static int answer_frame(Scene *sc, PyObject *conn, PyObject *frame, const unsigned char *h, int borrowed) {
    int version = h[2] << 8 | h[3];
    int32_t correlation_id = (int32_t)((uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7]);
    long long now_ms;
    Py_ssize_t room;
    /* the CRC and decompression functions load with the first Produce (not with an ApiVersions: start time) */
    if (crc32c_fn == NULL && (crc32c_fn = PyObject_CallNoArgs(crc32c_getter)) == NULL) return -1;
    if (decompress_fn == NULL && (decompress_fn = PyObject_CallNoArgs(decompress_getter)) == NULL) return -1;
    if (now_ms_of(sc, &now_ms) < 0 || cap_room(sc, &room) < 0) return -1;
    double started = monotonic_s();
    PyObject *result = NULL;
    for (int i = 0; i < max_refreshes; i++) {
        result = produce_frame(frame, version, sc->topics, sc->node_id, now_ms, sc->broker_generation, crc32c_fn,
                               decompress_fn, room, sc->journal_on, borrowed);
        if (result == NULL || result == Py_None || PyTuple_Check(result)) break;
        /* a Topic whose lane settings are missing or stale: produce_lane.lane_settings, then again */
        PyObject *fresh = PyObject_CallFunctionObjArgs(lane_settings_fn, sc->cluster, result, NULL);
        Py_CLEAR(result);
        if (fresh == NULL) break;
        Py_DECREF(fresh);
    }
    if (result == NULL && PyErr_Occurred()) return -1;
    if (result == NULL || !PyTuple_Check(result)) { /* refused, or settings kept changing */
        Py_XDECREF(result);
        return 0;
    }
    int done = finish_request(sc, conn, result, now_ms, version, correlation_id, started);
    Py_DECREF(result);
    if (done < 0) return -1;
    staging_count++;
    return 1;
}

/* borrow(broker, connection, 0, frame): a large frame read into its own buffer, whole, with nothing
   queued: 1 answered, 0 left to dispatch, -1 refused by the lane (dispatch must not offer it again). */
static PyObject *borrow_whole(PyObject *broker, PyObject *conn, PyObject *frame) {
    if (!PyMemoryView_Check(frame)) {
        PyErr_SetString(PyExc_TypeError, "borrow(): the frame must be a memoryview");
        return NULL;
    }
    Py_buffer *view = PyMemoryView_GET_BUFFER(frame);
    const unsigned char *h = (const unsigned char *)view->buf;
    if (view->len < 8 || h[0] || h[1]) return PyLong_FromLong(0); /* not a Produce: dispatched */
    Scene sc = {NULL};
    int may = scene_load(&sc, broker);
    int answered = may <= 0 ? may : answer_frame(&sc, conn, frame, h, 0);
    scene_free(&sc);
    if (answered < 0) return NULL;
    return PyLong_FromLong(may == 0 ? 0 : answered ? 1 : -1);
}

static PyObject *borrow(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "borrow(broker, connection, end[, frame])");
        return NULL;
    }
    PyObject *broker = args[0], *conn = args[1];
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (end == -1 && PyErr_Occurred()) return NULL;
    if (!staging_on || lane_settings_fn == NULL || stored_type == NULL) return PyLong_FromLong(0);
    static MemberSite staging_site, limit_site, closed_site;
    int usual = usual_connection(conn); /* (a SASL listener, ...: produce_lane.NOT_USUAL_ON_CONNECTION) */
    if (usual < 0) return NULL;
    if (!usual) return PyLong_FromLong(0);
    if (nargs == 4) return borrow_whole(broker, conn, args[3]);
    PyObject *staging = site_get(&staging_site, conn, s_staging), *limit = site_get(&limit_site, conn, s_max_request_bytes);
    Py_ssize_t max_bytes = limit ? PyLong_AsSsize_t(limit) : -1;
    Py_XDECREF(limit);
    if (staging == NULL || (max_bytes == -1 && PyErr_Occurred())) {
        Py_XDECREF(staging);
        return NULL;
    }
    if (!PyMemoryView_Check(staging) || PyMemoryView_GET_BUFFER(staging)->len < end || end < 0) {
        Py_DECREF(staging);
        PyErr_SetString(PyExc_ValueError, "borrow(): end lies past the staging buffer");
        return NULL;
    }
    const unsigned char *b = (const unsigned char *)PyMemoryView_GET_BUFFER(staging)->buf;
    Scene sc = {NULL};
    int scene = 0; /* 0 not read yet, 1 the lane may be tried */
    Py_ssize_t pos = 0;
    int refused = 0, failed = 0;
    while (end - pos >= 4) {
        int32_t size = (int32_t)((uint32_t)b[pos] << 24 | (uint32_t)b[pos + 1] << 16 | (uint32_t)b[pos + 2] << 8 |
                                 b[pos + 3]);
        if (size < 8 || size > max_bytes || end - pos - 4 < size) break; /* the connection decides */
        const unsigned char *h = b + pos + 4;
        int api_versions = !h[0] && h[1] == 18 && api_versions_fn != NULL && entry_type != NULL;
        int kept = !h[0] && h[1] < KEPT_KEYS && kept_names[h[1]] != NULL && kept_fn != NULL && entry_type != NULL;
        if ((h[0] || h[1]) && !api_versions && !kept) break; /* not one the lane answers: dispatched in turn */
        if (pos > 0) { /* as Connection._process: nothing more is handled once the connection closed */
            int closed = site_true(&closed_site, conn, s_closed);
            if (closed) {
                failed = closed < 0;
                break;
            }
        }
        if (!scene) {
            int may = scene_load(&sc, broker);
            if (may <= 0) {
                failed = may < 0;
                break;
            }
            scene = 1;
            if ((sc.held = PyList_New(0)) == NULL) {
                failed = 1;
                break;
            }
        }
        if (api_versions || kept) {
            int answered = api_versions ? answer_api_versions(&sc, conn, h, size) : answer_kept(&sc, broker, conn, h, size);
            if (answered <= 0) { /* left to dispatch (which never offers it here again) */
                failed = answered < 0;
                break;
            }
            pos += 4 + (Py_ssize_t)size;
            continue;
        }
        PyObject *frame = PySequence_GetSlice(staging, pos + 4, pos + 4 + size);
        if (frame == NULL) {
            failed = 1;
            break;
        }
        int answered = answer_frame(&sc, conn, frame, h, 1);
        Py_DECREF(frame);
        if (answered <= 0) {
            failed = answered < 0;
            refused = answered == 0;
            break;
        }
        pos += 4 + (Py_ssize_t)size;
    }
    /* the answers of the frames taken go out before anything after them is dispatched (an error
       raised meanwhile is kept; the requests it did not stop were answered) */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (write_held(&sc, conn) < 0) {
        failed = 1;
        if (type != NULL) PyErr_Clear();
    }
    if (type != NULL) PyErr_Restore(type, value, traceback);
    scene_free(&sc);
    Py_DECREF(staging);
    if (failed) return NULL;
    return PyLong_FromSsize_t(refused ? ~pos : pos);
}

#define STAGING_METHODS                                                                                             \
    {"setup_staging", setup_staging, METH_VARARGS,                                                                  \
     "setup_staging(lane_settings, produce_about, total_cap_key, system_clock_type, crc32c_function,\n"             \
     "              load_decompress, max_refreshes)."},                                                                            \
        {"borrow", (PyCFunction)(void (*)(void))borrow, METH_FASTCALL,                                              \
         "borrow(broker, connection, end) -> offset, or ~offset of a frame the lane refused; "                      \
         "borrow(broker, connection, 0, frame) -> 1, 0 or -1 (see produce_lane_staging.h)."},                       \
        {"setup_journal", setup_journal, METH_VARARGS, "setup_journal(JournalEntry, Journal)."},                  \
        {"journal_start", (PyCFunction)(void (*)(void))journal_start, METH_FASTCALL,                              \
         "journal_start(journal, *Journal.start's arguments) -> JournalEntry or None (lane_journal.h)."},        \
        {"enable_staging", enable_staging, METH_O, "enable_staging(flag): borrow() answers nothing while off."},  \
        {"staging_taken", staging_taken, METH_NOARGS, "Produce requests borrow() has answered."},               \
        {"setup_api_versions", setup_api_versions, METH_VARARGS, "setup_api_versions(answer_body, about)."},      \
        {"api_versions_taken", api_versions_taken, METH_NOARGS, "ApiVersions requests borrow() has answered."},  \
        {"setup_kept_answers", setup_kept_answers, METH_VARARGS, "setup_kept_answers(answer, apis)."},            \
        {"kept_taken", kept_taken, METH_NOARGS,                                                               \
         "(requests borrow() answered from kept answers, of them answered by kept_answers.answer())."},       \
        {"direct_sends", direct_send_counts, METH_NOARGS,                                                    \
         "direct_sends() -> answers sent whole to the socket, in part, through the transport (direct_send.h)."},

#endif
