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
#include <limits.h>
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


/* -- a stream listpack read into a Rill stream node (node/rdb/stream_codec.py) ------------
 *
 * node_from_listpack(lp, base_ms, master_seq) walks a stream node's listpack once, checking
 * what node_from_listpack in stream_codec.py checks (it is the specification), and returns
 * the node's packed pieces: (live, tombs, fields, compact, keys, seqs, offsets, data, dead,
 * own, long). `keys` holds the packed IDs ((ms - base_ms) << 32 | seq, native u64) when
 * `compact`, else the absolute ms halves with `seqs` the sequences; `offsets` native u32;
 * `dead` and `own` little-endian bitmasks. A malformed listpack raises ValueError. */

typedef struct {
    int is_int;
    long long value;
    const u8 *str;
    Py_ssize_t len;
} lp_elem;

static uint64_t lp_backlen_size(uint64_t l) {
    if (l <= 127) return 1;
    if (l < 16383) return 2;
    if (l < 2097151) return 3;
    if (l < 268435455) return 4;
    return 5;
}

/* Reads the element at *pp (before end), checking its back-length; 0 on damage. */
static int lp_read(const u8 **pp, const u8 *end, lp_elem *e) {
    const u8 *p = *pp;
    const u8 *start = p;
    u8 b = p[0];
    e->is_int = 0;
    if (b < 0x80) {
        e->is_int = 1;
        e->value = b;
        p += 1;
    } else if (b < 0xC0) {
        Py_ssize_t n = b & 0x3F;
        if (end - p < 1 + n) return 0;
        e->str = p + 1;
        e->len = n;
        p += 1 + n;
    } else if (b < 0xE0) {
        if (end - p < 2) return 0;
        uint64_t u = ((uint64_t)(b & 0x1F) << 8) | p[1];
        e->is_int = 1;
        e->value = u >= 4096 ? (long long)u - 8192 : (long long)u;
        p += 2;
    } else if (b < 0xF0) {
        if (end - p < 2) return 0;
        Py_ssize_t n = ((Py_ssize_t)(b & 0x0F) << 8) | p[1];
        if (end - p < 2 + n) return 0;
        e->str = p + 2;
        e->len = n;
        p += 2 + n;
    } else if (b == 0xF0) {
        if (end - p < 5) return 0;
        uint64_t n = (uint64_t)p[1] | ((uint64_t)p[2] << 8) | ((uint64_t)p[3] << 16) | ((uint64_t)p[4] << 24);
        if ((uint64_t)(end - p - 5) < n) return 0;
        e->str = p + 5;
        e->len = (Py_ssize_t)n;
        p += 5 + n;
    } else if (b >= 0xF1 && b <= 0xF4) {
        int width = b == 0xF1 ? 2 : b == 0xF2 ? 3 : b == 0xF3 ? 4 : 8;
        if (end - p < 1 + width) return 0;
        uint64_t u = 0;
        for (int i = 0; i < width; i++) u |= (uint64_t)p[1 + i] << (8 * i);
        if (width < 8 && (u >> (8 * width - 1)) & 1) u |= ~(uint64_t)0 << (8 * width); /* sign-extend */
        e->is_int = 1;
        e->value = (long long)u;
        p += 1 + width;
    } else {
        return 0;
    }
    uint64_t n = (uint64_t)(p - start);
    uint64_t size = lp_backlen_size(n);
    if ((uint64_t)(end - p) < size) return 0;
    /* lpEncodeBacklen: 7-bit groups, most significant first, every byte but the first
     * flagged (read backwards, the flag says another byte follows). */
    for (uint64_t i = 0; i < size; i++) {
        uint64_t shift = 7 * (size - 1 - i);
        u8 want = (u8)((n >> shift) & 127);
        if (i > 0) want |= 128;
        if (p[i] != want) return 0;
    }
    *pp = p + size;
    return 1;
}

typedef struct {
    u8 *buf;
    Py_ssize_t len;
    Py_ssize_t cap;
} growbuf;

