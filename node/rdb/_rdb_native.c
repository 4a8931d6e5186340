/* The byte loops of the RDB codec in C: LZF compression and decompression and Redis's
 * CRC-64. Compiled Python spends about a microsecond per byte in each; an RDB file of a
 * million stream entries has tens of megabytes of them.
 *
 * Each function is the specification in its Python fallback (node/rdb/lzf.py,
 * node/rdb/crc64.py) and Redis's own C (src/lzf_c.c and lzf_d.c from liblzf 3.6 by Marc
 * Alexander Lehmann, BSD-2-Clause; src/crc64.c), with one difference from Redis's lzf_c.c:
 * the hash table starts empty (INIT_HTAB 1) instead of holding what an earlier call left
 * there, so the output depends on the input only (node/rdb/lzf.py says why that is still
 * Redis's output). tests/unit/rdb/test_lzf.py and tests/unit/native/test_rdb_native_fuzz.py
 * compare both implementations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HLOG 16
#define HSIZE (1 << HLOG)
#define MAX_LIT (1 << 5)
#define MAX_OFF (1 << 13)
#define MAX_REF ((1 << 8) + (1 << 3))
#define FRST(p) (((p)[0] << 8) | (p)[1])
#define NEXT(v, p) (((v) << 8) | (p)[2])
#define IDX(h) ((((h) >> (3 * 8 - HLOG)) - (h) * 5) & (HSIZE - 1))

typedef unsigned char u8;

/* lzf_compress with VERY_FAST and a zeroed table: 0 when the output would not fit. */
static size_t lzf_compress(const u8 *in_data, size_t in_len, u8 *out_data, size_t out_len, const u8 **htab) {
    const u8 *ip = in_data;
    u8 *op = out_data;
    const u8 *in_end = ip + in_len;
    u8 *out_end = op + out_len;
    const u8 *ref;
    size_t off;
    unsigned int hval;
    int lit;

    if (!in_len || !out_len) return 0;
    memset(htab, 0, sizeof(const u8 *) * HSIZE);
    lit = 0;
    op++; /* start run */
    hval = in_len > 1 ? (unsigned int)FRST(ip) : (unsigned int)(ip[0] << 8);
    while (in_len > 2 && ip < in_end - 2) {
        const u8 **hslot;
        hval = NEXT(hval, ip);
        hslot = htab + IDX(hval);
        ref = *hslot;
        *hslot = ip;
        if (ref != NULL && ref < ip && (off = (size_t)(ip - ref - 1)) < MAX_OFF && ref > in_data &&
            ref[2] == ip[2] && ref[0] == ip[0] && ref[1] == ip[1]) {
            unsigned int len = 2;
            size_t maxlen = (size_t)(in_end - ip) - len;
            maxlen = maxlen > MAX_REF ? MAX_REF : maxlen;
            if (op + 3 + 1 >= out_end && op - !lit + 3 + 1 >= out_end) return 0;
            op[-lit - 1] = (u8)(lit - 1); /* stop run */
            op -= !lit;                   /* undo run if length is zero */
            for (;;) {
                if (maxlen > 16) {
                    int k, broke = 0;
                    for (k = 0; k < 16; k++) {
                        len++;
                        if (ref[len] != ip[len]) {
                            broke = 1;
                            break;
                        }
                    }
                    if (broke) break;
                }
                do
                    len++;
                while (len < maxlen && ref[len] == ip[len]);
                break;
            }
            len -= 2; /* len is now #octets - 1 */
            ip++;
            if (len < 7) {
                *op++ = (u8)((off >> 8) + (len << 5));
            } else {
                *op++ = (u8)((off >> 8) + (7 << 5));
                *op++ = (u8)(len - 7);
            }
            *op++ = (u8)off;
            lit = 0;
            op++; /* start run */
            ip += len + 1;
            if (ip >= in_end - 2) break;
            --ip;
            --ip;
            hval = FRST(ip);
            hval = NEXT(hval, ip);
            htab[IDX(hval)] = ip;
            ip++;
            hval = NEXT(hval, ip);
            htab[IDX(hval)] = ip;
            ip++;
        } else {
            if (op >= out_end) return 0;
            lit++;
            *op++ = *ip++;
            if (lit == MAX_LIT) {
                op[-lit - 1] = (u8)(lit - 1); /* stop run */
                lit = 0;
                op++; /* start run */
            }
        }
    }
    if (op + 3 > out_end) return 0; /* at most 3 bytes can be missing here */
    while (ip < in_end) {
        lit++;
        *op++ = *ip++;
        if (lit == MAX_LIT) {
            op[-lit - 1] = (u8)(lit - 1);
            lit = 0;
            op++;
        }
    }
    op[-lit - 1] = (u8)(lit - 1); /* end run */
    op -= !lit;                   /* undo run if length is zero */
    return (size_t)(op - out_data);
}

