/* Where the slots of a generated codec class live, for the C codecs that read and build the generated
   objects in place (mockbroker/native/codecs/_fastproduce.c, mockbroker/native/lanes/_fastfetch.c).  Define
   MAX_SLOTS before including it.  layout_of() accepts a class only when every named slot is a plain
   object slot and the class has no others (so a change to the generated code is refused at setup,
   not misread later).
*/
#ifndef MOCKBROKER_STRUCT_SLOTS_H
#define MOCKBROKER_STRUCT_SLOTS_H

#include <Python.h>
#include <structmember.h>

#ifndef MAX_SLOTS
#error "define MAX_SLOTS before including struct_slots.h"
#endif

typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset[MAX_SLOTS];
    int count;
} Layout;

/* Fill ``layout`` for class ``cls`` whose slots are ``names`` (NULL-terminated, at most MAX_SLOTS). */
static int layout_of(Layout *layout, PyObject *cls, const char *const *names) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "setup() takes the generated classes");
        return -1;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    layout->count = 0;
    for (int i = 0; names[i] != NULL; i++) {
        PyObject *descr = PyDict_GetItemString(type->tp_dict, names[i]);
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "%s has no slot %s", type->tp_name, names[i]);
            return -1;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a plain slot", type->tp_name, names[i]);
            return -1;
        }
        layout->offset[i] = member->offset;
        layout->count++;
    }
    if (type->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + layout->count * sizeof(PyObject *))) {
        PyErr_Format(PyExc_TypeError, "%s has slots this module does not know", type->tp_name);
        return -1;
    }
    Py_XSETREF(layout->type, (PyTypeObject *)Py_NewRef(cls));
    return 0;
}

#endif
