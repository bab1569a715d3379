/* The broker and connection state that keeps requests from the produce lane ("not usual"), read by
   borrow() (produce_lane_staging.h) from the declaration mockbroker/handlers/produce_lane.py hands
   over once: C keeps no list of its own, and produce_lane.usual_for reads the same declaration.

   setup_usual(connection_paths, broker_paths, config_values_path, config_names)
       Once, from produce_lane.py: NOT_USUAL_ON_CONNECTION and NOT_USUAL_WHILE as tuples of attribute
       names (handlers/lane_state.split), where the broker's config values are (lane_state.CONFIG_VALUES,
       split) and NOT_USUAL_WITH_CONFIG.  Until it is called nothing is usual.
   usual(broker, connection) -> bool
       The verdict borrow() acts on, for tests to hold against produce_lane.usual_for.

   Each path is read from the connection or the broker through member sites (member_sites.h: a slot
   is read without a Python call) and keeps requests away while its value is truthy; each config name
   while ``values[name]`` is truthy (a missing name is not). */
#ifndef MOCKBROKER_LANE_USUAL_H
#define MOCKBROKER_LANE_USUAL_H

#include <Python.h>
#include <string.h>

#include "member_sites.h"

#define USUAL_PATHS 16 /* paths of one kind; setup_usual refuses more */
#define USUAL_STEPS 6  /* attribute names in one path */

typedef struct {
    int steps;
    PyObject *names[USUAL_STEPS];
    MemberSite sites[USUAL_STEPS];
} UsualPath;

typedef struct {
    int count;
    UsualPath paths[USUAL_PATHS];
} UsualPaths;

static UsualPaths usual_on_connection, usual_on_broker, usual_values_path;
static PyObject *usual_config_names = NULL; /* a tuple of str; NULL until setup_usual: nothing is usual */

static void usual_paths_clear(UsualPaths *set) {
    for (int i = 0; i < set->count; i++)
        for (int s = 0; s < set->paths[i].steps; s++) Py_CLEAR(set->paths[i].names[s]);
    memset(set, 0, sizeof *set);
}