static int gb_reserve(growbuf *g, Py_ssize_t more) {
    if (g->len + more <= g->cap) return 1;
    Py_ssize_t cap = g->cap ? g->cap : 256;
    while (cap < g->len + more) cap *= 2;
    u8 *nb = PyMem_Realloc(g->buf, (size_t)cap);
    if (nb == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    g->buf = nb;
    g->cap = cap;
    return 1;
}

static int gb_put(growbuf *g, const void *data, Py_ssize_t n) {
    if (!gb_reserve(g, n)) return 0;
    memcpy(g->buf + g->len, data, (size_t)n);
    g->len += n;
    return 1;
}

/* The decimal form of v (ll2string), into digits; returns its length. */
static int format_ll(char *digits, long long v) {
    char tmp[24];
    int n = 0, len = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) digits[len++] = '-';
    while (n) digits[len++] = tmp[--n];
    return len;
}

/* A value as node/engine/node_values.py packs it: varint(len) + bytes; ints as decimals. */
static int put_value(growbuf *g, const lp_elem *e, int *long_flag) {
    char digits[32];
    const u8 *s;
    Py_ssize_t n;
    if (e->is_int) {
        n = (Py_ssize_t)format_ll(digits, e->value);
        s = (const u8 *)digits;
    } else {
        s = e->str;
        n = e->len;
    }
    u8 varint[10];
    int k = 0;
    uint64_t v = (uint64_t)n;
    while (v >= 0x80) {
        varint[k++] = (u8)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    varint[k++] = (u8)v;
    if (k > 1) *long_flag = 1;
    return gb_put(g, varint, k) && gb_put(g, s, n);
}

static int put_varint(growbuf *g, uint64_t v, int *long_flag) {
    u8 varint[10];
    int k = 0;
    while (v >= 0x80) {
        varint[k++] = (u8)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    varint[k++] = (u8)v;
    if (k > 1) *long_flag = 1;
    return gb_put(g, varint, k);
}

static int set_bit(growbuf *g, Py_ssize_t i) {
    Py_ssize_t byte = i / 8;
    if (byte >= g->len) {
        if (!gb_reserve(g, byte + 1 - g->len)) return 0;
        memset(g->buf + g->len, 0, (size_t)(byte + 1 - g->len));
        g->len = byte + 1;
    }
    g->buf[byte] |= (u8)(1u << (i % 8));
    return 1;
}

static PyObject *elem_bytes(const lp_elem *e) {
    if (e->is_int) {
        char digits[32];
        int n = format_ll(digits, e->value);
        return PyBytes_FromStringAndSize(digits, n);
    }
    return PyBytes_FromStringAndSize((const char *)e->str, e->len);
}

#define BAD(msg) do { why = (msg); goto bad; } while (0)

static PyObject *py_node_from_listpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer in;
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "node_from_listpack(lp, base_ms, master_seq)");
        return NULL;
    }
    uint64_t base_ms = PyLong_AsUnsignedLongLong(args[1]);
    if (base_ms == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    uint64_t master_seq = PyLong_AsUnsignedLongLong(args[2]);
    if (master_seq == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    if (PyObject_GetBuffer(args[0], &in, PyBUF_SIMPLE) < 0) return NULL;
    const char *why = NULL;
    PyObject *fields = NULL, *result = NULL;
    growbuf keys = {0}, seqs = {0}, offsets = {0}, data = {0}, dead = {0}, own = {0};
    const u8 *lp = (const u8 *)in.buf;
    Py_ssize_t size = in.len;
    lp_elem e;
    if (size < 7) BAD("listpack shorter than its header");
    uint64_t total = (uint64_t)lp[0] | ((uint64_t)lp[1] << 8) | ((uint64_t)lp[2] << 16) | ((uint64_t)lp[3] << 24);
    unsigned numele = (unsigned)lp[4] | ((unsigned)lp[5] << 8);
    if (total != (uint64_t)size) BAD("listpack header says another size");
    if (lp[size - 1] != 0xFF) BAD("listpack does not end with its end byte");
    const u8 *p = lp + 6;
    const u8 *end = lp + size - 1;
    unsigned long long elements = 0;
#define NEXT_ELEM() do { if (p >= end || !lp_read(&p, end, &e)) BAD("bad listpack element"); elements++; } while (0)
    NEXT_ELEM();
    if (!e.is_int || e.value < 0) BAD("bad stream master entry");
    long long live = e.value;
    NEXT_ELEM();
    if (!e.is_int || e.value < 0) BAD("bad stream master entry");
    long long tombs = e.value;
    NEXT_ELEM();
    if (!e.is_int || e.value < 1 || e.value > size) BAD("bad stream master entry");
    long long nfields = e.value;
    fields = PyList_New(0);
    if (fields == NULL) goto fail;
    for (long long i = 0; i < nfields; i++) {
        NEXT_ELEM();
        PyObject *f = elem_bytes(&e);
        if (f == NULL) goto fail;
        int rc = PyList_Append(fields, f);
        Py_DECREF(f);
        if (rc < 0) goto fail;
    }
    NEXT_ELEM();
    if (!e.is_int || e.value != 0) BAD("bad stream master entry fields");
    Py_ssize_t count = 0;
    int compact = 1, long_flag = 0;
    uint64_t last_ms = 0, last_seq = 0;
    while (p < end) {
        NEXT_ELEM();
        if (!e.is_int || (e.value & ~3LL)) BAD("bad stream entry header");
        long long flags = e.value;
        NEXT_ELEM();
        if (!e.is_int) BAD("bad stream entry header");
        uint64_t ms = base_ms + (uint64_t)e.value;
        NEXT_ELEM();
        if (!e.is_int) BAD("bad stream entry header");
        uint64_t seq = master_seq + (uint64_t)e.value;
        if (count == 0 ? (ms != base_ms || seq != master_seq) : (ms < last_ms || (ms == last_ms && seq <= last_seq))) {
            if (count == 0) BAD("stream listpack whose first entry is not its master ID");
            BAD("stream entries out of ID order");
        }
        last_ms = ms;
        last_seq = seq;
        uint32_t offset = (uint32_t)data.len;
        if ((Py_ssize_t)offset != data.len) BAD("stream node too large");
        if (!gb_put(&offsets, &offset, 4)) goto fail;
        if (ms - base_ms > 0xFFFFFFFFULL || seq > 0xFFFFFFFFULL) compact = 0;
        if (!gb_put(&keys, &ms, 8) || !gb_put(&seqs, &seq, 8)) goto fail;
        long long lp_count;
        if (flags & 2) {
            for (long long i = 0; i < nfields; i++) {
                NEXT_ELEM();
                if (!put_value(&data, &e, &long_flag)) goto fail;
            }
            lp_count = nfields + 3;
        } else {
            NEXT_ELEM();
            if (!e.is_int || e.value < 1 || e.value > size) BAD("bad stream entry field count");
            long long npairs = e.value;
            if (!set_bit(&own, count)) goto fail;
            if (!put_varint(&data, (uint64_t)npairs, &long_flag)) goto fail;
            for (long long i = 0; i < 2 * npairs; i++) {
                NEXT_ELEM();
                if (!put_value(&data, &e, &long_flag)) goto fail;
            }
            lp_count = 2 * npairs + 4;
        }
        NEXT_ELEM();
        if (!e.is_int || e.value != lp_count) BAD("bad stream entry lp-count");
        if ((flags & 1) && !set_bit(&dead, count)) goto fail;
        count++;
    }
    if (numele != 65535 && numele != elements) BAD("listpack header counts another number of elements");
    long long dead_count = 0;
    for (Py_ssize_t i = 0; i < dead.len; i++) dead_count += __builtin_popcount(dead.buf[i]);
    if (count == 0) BAD("stream listpack without entries");
    if (count != live + tombs || dead_count != tombs) BAD("stream master entry counts do not match the listpack's entries");
    if (compact) {
        /* Rewrite the ms halves in place as packed keys. */
        uint64_t *k = (uint64_t *)keys.buf;
        const uint64_t *sq = (const uint64_t *)seqs.buf;
        for (Py_ssize_t i = 0; i < count; i++) k[i] = ((k[i] - base_ms) << 32) | sq[i];
    }
    result = Py_BuildValue(
        "(LLOOy#y#y#y#y#y#O)", live, tombs, fields, compact ? Py_True : Py_False,
        (const char *)keys.buf, keys.len, (const char *)(compact ? NULL : seqs.buf), compact ? (Py_ssize_t)0 : seqs.len,
        (const char *)offsets.buf, offsets.len, (const char *)data.buf, data.len,
        dead.buf ? (const char *)dead.buf : "", dead.len, own.buf ? (const char *)own.buf : "", own.len,
        long_flag ? Py_True : Py_False);
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, why);
fail:
    result = NULL;
done:
    Py_XDECREF(fields);
    PyMem_Free(keys.buf);
    PyMem_Free(seqs.buf);
    PyMem_Free(offsets.buf);
    PyMem_Free(data.buf);
    PyMem_Free(dead.buf);
    PyMem_Free(own.buf);
    PyBuffer_Release(&in);
    return result;
#undef NEXT_ELEM
}

