/* ApiVersions answered from a connection's staging buffer by borrow() (produce_lane_staging.h includes
   this; what it shares with borrow() -- Scene, the clock, write_answer -- is produce_lane_scene.h's,
   the journal entry lane_journal.h's).

   The first request of nearly every connection.  A well-formed request -- v0-4, no tagged fields,
   nothing after its body, a UTF-8 client id and (v3+) a client software name and version Kafka's
   rule accepts -- gets the handler's answer (k18_api_versions.usual_answer_body, called with the
   cluster and the version: the one Python call), the handler's journal entry (filed as Journal.start
   files it, with the connection's client software before this request) and, v3+, the connection's
   client_software set as the handler sets it.  Anything else is left to dispatch and the handler
   (tests/broker/test_api_versions_lane.py holds the two ways equal). */
#ifndef MOCKBROKER_API_VERSIONS_STAGING_H
#define MOCKBROKER_API_VERSIONS_STAGING_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "member_sites.h"
#include "produce_lane_slots.h"
#include "produce_lane_scene.h"
#include "lane_journal.h"

static PyObject *api_versions_fn = NULL, *nothing_about = NULL, *api_versions_name = NULL;
static long long api_versions_count = 0;

/* Kafka's rule for an ApiVersions v3+ client software name and version (ApiVersionsRequest.isValid):
   [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? */
static int software_ok(const unsigned char *s, Py_ssize_t n) {
    if (n < 1) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && ((c != '-' && c != '.') || i == 0 || i == n - 1)) return 0;
    }
    return 1;
}

/* A compact string of at most 126 bytes at h[*pos] (size: the frame's), or 0 (null, longer, cut short). */
static int short_compact_string(const unsigned char *h, Py_ssize_t size, Py_ssize_t *pos, const unsigned char **s,
                                Py_ssize_t *n) {
    if (*pos >= size || h[*pos] == 0 || h[*pos] >= 0x80) return 0;
    *n = h[*pos] - 1;
    *s = h + *pos + 1;
    *pos += 1 + *n;
    return *pos <= size;
}

/* One whole ApiVersions frame (``h``: its bytes after the size) answered as the handler answers it:
   1 answered, 0 left to dispatch (nothing changed), -1 error. */
static int answer_api_versions(Scene *sc, PyObject *conn, const unsigned char *h, Py_ssize_t size) {
    int version = h[2] << 8 | h[3];
    if (version > 4 || size < 10) return 0;
    int32_t correlation_id = (int32_t)((uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7]);
    int16_t client_len = (int16_t)(h[8] << 8 | h[9]);
    Py_ssize_t pos = 10;
    if (client_len < -1 || pos + (client_len > 0 ? client_len : 0) > size) return 0;
    const unsigned char *client = h + pos, *name = NULL, *software_version = NULL;
    pos += client_len > 0 ? client_len : 0;
    Py_ssize_t name_len = 0, version_len = 0;
    if (version >= 3) { /* header tagged fields, name, version, body tagged fields: none of either */
        if (pos >= size || h[pos] != 0) return 0;
        pos++;
        if (!short_compact_string(h, size, &pos, &name, &name_len) ||
            !short_compact_string(h, size, &pos, &software_version, &version_len) || pos >= size || h[pos] != 0)
            return 0;
        pos++;
        if (!software_ok(name, name_len) || !software_ok(software_version, version_len)) return 0;
    }
    if (pos != size) return 0; /* bytes after the body: the usual path says so */
    if (sc->journal_on && (entry_type == NULL || !Py_IS_TYPE(sc->journal, journal_type))) return 0;
    PyObject *client_id = client_len < 0 ? Py_NewRef(Py_None)
                                         : PyUnicode_DecodeUTF8((const char *)client, client_len, NULL);
    if (client_id == NULL) { /* not UTF-8: the usual path closes the connection */
        PyErr_Clear();
        return 0;
    }
    double started = monotonic_s();
    long long now_ms;
    PyObject *body = NULL, *answer = NULL, *software = NULL;
    int failed = now_ms_of(sc, &now_ms) < 0 ||
                 (body = PyObject_CallFunction(api_versions_fn, "Oi", sc->cluster, version)) == NULL;
    if (!failed && !PyBytes_Check(body)) {
        PyErr_SetString(PyExc_TypeError, "setup_api_versions: answer_body() must give bytes");
        failed = 1;
    }
    if (!failed) { /* size, correlation id (a v0 response header, always), body */
        Py_ssize_t n = PyBytes_GET_SIZE(body);
        answer = PyByteArray_FromStringAndSize(NULL, 8 + n);
        if (answer == NULL) {
            failed = 1;
        } else {
            unsigned char *a = (unsigned char *)PyByteArray_AS_STRING(answer);
            uint32_t framed = (uint32_t)(4 + n), corr = (uint32_t)correlation_id;
            for (int i = 0; i < 4; i++) {
                a[i] = (unsigned char)(framed >> (24 - 8 * i));
                a[4 + i] = (unsigned char)(corr >> (24 - 8 * i));
            }
            memcpy(a + 8, PyBytes_AS_STRING(body), (size_t)n);
        }
    }
    static MemberSite peer_site, software_site, set_software_site;
    if (!failed && sc->journal_on) { /* as Journal.start files it: the connection's software before this request */
        PyObject *peer = site_get(&peer_site, conn, s_peer), *before = site_get(&software_site, conn, s_client_software);
        failed = peer == NULL || before == NULL ||
                 file_answered(sc, peer, client_id, before, api_versions_name, 18, version, correlation_id,
                               nothing_about, no_faults, (monotonic_s() - started) * 1000.0, now_ms) < 0;
        Py_XDECREF(peer);
        Py_XDECREF(before);
    }
    if (!failed && version >= 3) { /* connection.client_software = f"{name}/{version}" */
        char joined[256]; /* two short compact strings (at most 126 bytes each) and the slash */
        memcpy(joined, name, (size_t)name_len);
        joined[name_len] = '/';
        memcpy(joined + name_len + 1, software_version, (size_t)version_len);
        software = PyUnicode_DecodeASCII(joined, name_len + 1 + version_len, NULL);
        failed = software == NULL || site_set(&set_software_site, conn, s_client_software, software) < 0;
    }
    if (!failed) failed = write_answer(sc, conn, answer) < 0;
    Py_XDECREF(software);
    Py_XDECREF(answer);
    Py_XDECREF(body);
    Py_DECREF(client_id);
    if (failed) return -1;
    api_versions_count++;
    return 1;
}

static PyObject *setup_api_versions(PyObject *self, PyObject *args) {
    PyObject *fn, *about;
    if (!PyArg_ParseTuple(args, "OO:setup_api_versions", &fn, &about)) return NULL;
    if (intern(&api_versions_name, "ApiVersions")) return NULL;
    Py_XSETREF(api_versions_fn, Py_NewRef(fn));
    Py_XSETREF(nothing_about, Py_NewRef(about));
    Py_RETURN_NONE;
}

static PyObject *api_versions_taken(PyObject *self, PyObject *unused) { return PyLong_FromLongLong(api_versions_count); }

#endif