/* ``given``: a tuple of paths, each a tuple of attribute names (0, or -1 with an exception set). */
static int usual_paths_set(UsualPaths *set, PyObject *given, const char *what) {
    usual_paths_clear(set);
    if (!PyTuple_Check(given) || PyTuple_GET_SIZE(given) > USUAL_PATHS) {
        PyErr_Format(PyExc_ValueError, "setup_usual: %s must be a tuple of at most %d paths", what, USUAL_PATHS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(given); i++) {
        PyObject *path = PyTuple_GET_ITEM(given, i);
        if (!PyTuple_Check(path) || PyTuple_GET_SIZE(path) < 1 || PyTuple_GET_SIZE(path) > USUAL_STEPS) {
            PyErr_Format(PyExc_ValueError, "setup_usual: each path of %s must be a tuple of 1 to %d names", what,
                         USUAL_STEPS);
            return -1;
        }
        UsualPath *p = &set->paths[set->count++];
        for (Py_ssize_t s = 0; s < PyTuple_GET_SIZE(path); s++) {
            PyObject *name = PyTuple_GET_ITEM(path, s);
            if (!PyUnicode_CheckExact(name)) {
                PyErr_Format(PyExc_TypeError, "setup_usual: the names of %s's paths must be str", what);
                return -1;
            }
            Py_INCREF(name);
            PyUnicode_InternInPlace(&name);
            p->names[p->steps++] = name;
        }
    }
    return 0;
}

/* The value at the end of ``path`` from ``root``: a new reference, or NULL with an exception set. */
static PyObject *usual_path_value(UsualPath *path, PyObject *root) {
    PyObject *obj = Py_NewRef(root);
    for (int s = 0; s < path->steps && obj != NULL; s++) {
        PyObject *next = site_get(&path->sites[s], obj, path->names[s]);
        Py_DECREF(obj);
        obj = next;
    }
    return obj;
}

/* 1 when the value of any of the paths from ``root`` is truthy, 0 when none is, -1 on error. */
static int usual_any_true(UsualPaths *set, PyObject *root) {
    for (int i = 0; i < set->count; i++) {
        PyObject *value = usual_path_value(&set->paths[i], root);
        if (value == NULL) return -1;
        int truth = PyObject_IsTrue(value);
        Py_DECREF(value);
        if (truth) return truth;
    }
    return 0;
}

/* 1 when the connection's state lets the lane take its requests, 0 when not, -1 on error. */
static int usual_connection(PyObject *conn) {
    if (usual_config_names == NULL) return 0;
    int blocked = usual_any_true(&usual_on_connection, conn);
    return blocked < 0 ? -1 : !blocked;
}

/* 1 when the broker's state and config let the lane take requests, 0 when not, -1 on error. */
static int usual_broker(PyObject *broker) {
    if (usual_config_names == NULL) return 0;
    int blocked = usual_any_true(&usual_on_broker, broker);
    if (blocked || PyTuple_GET_SIZE(usual_config_names) == 0) return blocked < 0 ? -1 : !blocked;
    PyObject *values = usual_path_value(&usual_values_path.paths[0], broker);
    if (values == NULL) return -1;
    if (!PyDict_Check(values)) {
        Py_DECREF(values);
        PyErr_SetString(PyExc_TypeError, "the lane's usual state: the broker's config values are not a dict");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(usual_config_names) && !blocked; i++) {
        PyObject *value = PyDict_GetItemWithError(values, PyTuple_GET_ITEM(usual_config_names, i));
        if (value == NULL) {
            blocked = PyErr_Occurred() ? -1 : 0;
            continue;
        }
        Py_INCREF(value);
        blocked = PyObject_IsTrue(value);
        Py_DECREF(value);
    }
    Py_DECREF(values);
    return blocked < 0 ? -1 : !blocked;
}

static PyObject *setup_usual(PyObject *self, PyObject *args) {
    PyObject *connection_paths, *broker_paths, *values_path, *config_names;
    if (!PyArg_ParseTuple(args, "O!O!O!O!:setup_usual", &PyTuple_Type, &connection_paths, &PyTuple_Type,
                          &broker_paths, &PyTuple_Type, &values_path, &PyTuple_Type, &config_names))
        return NULL;
    Py_CLEAR(usual_config_names); /* nothing is usual until all of it is set */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(config_names); i++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(config_names, i))) {
            PyErr_SetString(PyExc_TypeError, "setup_usual: config names must be str");
            return NULL;
        }
    }
    PyObject *values_paths = PyTuple_Pack(1, values_path);
    if (values_paths == NULL) return NULL;
    int failed = usual_paths_set(&usual_on_connection, connection_paths, "connection_paths") < 0 ||
                 usual_paths_set(&usual_on_broker, broker_paths, "broker_paths") < 0 ||
                 usual_paths_set(&usual_values_path, values_paths, "config_values_path") < 0;
    Py_DECREF(values_paths);
    if (failed) return NULL;
    usual_config_names = Py_NewRef(config_names);
    Py_RETURN_NONE;
}

static PyObject *usual(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "usual(broker, connection)");
        return NULL;
    }
    int verdict = usual_connection(args[1]);
    if (verdict == 1) verdict = usual_broker(args[0]);
    if (verdict < 0) return NULL;
    return PyBool_FromLong(verdict);
}

#define USUAL_METHODS                                                                                               \
    {"setup_usual", setup_usual, METH_VARARGS,                                                                      \
     "setup_usual(connection_paths, broker_paths, config_values_path, config_names) (lane_usual.h)."},             \
        {"usual", (PyCFunction)(void (*)(void))usual, METH_FASTCALL,                                                \
         "usual(broker, connection) -> bool: may borrow() take requests now, by broker and connection state."},

#endif
