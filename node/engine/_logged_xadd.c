/* A replica's XADDs, appended in C straight from its primary's log bytes.
 *
 * Most of a replica's work is its primary's XADDs, which the effect log always spells
 * `XADD key ms-seq field value ...` (the complete ID, no option). Compiled Python spent
 * ~2.6 us on each: hiredis builds a list and five bytes objects, the engine packs them into
 * the tail node and drops them. Here `xadd_block` finds the consecutive such XADDs and
 * groups them by stream (XADDs to different streams commute: a primary writing to several
 * streams interleaves them, and one call per entry would cost more than it saves), and
 * `append_run` takes a stream's group, each entry with the tail node's master fields, from
 * the RESP bytes to the node's packed form without a Python object per entry.
 *
 * `append_run` changes nothing: it returns what the run adds to the tail node (packed keys,
 * offsets, data bytes, listpack bytes, the last ID), and node/engine/stream.py's
 * `Stream.append_logged_run` commits all of it or, when memory runs out, none. It takes
 * entries only while each one is exactly what `Stream.append` would do as a same-fields
 * entry of the current tail node: a compact node (IDs packed relative to its master), an ID
 * above the stream's last ID and above every stored key (no tombstones to drop), no node
 * split due (stream-node-max-bytes / -entries, checked on the Redis listpack size as
 * Stream.append tracks it), values shorter than 128 bytes (one-byte varints: the node's
 * `long` flag stays as it is). It stops before the first unit that is anything else: the
 * caller runs that command the ordinary way (new node, other fields, an error) and may come
 * back for the rest of the group. Without the native build `Stream.append_logged_run`
 * appends nothing and every XADD takes the ordinary way, which gives the same stream.
 *
 * The listpack sizes below are node/engine/listpack_size.py's, for the values this path
 * takes; tests/unit/native/test_listpack_sizes.py checks them against it at every edge.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "resp_read.h"

#define MAX_ENTRY_BYTES (1LL << 30) /* node/engine/stream_append.py MAX_ENTRY_BYTES */
#define LP_FLAGS 2                  /* listpack_size.py LP_FLAGS */
#define ONE_BYTE_VARINT 0x80        /* values this long or longer take the ordinary way */

typedef struct {
    const unsigned char *p;
    Py_ssize_t len;
} span;

static int read_bulk(const unsigned char **pp, const unsigned char *end, span *out) {
    long long n = read_header(pp, end, '$');
    if (n < 0) return 0;
    const unsigned char *p = *pp;
    if (end - p < n + 2 || p[n] != '\r' || p[n + 1] != '\n') return 0;
    out->p = p;
    out->len = (Py_ssize_t)n;
    *pp = p + n + 2;
    return 1;
}

/* `*N $4 XADD|xadd $ key $ id` with N odd and >= 5: the head of a logged XADD. */
static int read_head(const unsigned char **pp, const unsigned char *end, long long *nargs, span *key, span *id) {
    long long n = read_header(pp, end, '*');
    span name;
    if (n < 5 || !(n & 1)) return 0;
    if (!read_bulk(pp, end, &name) || name.len != 4) return 0;
    if (memcmp(name.p, "XADD", 4) != 0 && memcmp(name.p, "xadd", 4) != 0) return 0;
    if (!read_bulk(pp, end, key) || !read_bulk(pp, end, id)) return 0;
    *nargs = n;
    return 1;
}

/* 1 to 20 ASCII digits (leading zeros allowed, as strtoull) within uint64. */
static int parse_u64(const unsigned char *s, Py_ssize_t n, uint64_t *out) {
    uint64_t v = 0;
    if (n <= 0 || n > 20) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9) return 0;
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

static int parse_id(span id, uint64_t *ms, uint64_t *seq) {
    const unsigned char *dash = memchr(id.p, '-', (size_t)id.len);
    if (dash == NULL) return 0;
    return parse_u64(id.p, dash - id.p, ms) && parse_u64(dash + 1, id.p + id.len - dash - 1, seq);
}

