/* Finding the commands in a replicated batch, in C: `check_units` validates a whole batch
 * (RESP arrays of bulk strings, MULTI/EXEC units closed) before a replica applies any of
 * it, and `command_end` finds where one command ends, so the replica parses only the
 * commands its C XADD path (node/engine/_logged_xadd.c) does not take. hiredis parsed every
 * command of the batch into Python objects for the same check. node/log/scan.py has
 * the Python fallbacks and says what each accepts. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "resp_read.h"

/* Whether s[0:n] is `lower` (lowercase letters) in any case, in ASCII as bytes.lower() is:
 * strncasecmp would follow the locale Python sets at start-up. */
static int is_name(const unsigned char *s, Py_ssize_t n, const char *lower, Py_ssize_t lower_len) {
    if (n != lower_len) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if ((s[i] | 0x20) != (unsigned char)lower[i]) return 0;
    return 1;
}

/* The end of the command (a non-empty array of bulk strings) at p, or NULL; its name in
 * *name, *name_len. */
static const unsigned char *scan_command(const unsigned char *p, const unsigned char *end,
                                         const unsigned char **name, Py_ssize_t *name_len) {
    long long n = read_header(&p, end, '*');
    if (n < 1) return NULL;
    for (long long i = 0; i < n; i++) {
        long long len = read_header(&p, end, '$');
        if (len < 0 || end - p < len + 2 || p[len] != '\r' || p[len + 1] != '\n') return NULL;
        if (i == 0) {
            *name = p;
            *name_len = (Py_ssize_t)len;
        }
        p += len + 2;
    }
    return p;
}

static int get_data(PyObject *data, const unsigned char **base, Py_ssize_t *size) {
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "data must be bytes");
        return 0;
    }
    *base = (const unsigned char *)PyBytes_AS_STRING(data);
    *size = PyBytes_GET_SIZE(data);
    return 1;
}

/* check_units(data) -> None, or why data is not whole commands and whole MULTI/EXEC units. */
static PyObject *check_units(PyObject *self, PyObject *data) {
    (void)self;
    const unsigned char *base, *name;
    Py_ssize_t size, name_len = 0;
    if (!get_data(data, &base, &size)) return NULL;
    const unsigned char *p = base, *end = base + size;
    int in_multi = 0;
    while (p < end) {
        const unsigned char *next = scan_command(p, end, &name, &name_len);
        if (next == NULL) {
            return PyUnicode_FromFormat("not a command in the log at byte %zd (or the batch ends inside it)",
                                        (Py_ssize_t)(p - base));
        }
        if (is_name(name, name_len, "multi", 5)) {
            if (in_multi) return PyUnicode_FromString("nested MULTI in the log");
            in_multi = 1;
        } else if (is_name(name, name_len, "exec", 4)) {
            if (!in_multi) return PyUnicode_FromString("EXEC without MULTI in the log");
            in_multi = 0;
        }
        p = next;
    }
    if (in_multi) return PyUnicode_FromString("the batch ends inside a unit");
    Py_RETURN_NONE;
}

/* command_end(data, pos) -> the end of the command at data[pos:], or -1. */
static PyObject *command_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    const unsigned char *base, *name;
    Py_ssize_t size, name_len = 0;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "command_end(data: bytes, pos: int)");
        return NULL;
    }
    if (!get_data(args[0], &base, &size)) return NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) return NULL;
    if (pos < 0 || pos > size) {
        PyErr_SetString(PyExc_IndexError, "pos out of range");
        return NULL;
    }
    const unsigned char *next = scan_command(base + pos, base + size, &name, &name_len);
    return PyLong_FromSsize_t(next == NULL ? -1 : (Py_ssize_t)(next - base));
}

static PyMethodDef methods[] = {
    {"check_units", check_units, METH_O, "None, or why the batch is not whole commands and units."},
    {"command_end", (PyCFunction)(void (*)(void))command_end, METH_FASTCALL,
     "The end of the command at data[pos:], or -1."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_resp_scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__resp_scan(void) { return PyModule_Create(&module); }