/* -- a Rill stream node written as its Redis listpack ----------------------------------------
 *
 * listpack_from_node(fields, base_ms, master_seq, keys, seqs, offsets, data, dead, own, live,
 * tombs): the listpack Redis holds for the node (stream_codec.py node_listpack is the
 * specification): `keys` the packed u64 IDs of a compact node (seqs None), or the ms halves
 * of a wide one with `seqs` its sequences; the rest as node_from_listpack returns them. */

static int lp_append_int(growbuf *g, long long v) {
    u8 b[10];
    int n;
    uint64_t u = (uint64_t)v;
    if (v >= 0 && v <= 127) {
        b[0] = (u8)v;
        n = 1;
    } else if (v >= -4096 && v <= 4095) {
        u &= 0x1FFF;
        b[0] = (u8)((u >> 8) | 0xC0);
        b[1] = (u8)(u & 0xFF);
        n = 2;
    } else {
        int width = (v >= -32768 && v <= 32767) ? 2 : (v >= -8388608 && v <= 8388607) ? 3
                  : (v >= -2147483648LL && v <= 2147483647LL) ? 4 : 8;
        b[0] = width == 2 ? 0xF1 : width == 3 ? 0xF2 : width == 4 ? 0xF3 : 0xF4;
        for (int i = 0; i < width; i++) b[1 + i] = (u8)(u >> (8 * i));
        n = 1 + width;
    }
    b[n] = (u8)n; /* n < 128: a one-byte back-length */
    return gb_put(g, b, n + 1);
}