/* listpack_size.py lp_int_size. */
static long long lp_int_size(long long v) {
    if (v >= 0 && v <= 127) return 2;
    if (v >= -4096 && v <= 4095) return 3;
    if (v >= -32768 && v <= 32767) return 4;
    if (v >= -8388608 && v <= 8388607) return 5;
    if (v >= -2147483648LL && v <= 2147483647LL) return 6;
    return 10;
}

/* Whether s[0:n] (n < 21) is the canonical form of an int64, which listpack stores as one. */
static int lp_int_value(const unsigned char *s, Py_ssize_t n, long long *out) {
    int negative = s[0] == '-';
    const unsigned char *d = s + negative;
    Py_ssize_t nd = n - negative;
    uint64_t v = 0;
    if (nd <= 0 || d[0] < '0' || d[0] > '9') return 0;
    if (d[0] == '0') {
        if (nd == 1 && !negative) {
            *out = 0;
            return 1;
        }
        return 0; /* "-0", "012": strings */
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        unsigned c = (unsigned)(d[i] - '0');
        if (c > 9) return 0;
        if (v > (UINT64_MAX - c) / 10) return 0;
        v = v * 10 + c;
    }
    if (negative) {
        if (v > (uint64_t)INT64_MAX + 1) return 0;
        *out = (long long)(0 - v);
    } else {
        if (v > (uint64_t)INT64_MAX) return 0;
        *out = (long long)v;
    }
    return 1;
}

/* listpack_size.py lp_str_size: bytes of a listpack element holding s, backlen included. */
static long long lp_str_size(const unsigned char *s, Py_ssize_t n) {
    long long v, enc;
    if (n > 0 && n < 21 && lp_int_value(s, n, &v)) return lp_int_size(v);
    enc = n < 64 ? 1 + n : (n < 4096 ? 2 + n : 5 + n);
    if (enc <= 127) return enc + 1;
    if (enc < 16383) return enc + 2;
    if (enc < 2097151) return enc + 3;
    if (enc < 268435455) return enc + 4;
    return enc + 5;
}

/* A growable array of bytes in C memory (PyMem), freed by its user. */
typedef struct {
    char *p;
    Py_ssize_t len, cap;
} buffer;

/* Room for `size` more bytes: 1, or 0 with MemoryError set and the buffer as it was. */
static int buffer_reserve(buffer *b, Py_ssize_t size) {
    if (size <= b->cap - b->len) return 1;
    if (b->len > PY_SSIZE_T_MAX / 2 - size) {
        PyErr_NoMemory();
        return 0;
    }
    Py_ssize_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + size) cap *= 2;
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

/* Appends `size` bytes to a buffer that has room for them (buffer_reserve). */
static void buffer_copy(buffer *b, const void *item, Py_ssize_t size) {
    memcpy(b->p + b->len, item, (size_t)size);
    b->len += size;
}

static int buffer_put(buffer *b, const void *item, Py_ssize_t size) {
    if (!buffer_reserve(b, size)) return 0;
    buffer_copy(b, item, size);
    return 1;
}

/* At most this many streams in one block (xadd_block): grouping costs a comparison with
 * each stream seen, and a block of that many is long enough to pay for its calls. */
#define MAX_BLOCK_KEYS 64

typedef struct {
    span key;
    buffer positions; /* Py_ssize_t offsets of its commands in data, in log order */
} group;

/* The logged XADD that starts at p and ends before `end`, whole: 1 and its key, with *pp
 * moved past it; 0 if it is anything else (another command, an ID that is not ms-seq, or
 * cut short). */
static int read_logged_xadd(const unsigned char **pp, const unsigned char *end, span *key) {
    const unsigned char *q = *pp;
    long long n;
    span id, arg;
    uint64_t ms, seq;
    if (!read_head(&q, end, &n, key, &id) || !parse_id(id, &ms, &seq)) return 0;
    for (long long i = 3; i < n; i++)
        if (!read_bulk(&q, end, &arg)) return 0;
    *pp = q;
    return 1;
}

