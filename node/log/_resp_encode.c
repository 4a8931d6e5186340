/* encode_command in C: the RESP multibulk of a command, as node/log/encode.py's Python
 * encoder builds it (that one stays as the fallback without a native build). Every effect a
 * node logs for an AOF or a replica is encoded once; compiled Python spends most of ~1-2 us
 * per command appending and joining header pieces, this sizes the result once and copies.
 * Accepts a list or tuple of bytes or bytearray; anything else is a TypeError (the caller
 * then uses the Python encoder, which takes any bytes-like object). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Longest header: a prefix, 19 digits of a Py_ssize_t and CRLF. */
#define MAX_HEADER 22

static char *put_header(char *p, char prefix, Py_ssize_t n) {
    char digits[20];
    int k = 0;
    *p++ = prefix;
    do {
        digits[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    while (k) *p++ = digits[--k];
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/* The data and length of a bytes or bytearray item: 1, or 0 if it is neither. */
static int item_data(PyObject *item, const char **data, Py_ssize_t *len) {
    if (PyBytes_CheckExact(item)) {
        *data = PyBytes_AS_STRING(item);
        *len = PyBytes_GET_SIZE(item);
    } else if (PyByteArray_CheckExact(item)) {
        *data = PyByteArray_AS_STRING(item);
        *len = PyByteArray_GET_SIZE(item);
    } else {
        return 0;
    }
    return 1;
}

static PyObject *encode_command(PyObject *self, PyObject *argv) {
    (void)self;
    if (!PyList_CheckExact(argv) && !PyTuple_CheckExact(argv)) {
        PyErr_SetString(PyExc_TypeError, "argv must be a list or a tuple");
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(argv);
    Py_ssize_t size = MAX_HEADER;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *data;
        Py_ssize_t len;
        if (!item_data(PySequence_Fast_GET_ITEM(argv, i), &data, &len)) {
            PyErr_Format(PyExc_TypeError, "argument %zd is not bytes", i);
            return NULL;
        }
        if (len > PY_SSIZE_T_MAX - size - MAX_HEADER - 2) return PyErr_NoMemory();
        size += MAX_HEADER + len + 2;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL) return NULL;
    /* No Python code runs while the items are copied, but the allocation above is not
     * counted on to run none: a changed argv is refused rather than overrun. */
    char *start = PyBytes_AS_STRING(out), *p = start, *limit = start + size;
    if (PySequence_Fast_GET_SIZE(argv) != n) goto changed;
    p = put_header(p, '*', n);
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *data;
        Py_ssize_t len;
        if (!item_data(PySequence_Fast_GET_ITEM(argv, i), &data, &len) || len > limit - p - MAX_HEADER - 2)
            goto changed;
        p = put_header(p, '$', len);
        memcpy(p, data, (size_t)len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    if (_PyBytes_Resize(&out, p - start) < 0) return NULL;
    return out;
changed:
    Py_DECREF(out);
    PyErr_SetString(PyExc_RuntimeError, "argv changed while it was encoded");
    return NULL;
}

static PyMethodDef methods[] = {
    {"encode_command", encode_command, METH_O, "The RESP multibulk of a list or tuple of bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_resp_encode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__resp_encode(void) { return PyModule_Create(&module); }