/* lpStringToInt64 (string2ll's rules): 1 and the value when s is an int64's canonical form. */
static int lp_string_to_int64(const u8 *s, Py_ssize_t len, long long *out) {
    if (len == 0 || len >= 21) return 0;
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    Py_ssize_t i = 0;
    int negative = 0;
    if (s[0] == '-') {
        negative = 1;
        i = 1;
        if (len == 1) return 0;
    }
    if (s[i] < '1' || s[i] > '9') return 0;
    uint64_t v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10) return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (negative) {
        if (v > ((uint64_t)LLONG_MAX) + 1) return 0;
        *out = (long long)(0 - v);
    } else {
        if (v > (uint64_t)LLONG_MAX) return 0;
        *out = (long long)v;
    }
    return 1;
}

static int lp_append_string(growbuf *g, const u8 *s, Py_ssize_t n) {
    long long v;
    if (n > 0 && n < 21 && ((s[0] >= '0' && s[0] <= '9') || s[0] == '-') && lp_string_to_int64(s, n, &v))
        return lp_append_int(g, v);
    u8 head[5];
    int h;
    if (n < 64) {
        head[0] = (u8)(0x80 | n);
        h = 1;
    } else if (n < 4096) {
        head[0] = (u8)(0xE0 | (n >> 8));
        head[1] = (u8)(n & 0xFF);
        h = 2;
    } else {
        head[0] = 0xF0;
        for (int i = 0; i < 4; i++) head[1 + i] = (u8)((uint64_t)n >> (8 * i));
        h = 5;
    }
    uint64_t l = (uint64_t)h + (uint64_t)n;
    uint64_t size = lp_backlen_size(l);
    u8 back[5];
    for (uint64_t i = 0; i < size; i++) {
        u8 byte = (u8)((l >> (7 * (size - 1 - i))) & 127);
        back[i] = i > 0 ? (u8)(byte | 128) : byte;
    }
    return gb_put(g, head, h) && gb_put(g, s, n) && gb_put(g, back, (Py_ssize_t)size);
}