/* xadd_block(data, pos) -> (end, [(key, positions), ...])
 * The logged XADDs (`XADD key ms-seq field value ...`) that follow each other from
 * data[pos:], grouped by stream in the order the streams first appear: each group's
 * positions (array('q') bytes) are where its commands start, in log order. XADDs to
 * different streams commute, so a block may be applied stream by stream. Ends before the
 * first other command, a cut one, or an XADD to a stream beyond MAX_BLOCK_KEYS. */
static PyObject *xadd_block(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2 || !PyBytes_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "xadd_block(data: bytes, pos: int)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) return NULL;
    const unsigned char *base = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    if (pos < 0 || pos > size) {
        PyErr_SetString(PyExc_IndexError, "pos out of range");
        return NULL;
    }
    const unsigned char *end = base + size, *p = base + pos;
    group groups[MAX_BLOCK_KEYS];
    int ngroups = 0, failed = 0;
    while (p < end) {
        const unsigned char *q = p;
        span k;
        if (!read_logged_xadd(&q, end, &k)) break;
        int g = 0;
        while (g < ngroups && (groups[g].key.len != k.len || memcmp(groups[g].key.p, k.p, (size_t)k.len) != 0)) g++;
        if (g == ngroups) {
            if (ngroups == MAX_BLOCK_KEYS) break;
            groups[g].key = k;
            groups[g].positions = (buffer){NULL, 0, 0};
            ngroups++;
        }
        Py_ssize_t at = p - base;
        if (!buffer_put(&groups[g].positions, &at, sizeof at)) {
            failed = 1; /* MemoryError */
            break;
        }
        p = q;
    }
    PyObject *list = failed ? NULL : PyList_New(ngroups);
    for (int g = 0; list != NULL && g < ngroups; g++) {
        PyObject *item = Py_BuildValue("(y#y#)", (const char *)groups[g].key.p, groups[g].key.len,
                                       groups[g].positions.p, groups[g].positions.len);
        if (item == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, g, item);
    }
    for (int g = 0; g < ngroups; g++) PyMem_Free(groups[g].positions.p);
    if (list == NULL) return NULL;
    return Py_BuildValue("(nN)", (Py_ssize_t)(p - base), list);
}

enum {
    A_DATA, A_POSITIONS, A_INDEX, A_KEY, A_NAMES, A_DATA_LEN, A_BASE_MS, A_MASTER_SEQ, A_LAST_KEY, A_LAST_MS,
    A_LAST_SEQ, A_LP_BASE, A_LIVE, A_TOMBS, A_CAP, A_MAX_ENTRIES, A_COUNT
};

/* The bound of the node's counters and sizes passed in (lp_base, live, tombs, cap,
 * max_entries): far above any real node, low enough that their sums never overflow. */
#define MAX_COUNTER (1LL << 61)

/* An int argument in [0, max]: 1 and *out, or 0 with an exception set. */
static int int_arg(PyObject *arg, unsigned long long max, unsigned long long *out) {
    unsigned long long v = PyLong_AsUnsignedLongLong(arg);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return 0;
    if (v > max) {
        PyErr_SetString(PyExc_OverflowError, "append_run: an argument is out of range");
        return 0;
    }
    *out = v;
    return 1;
}

/* append_run(data, positions, index, key, names, data_len, base_ms, master_seq, last_key,
 *            last_ms, last_seq, lp_base, live, tombs, cap, max_entries)
 *   -> (next, count, keys, offsets, values, lp_added, last_ms, last_seq)
 * What appending the logged XADDs to `key` that start at positions[index:] (array('q')
 * bytes from xadd_block) to the tail node adds, as long as each is a same-fields entry of
 * that node (see the header): the index it stopped at, how many entries, their packed keys
 * (array('Q') bytes), their offsets in the node's data (array('I') bytes, from data_len,
 * the data's length now), the bytes to append to the data (each value as its one-byte
 * length and its bytes), the listpack bytes they add and the last ID. It changes nothing:
 * the caller (Stream.append_logged_run) commits all of it or none. */
