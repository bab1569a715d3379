/* Attribute reads the produce lane makes on every request, remembered per call site (included by
   the lanes' headers, produce and fetch).

   PyObject_GetAttr on an instance of a Python class costs ~215 instructions (callgrind, a one-record
   Produce: ~37 reads, 28 % of the request).  Where the attribute is a slot or a C member (a member
   descriptor: Connection's, Topic's), a site remembers the instance's type, the type's version tag and
   the member, and the next read on an instance of that exact type goes straight to PyMember_GetOne --
   the same value PyObject_GetAttr returns, for a member descriptor is a data descriptor that nothing
   else on the instance can shadow.  Any change to the type or its bases changes its version tag and
   the site learns again; a type with its own __getattribute__, or an attribute that is no member (an
   instance-dict attribute, a property), is read with PyObject_GetAttr every time. */
#ifndef MOCKBROKER_MEMBER_SITES_H
#define MOCKBROKER_MEMBER_SITES_H

#include <Python.h>
#include <structmember.h>

typedef struct {
    PyTypeObject *type; /* not a reference: the version tag is never reused by another type */
    unsigned int version;
    PyMemberDef *member;
} MemberSite;

/* The member ``name`` is on instances of ``obj``'s type, or NULL: read it the general way. */
static PyMemberDef *site_member(MemberSite *site, PyObject *obj, PyObject *name) {
    PyTypeObject *type = Py_TYPE(obj);
    if (type == site->type && (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && type->tp_version_tag == site->version)
        return site->member;
    site->type = NULL;
    if (type->tp_getattro != PyObject_GenericGetAttr) return NULL;
    PyObject *descr = _PyType_Lookup(type, name); /* borrowed; gives the type a version tag */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) || !(type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
        return NULL;
    site->member = ((PyMemberDescrObject *)descr)->d_member;
    site->version = type->tp_version_tag;
    site->type = type;
    return site->member;
}

/* obj.name, a new reference (NULL with an exception set when it fails, as PyObject_GetAttr). */
static PyObject *site_get(MemberSite *site, PyObject *obj, PyObject *name) {
    PyMemberDef *member = site_member(site, obj, name);
    return member != NULL ? PyMember_GetOne((const char *)obj, member) : PyObject_GetAttr(obj, name);
}

/* obj.name = value (0, or -1 with an exception set). */
static inline int site_set(MemberSite *site, PyObject *obj, PyObject *name, PyObject *value) {
    PyMemberDef *member = site_member(site, obj, name);
    return member != NULL ? PyMember_SetOne((char *)obj, member, value) : PyObject_SetAttr(obj, name, value);
}

/* 1 when obj.name is truthy, 0 when not, -1 on error. */
static inline int site_true(MemberSite *site, PyObject *obj, PyObject *name) {
    PyObject *value = site_get(site, obj, name);
    if (value == NULL) return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

#endif