/* The varint length at data[*pos] (node_values.py put_len), then the string's bounds. */
static int read_packed(const u8 *data, Py_ssize_t end, Py_ssize_t *pos, const u8 **s, Py_ssize_t *n) {
    uint64_t v = 0;
    int shift = 0;
    for (;;) {
        if (*pos >= end || shift > 56) return 0;
        u8 b = data[(*pos)++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) break;
        shift += 7;
    }
    if (v > (uint64_t)(end - *pos)) return 0;
    *s = data + *pos;
    *n = (Py_ssize_t)v;
    *pos += (Py_ssize_t)v;
    return 1;
}

static int bit_at(const Py_buffer *mask, Py_ssize_t i) {
    Py_ssize_t byte = i / 8;
    return byte < mask->len && ((((const u8 *)mask->buf)[byte] >> (i % 8)) & 1);
}

static PyObject *py_listpack_from_node(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "listpack_from_node(fields, base_ms, master_seq, keys, seqs, offsets, data, dead, own, live, tombs)");
        return NULL;
    }
    PyObject *fields = args[0];
    if (!PyList_Check(fields)) {
        PyErr_SetString(PyExc_TypeError, "fields must be a list");
        return NULL;
    }
    uint64_t base_ms = PyLong_AsUnsignedLongLong(args[1]);
    if (base_ms == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    uint64_t master_seq = PyLong_AsUnsignedLongLong(args[2]);
    if (master_seq == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    long long live = PyLong_AsLongLong(args[9]);
    long long tombs = PyLong_AsLongLong(args[10]);
    if (PyErr_Occurred()) return NULL;
    int compact = args[4] == Py_None;
    Py_buffer keys = {0}, seqs = {0}, offsets = {0}, data = {0}, dead = {0}, own = {0};
    PyObject *result = NULL;
    growbuf body = {0};
    const char *why = NULL;
    if (PyObject_GetBuffer(args[3], &keys, PyBUF_SIMPLE) < 0) goto fail;
    if (!compact && PyObject_GetBuffer(args[4], &seqs, PyBUF_SIMPLE) < 0) goto fail;
    if (PyObject_GetBuffer(args[5], &offsets, PyBUF_SIMPLE) < 0) goto fail;
    if (PyObject_GetBuffer(args[6], &data, PyBUF_SIMPLE) < 0) goto fail;
    if (PyObject_GetBuffer(args[7], &dead, PyBUF_SIMPLE) < 0) goto fail;
    if (PyObject_GetBuffer(args[8], &own, PyBUF_SIMPLE) < 0) goto fail;
    Py_ssize_t n = keys.len / 8;
    if (keys.len % 8 || offsets.len != 4 * n || (!compact && seqs.len != keys.len)) BAD("node arrays of different lengths");
    Py_ssize_t nfields = PyList_GET_SIZE(fields);
    if (!lp_append_int(&body, live) || !lp_append_int(&body, tombs) || !lp_append_int(&body, nfields)) goto fail;
    for (Py_ssize_t i = 0; i < nfields; i++) {
        PyObject *f = PyList_GET_ITEM(fields, i);
        if (!PyBytes_Check(f)) BAD("a field name is not bytes");
        if (!lp_append_string(&body, (const u8 *)PyBytes_AS_STRING(f), PyBytes_GET_SIZE(f))) goto fail;
    }
    if (!lp_append_int(&body, 0)) goto fail;
    unsigned long long count = 4 + (unsigned long long)nfields;
    const uint64_t *k = (const uint64_t *)keys.buf;
    const uint64_t *sq = (const uint64_t *)seqs.buf;
    const uint32_t *off = (const uint32_t *)offsets.buf;
    const u8 *d = (const u8 *)data.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t ms = compact ? base_ms + (k[i] >> 32) : k[i];
        uint64_t seq = compact ? (k[i] & 0xFFFFFFFFULL) : sq[i];
        int same = !bit_at(&own, i);
        long long flags = (bit_at(&dead, i) ? 1 : 0) | (same ? 2 : 0);
        if (!lp_append_int(&body, flags) || !lp_append_int(&body, (long long)(ms - base_ms)) ||
            !lp_append_int(&body, (long long)(seq - master_seq))) goto fail;
        Py_ssize_t pos = off[i];
        Py_ssize_t end = i + 1 < n ? (Py_ssize_t)off[i + 1] : data.len;
        if (pos > end || end > data.len) BAD("node offsets out of order");
        const u8 *s;
        Py_ssize_t len;
        if (same) {
            for (Py_ssize_t j = 0; j < nfields; j++) {
                if (!read_packed(d, end, &pos, &s, &len)) BAD("node data shorter than its entries");
                if (!lp_append_string(&body, s, len)) goto fail;
            }
            if (!lp_append_int(&body, nfields + 3)) goto fail;
            count += (unsigned long long)nfields + 4;
        } else {
            uint64_t npairs = 0;
            int shift = 0;
            for (;;) {
                if (pos >= end || shift > 56) BAD("node data shorter than its entries");
                u8 b = d[pos++];
                npairs |= (uint64_t)(b & 0x7F) << shift;
                if (b < 0x80) break;
                shift += 7;
            }
            if (npairs > (uint64_t)data.len) BAD("node data shorter than its entries");
            if (!lp_append_int(&body, (long long)npairs)) goto fail;
            for (uint64_t j = 0; j < 2 * npairs; j++) {
                if (!read_packed(d, end, &pos, &s, &len)) BAD("node data shorter than its entries");
                if (!lp_append_string(&body, s, len)) goto fail;
            }
            if (!lp_append_int(&body, (long long)(2 * npairs + 4))) goto fail;
            count += 2 * npairs + 5;
        }
        if (pos != end) BAD("node entry longer than its values");
    }
    Py_ssize_t total = 6 + body.len + 1;
    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL) goto fail;
    u8 *out = (u8 *)PyBytes_AS_STRING(result);
    for (int i = 0; i < 4; i++) out[i] = (u8)((uint64_t)total >> (8 * i));
    unsigned numele = count < 65535 ? (unsigned)count : 65535;
    out[4] = (u8)(numele & 0xFF);
    out[5] = (u8)(numele >> 8);
    if (body.len) memcpy(out + 6, body.buf, (size_t)body.len);
    out[total - 1] = 0xFF;
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, why);
fail:
    result = NULL;