/* lzf_decompress with CHECK_INPUT: the output length, or 0 on damaged input. */
static size_t lzf_decompress(const u8 *in_data, size_t in_len, u8 *out_data, size_t out_len) {
    const u8 *ip = in_data;
    u8 *op = out_data;
    const u8 *const in_end = ip + in_len;
    u8 *const out_end = op + out_len;

    while (ip < in_end) {
        unsigned int ctrl = *ip++;
        if (ctrl < (1 << 5)) { /* literal run */
            ctrl++;
            if ((size_t)(out_end - op) < ctrl || (size_t)(in_end - ip) < ctrl) return 0;
            memcpy(op, ip, ctrl);
            op += ctrl;
            ip += ctrl;
        } else { /* back reference */
            unsigned int len = ctrl >> 5;
            size_t back = ((size_t)(ctrl & 0x1f) << 8) + 1;
            if (ip >= in_end) return 0;
            if (len == 7) {
                len += *ip++;
                if (ip >= in_end) return 0;
            }
            back += *ip++;
            len += 2;
            if ((size_t)(out_end - op) < len || (size_t)(op - out_data) < back) return 0;
            const u8 *ref = op - back;
            if (back >= len) {
                memcpy(op, ref, len);
                op += len;
            } else {
                do
                    *op++ = *ref++;
                while (--len);
            }
        }
    }
    return (size_t)(op - out_data);
}

static PyObject *py_lzf_compress(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer in;
    Py_ssize_t out_len;
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "lzf_compress(data, out_len)");
        return NULL;
    }
    out_len = PyLong_AsSsize_t(args[1]);
    if (out_len < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "out_len must be >= 0");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &in, PyBUF_SIMPLE) < 0) return NULL;
    const u8 **htab = PyMem_Malloc(sizeof(const u8 *) * HSIZE);
    u8 *out = PyMem_Malloc((size_t)out_len + 1);
    PyObject *result = NULL;
    if (htab == NULL || out == NULL) {
        PyErr_NoMemory();
    } else {
        size_t n = lzf_compress((const u8 *)in.buf, (size_t)in.len, out, (size_t)out_len, htab);
        if (n == 0) {
            result = Py_NewRef(Py_None);
        } else {
            result = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)n);
        }
    }
    PyMem_Free(htab);
    PyMem_Free(out);
    PyBuffer_Release(&in);
    return result;
}

static PyObject *py_lzf_decompress(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer in;
    Py_ssize_t out_len;
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "lzf_decompress(data, out_len)");
        return NULL;
    }
    out_len = PyLong_AsSsize_t(args[1]);
    if (out_len < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "out_len must be >= 0");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &in, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result = PyBytes_FromStringAndSize(NULL, out_len);
    if (result != NULL) {
        size_t n = lzf_decompress((const u8 *)in.buf, (size_t)in.len, (u8 *)PyBytes_AS_STRING(result), (size_t)out_len);
        if (n != (size_t)out_len || (out_len == 0 && in.len != 0)) {
            Py_DECREF(result);
            result = Py_NewRef(Py_None);
        }
    }
    PyBuffer_Release(&in);
    return result;
}

static uint64_t crc64_table[256];

static void crc64_init(void) {
    const uint64_t poly = 0x95AC9329AC4BC9B5ULL; /* 0xad93d23594c935a9 reflected */
    for (int n = 0; n < 256; n++) {
        uint64_t crc = (uint64_t)n;
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ poly : crc >> 1;
        crc64_table[n] = crc;
    }
}

static PyObject *py_crc64(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer in;
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "crc64(crc, data)");
        return NULL;
    }
    uint64_t crc = PyLong_AsUnsignedLongLong(args[0]);
    if (crc == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    if (PyObject_GetBuffer(args[1], &in, PyBUF_SIMPLE) < 0) return NULL;
    const u8 *p = (const u8 *)in.buf;
    Py_ssize_t n = in.len;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) crc = crc64_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    return PyLong_FromUnsignedLongLong(crc);
}

static PyMethodDef methods[] = {
    {"lzf_compress", (PyCFunction)(void (*)(void))py_lzf_compress, METH_FASTCALL,
     "lzf_compress(data, out_len): the compressed bytes, or None when they do not fit."},
    {"lzf_decompress", (PyCFunction)(void (*)(void))py_lzf_decompress, METH_FASTCALL,
     "lzf_decompress(data, out_len): exactly out_len bytes, or None."},
    {"crc64", (PyCFunction)(void (*)(void))py_crc64, METH_FASTCALL, "crc64(crc, data): Redis's CRC-64."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rdb_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rdb_native(void) {
    crc64_init();
    return PyModule_Create(&module);
}