static PyObject *append_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != A_COUNT || !PyBytes_CheckExact(args[A_DATA]) || !PyBytes_CheckExact(args[A_POSITIONS]) ||
        !PyBytes_CheckExact(args[A_KEY]) || !PyList_CheckExact(args[A_NAMES])) {
        PyErr_SetString(PyExc_TypeError, "append_run: bad arguments");
        return NULL;
    }
    unsigned long long index_arg, data_len, base_ms, master_seq, last_key, last_ms, last_seq;
    unsigned long long lp_base_arg, live_arg, tombs_arg, cap_arg, max_entries_arg;
    /* Each converted only if the ones before it were: no C-API call with an exception set. */
    if (!int_arg(args[A_INDEX], PY_SSIZE_T_MAX, &index_arg) || !int_arg(args[A_DATA_LEN], UINT_MAX, &data_len) ||
        !int_arg(args[A_BASE_MS], UINT64_MAX, &base_ms) || !int_arg(args[A_MASTER_SEQ], UINT64_MAX, &master_seq) ||
        !int_arg(args[A_LAST_KEY], UINT64_MAX, &last_key) || !int_arg(args[A_LAST_MS], UINT64_MAX, &last_ms) ||
        !int_arg(args[A_LAST_SEQ], UINT64_MAX, &last_seq) || !int_arg(args[A_LP_BASE], MAX_COUNTER, &lp_base_arg) ||
        !int_arg(args[A_LIVE], MAX_COUNTER, &live_arg) || !int_arg(args[A_TOMBS], MAX_COUNTER, &tombs_arg) ||
        !int_arg(args[A_CAP], MAX_COUNTER, &cap_arg) || !int_arg(args[A_MAX_ENTRIES], MAX_COUNTER, &max_entries_arg))
        return NULL;
    Py_ssize_t index = (Py_ssize_t)index_arg;
    long long lp_base = (long long)lp_base_arg, live = (long long)live_arg, tombs = (long long)tombs_arg;
    long long cap = (long long)cap_arg, max_entries = (long long)max_entries_arg;
    PyObject *names = args[A_NAMES];
    const unsigned char *base = (const unsigned char *)PyBytes_AS_STRING(args[A_DATA]);
    const unsigned char *end = base + PyBytes_GET_SIZE(args[A_DATA]);
    const char *keyp = PyBytes_AS_STRING(args[A_KEY]);
    Py_ssize_t keylen = PyBytes_GET_SIZE(args[A_KEY]);
    Py_ssize_t nf = PyList_GET_SIZE(names);
    /* Read with memcpy: the bytes object's buffer is not known to be 8-byte aligned. */
    const char *positions = PyBytes_AS_STRING(args[A_POSITIONS]);
    Py_ssize_t npositions = PyBytes_GET_SIZE(args[A_POSITIONS]) / (Py_ssize_t)sizeof(Py_ssize_t);
    if (index > npositions) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return NULL;
    }
    /* No Python code runs below, so the list and its items stay as checked. */
    for (Py_ssize_t i = 0; i < nf; i++) {
        if (!PyBytes_CheckExact(PyList_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "append_run: names must be bytes");
            return NULL;
        }
    }
    span *values = PyMem_New(span, nf ? nf : 1);
    if (values == NULL) return PyErr_NoMemory();
    buffer keys = {NULL, 0, 0}, offsets = {NULL, 0, 0}, blob = {NULL, 0, 0};
    PyObject *result = NULL;
    long long count = 0, lp_added = 0;
    /* Stream.append on a compact node only: the master's seq fits 32 bits there. */
    int usable = master_seq >> 32 == 0;
    for (; usable && index < npositions; index++) {
        Py_ssize_t at_pos;
        memcpy(&at_pos, positions + index * (Py_ssize_t)sizeof at_pos, sizeof at_pos);
        if (at_pos < 0 || at_pos >= end - base) break;
        const unsigned char *q = base + at_pos;
        long long n;
        span k, id, field;
        uint64_t ms, seq;
        if (!read_head(&q, end, &n, &k, &id)) break;
        if (k.len != keylen || memcmp(k.p, keyp, (size_t)keylen) != 0 || (n - 3) / 2 != nf) break;
        if (!parse_id(id, &ms, &seq)) break;
        /* Above the stream's last ID (append_at's check) and above every key the tail node
         * stores (Node.reaches: no tombstones left above the last ID to drop). */
        if (ms < last_ms || (ms == last_ms && seq <= last_seq)) break;
        if (ms < base_ms || (ms - base_ms) >> 32 || seq >> 32) break;
        uint64_t msd = ms - base_ms;
        uint64_t packed = (msd << 32) | seq;
        if (packed <= last_key) break;
        long long size = 0, lp = 0;
        Py_ssize_t i;
        for (i = 0; i < nf; i++) {
            PyObject *name = PyList_GET_ITEM(names, i);
            if (!read_bulk(&q, end, &field) || field.len != PyBytes_GET_SIZE(name) ||
                memcmp(field.p, PyBytes_AS_STRING(name), (size_t)field.len) != 0)
                break;
            if (!read_bulk(&q, end, &values[i]) || values[i].len >= ONE_BYTE_VARINT) break;
            size += field.len + values[i].len;
            lp += lp_str_size(values[i].p, values[i].len);
        }
        if (i < nf || size > MAX_ENTRY_BYTES) break;
        /* streamAppendItem's split rule, on the node as it is before this entry. */
        long long lp_bytes = lp_base + lp_int_size(live) + lp_int_size(tombs);
        if (lp_bytes + size >= cap || (max_entries && live + tombs >= max_entries)) break;
        Py_ssize_t grow = nf;
        for (i = 0; i < nf; i++) grow += values[i].len;
        unsigned long long at = data_len + (unsigned long long)blob.len;
        if (at + (unsigned long long)grow > UINT_MAX) break;
        /* The items of the node's array('Q') keys and array('I') offsets. */
        unsigned long long key_item = packed;
        unsigned int offset = (unsigned int)at;
        if (!buffer_reserve(&keys, sizeof key_item) || !buffer_reserve(&offsets, sizeof offset) ||
            !buffer_reserve(&blob, grow))
            goto done; /* MemoryError, and nothing was changed */
        buffer_copy(&keys, &key_item, sizeof key_item);
        buffer_copy(&offsets, &offset, sizeof offset);
        for (i = 0; i < nf; i++) {
            unsigned char len = (unsigned char)values[i].len;
            buffer_copy(&blob, &len, 1);
            buffer_copy(&blob, values[i].p, values[i].len);
        }
        lp += LP_FLAGS + lp_int_size((long long)msd) + lp_int_size((long long)seq - (long long)master_seq) +
              lp_int_size(nf + 3);
        lp_base += lp;
        lp_added += lp;
        live += 1;
        last_ms = ms;
        last_seq = seq;
        last_key = packed;
        count += 1;
    }
    /* y# of a NULL pointer would give None. */
    result = Py_BuildValue("(nLy#y#y#LKK)", index, count, keys.p ? keys.p : "", keys.len, offsets.p ? offsets.p : "",
                           offsets.len, blob.p ? blob.p : "", blob.len, lp_added, last_ms, last_seq);
done:
    PyMem_Free(values);
    PyMem_Free(keys.p);
    PyMem_Free(offsets.p);
    PyMem_Free(blob.p);
    return result;
}

static PyMethodDef methods[] = {
    {"xadd_block", (PyCFunction)(void (*)(void))xadd_block, METH_FASTCALL,
     "The logged XADDs that follow each other from data[pos:], grouped by stream."},
    {"append_run", (PyCFunction)(void (*)(void))append_run, METH_FASTCALL,
     "Appends a run of logged XADDs to a stream's tail node (see the module header)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_logged_xadd", NULL, -1, methods};

PyMODINIT_FUNC PyInit__logged_xadd(void) { return PyModule_Create(&module); }