done:
    PyMem_Free(body.buf);
    if (keys.obj) PyBuffer_Release(&keys);
    if (seqs.obj) PyBuffer_Release(&seqs);
    if (offsets.obj) PyBuffer_Release(&offsets);
    if (data.obj) PyBuffer_Release(&data);
    if (dead.obj) PyBuffer_Release(&dead);
    if (own.obj) PyBuffer_Release(&own);
    return result;
}

static PyMethodDef methods[] = {
    {"lzf_compress", (PyCFunction)(void (*)(void))py_lzf_compress, METH_FASTCALL,
     "lzf_compress(data, out_len): the compressed bytes, or None when they do not fit."},
    {"lzf_decompress", (PyCFunction)(void (*)(void))py_lzf_decompress, METH_FASTCALL,
     "lzf_decompress(data, out_len): exactly out_len bytes, or None."},
    {"crc64", (PyCFunction)(void (*)(void))py_crc64, METH_FASTCALL, "crc64(crc, data): Redis's CRC-64."},
    {"listpack_from_node", (PyCFunction)(void (*)(void))py_listpack_from_node, METH_FASTCALL,
     "listpack_from_node(...): a stream node's Redis listpack (see the source)."},
    {"node_from_listpack", (PyCFunction)(void (*)(void))py_node_from_listpack, METH_FASTCALL,
     "node_from_listpack(lp, base_ms, master_seq): a stream listpack's node pieces (see the source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rdb_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rdb_native(void) {
    crc64_init();
    return PyModule_Create(&module);
}
