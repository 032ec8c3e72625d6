/* The common packets of a Perfetto trace read in C: TrackEvent slices (begin / end), instants and
 * their flows, debug annotations of plain values, interned names, categories and annotation names.
 *
 * This is a fast path beside vtui.io.pftrace, not a second reader: it works on the reader's own
 * state (its sequences, tracks, open-slice stacks, flow steps and event list), and every packet it
 * does not read exactly as the reference reader would (another packet kind, a field it does not
 * know, an interned id not found, a string that is not UTF-8, a counter...) it hands, whole, to the
 * reader's Python method before it has changed anything that method would not change the same way
 * again (a sequence's clear and its interning are repeatable). So the events, their order and the
 * reader's counts are the reference reader's; tests/core/test_pftrace_fast.py holds it to that.
 *
 *   configure(Event, Raw, EMPTY_RAW, json_encode, json_decode, Sequence)   once
 *   run(state, buf, pos) -> (pos, need, rows, packets)
 *
 * ``state``: (seqs, tracks, track_keys, stacks, out, flow_steps, slow_packet, rows). ``run`` reads
 * the whole ``packet`` records of buf[pos:]; it stops at a record cut by the end of ``buf`` (need:
 * the bytes that record takes from the returned pos) or at bytes that are not a record (need -1:
 * the caller's Python stream reader says why). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define OK 0
#define SLOW 1  /* the packet goes to the reference reader */
#define ERR (-1) /* a Python exception is set */

#define MAX_PACKET (64 << 20)
#define MAX_IDS 64
#define MAX_CATS 16
#define TS_LIMIT ((uint64_t)1 << 62) /* timestamps beyond this go to the reference reader */

static PyObject *g_event, *g_raw, *g_empty_raw, *g_encode, *g_decode, *g_sequence;
static PyObject *s_X, *s_i, *s_t, *s_p, *s_g, *s_empty, *s_noname, *s_comma, *s_correlation;
static PyObject *a_names, *a_cats, *a_arg_names, *a_arg_strings, *a_valid, *a_default_track, *a_clear,
    *a_key, *a_is_process;

/* ---- the wire format ---------------------------------------------------------------------- */

static inline int varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t r = 0;
    const uint8_t *q = *p;
    for (int shift = 0; q < end && shift < 64; shift += 7) {
        uint8_t b = *q++;
        if (shift == 63 && b > 1) return -1; /* more than 64 bits */
        r |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *p = q;
            *out = r;
            return 0;
        }
    }
    return -1;
}

typedef struct {
    uint32_t num;
    int wt;
    uint64_t v;        /* a varint, or a fixed64 / fixed32's bits */
    const uint8_t *d;  /* a length-delimited field's bytes */
    size_t n;
} Field;

/* 1: a field read; 0: the end; -1: not a message */
static inline int next_field(const uint8_t **p, const uint8_t *end, Field *f) {
    if (*p >= end) return 0;
    uint64_t tag;
    if (varint(p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1FFFFFFF) return -1;
    f->num = (uint32_t)(tag >> 3);
    f->wt = (int)(tag & 7);
    switch (f->wt) {
    case 0:
        return varint(p, end, &f->v) ? -1 : 1;
    case 1:
        if (end - *p < 8) return -1;
        memcpy(&f->v, *p, 8); /* little-endian hosts (x86, arm) */
        *p += 8;
        return 1;
    case 2: {
        uint64_t n;
        if (varint(p, end, &n) || n > (uint64_t)(end - *p)) return -1;
        f->d = *p;
        f->n = (size_t)n;
        *p += n;
        return 1;
    }
    case 5: {
        uint32_t v;
        if (end - *p < 4) return -1;
        memcpy(&v, *p, 4);
        f->v = v;
        *p += 4;
        return 1;
    }
    default:
        return -1;
    }
}

/* A repeated uint64 (varint) field's values, packed or not, appended to ids[*n]. */
static int put_varints(const Field *f, uint64_t *ids, int *n) {
    if (f->wt == 0) {
        if (*n >= MAX_IDS) return SLOW;
        ids[(*n)++] = f->v;
        return OK;
    }
    if (f->wt != 2) return SLOW;
    const uint8_t *p = f->d, *end = f->d + f->n;
    while (p < end) {
        if (*n >= MAX_IDS || varint(&p, end, &ids[*n])) return SLOW;
        (*n)++;
    }
    return OK;
}

/* A repeated fixed64 field's values, packed or not. */
static int put_fixed64s(const Field *f, uint64_t *ids, int *n) {
    if (f->wt == 1) {
        if (*n >= MAX_IDS) return SLOW;
        ids[(*n)++] = f->v;
        return OK;
    }
    if (f->wt != 2 || f->n % 8) return SLOW;
    for (size_t k = 0; k < f->n; k += 8) {
        if (*n >= MAX_IDS) return SLOW;
        memcpy(&ids[(*n)++], f->d + k, 8);
    }
    return OK;
}

/* Strict UTF-8 as Python decodes it (no overlong forms, no surrogates, nothing past U+10FFFF). */
static int utf8_ok(const uint8_t *d, size_t n) {
    size_t k = 0;
    while (k < n) {
        uint8_t c = d[k];
        if (c < 0x80) {
            k++;
            continue;
        }
        int len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - k < (size_t)len) return 0;
        for (int j = 1; j < len; j++) {
            if ((d[k + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (d[k + j] & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        k += len;
    }
    return 1;
}

/* The packet is checked whole before the reader's state is touched: every field one the helper
 * knows, with its wire type, every text UTF-8. What goes to the reference reader after that
 * (an interned id not found, an end with no begin...) is a packet the protobuf runtime decodes,
 * so the reference does to the state what the helper did, and more. */
static int check_entries(const uint8_t *d, size_t n) {
    const uint8_t *p = d, *end = d + n;
    Field f = {0}, g = {0};
    int r, r2;
    while ((r = next_field(&p, end, &f)) == 1) {
        if (f.wt != 2 || (f.num != 1 && f.num != 2 && f.num != 3 && f.num != 29)) return SLOW;
        const uint8_t *q = f.d, *qe = f.d + f.n;
        while ((r2 = next_field(&q, qe, &g)) == 1) {
            if (!((g.num == 1 && g.wt == 0) || (g.num == 2 && g.wt == 2))) return SLOW;
            if (g.num == 2 && f.num != 29 && !utf8_ok(g.d, g.n)) return SLOW;
        }
        if (r2 < 0) return SLOW;
    }
    return r < 0 ? SLOW : OK;
}

static int check_annotation(const Field *ann) {
    const uint8_t *p = ann->d, *end = ann->d + ann->n;
    Field f = {0};
    int r;
    while ((r = next_field(&p, end, &f)) == 1) {
        switch (f.num) {
        case 1: case 2: case 3: case 4: case 7: case 17:
            if (f.wt != 0) return SLOW;
            break;
        case 5:
            if (f.wt != 1) return SLOW;
            break;
        case 6: case 9: case 10:
            if (f.wt != 2 || !utf8_ok(f.d, f.n)) return SLOW;
            break;
        default: /* nested values, dict entries, arrays, protos: the reference reader */
            return SLOW;
        }
    }
    return r < 0 ? SLOW : OK;
}

/* ---- Python values -------------------------------------------------------------------------- */

/* A string field's text; NULL with SLOW where it is not UTF-8 (the reference reader decides). */
static PyObject *text(const uint8_t *d, size_t n, int *rc) {
    PyObject *s = PyUnicode_DecodeUTF8((const char *)d, (Py_ssize_t)n, NULL);
    if (s == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            *rc = SLOW;
        } else {
            *rc = ERR;
        }
    }
    return s;
}

/* ns as the µs text a Chrome trace writes, as vtui.io.pftrace._us_text: a msgspec.Raw. */
static PyObject *us_text(int64_t ns) {
    char buf[48], *end = buf + sizeof buf, *p = end;
    uint64_t m = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    uint64_t whole = m / 1000, frac = m % 1000;
    if (frac) { /* three digits, the trailing zeros dropped */
        int digits[3] = {(int)(frac / 100), (int)(frac / 10 % 10), (int)(frac % 10)};
        int keep = digits[2] ? 3 : digits[1] ? 2 : 1;
        for (int k = keep - 1; k >= 0; k--) *--p = (char)('0' + digits[k]);
        *--p = '.';
    }
    do {
        *--p = (char)('0' + whole % 10);
        whole /= 10;
    } while (whole);
    if (ns < 0 && m) *--p = '-';
    PyObject *b = PyBytes_FromStringAndSize(p, end - p);
    if (b == NULL) return NULL;
    PyObject *raw = PyObject_CallOneArg(g_raw, b);
    Py_DECREF(b);
    return raw;
}

/* An event's args as a msgspec.Raw: from their JSON (bytes, written here) or a dict (encoded). */
static PyObject *raw_args(PyObject *args) {
    if (PyBytes_CheckExact(args)) {
        if (PyBytes_GET_SIZE(args) == 0) {
            Py_INCREF(g_empty_raw);
            return g_empty_raw;
        }
        return PyObject_CallOneArg(g_raw, args);
    }
    if (PyDict_GET_SIZE(args) == 0) {
        Py_INCREF(g_empty_raw);
        return g_empty_raw;
    }
    PyObject *b = PyObject_CallOneArg(g_encode, args);
    if (b == NULL) return NULL;
    PyObject *raw = PyObject_CallOneArg(g_raw, b);
    Py_DECREF(b);
    return raw;
}

/* ---- the reader's state ------------------------------------------------------------------------ */

/* What an interned table holds for small iids, read once: borrowed from the table (which holds
 * them), valid while the generation is; flushed when the sequence changes, clears, or the
 * reference reader runs, and kept up to date when the helper interns. */
#define MIRROR_MAX 65536
typedef struct {
    PyObject **ptr;
    uint32_t *gen;
    size_t cap;
    uint32_t cur;
} Mirror;

typedef struct {
    PyObject *seqs, *tracks, *keys, *stacks, *out, *steps, *slow;
    Py_ssize_t rows;
    /* the sequence of the last packet (borrowed from its object, which ``seqs`` holds) */
    PyObject *seq_id, *seq, *names, *cats, *arg_names, *arg_strings;
    Mirror mirrors[4]; /* names, cats, arg_names, arg_strings */
} State;

static void flush_mirrors(State *st) {
    for (int k = 0; k < 4; k++) st->mirrors[k].cur++;
}

static void free_mirrors(State *st) {
    for (int k = 0; k < 4; k++) {
        PyMem_Free(st->mirrors[k].ptr);
        PyMem_Free(st->mirrors[k].gen);
    }
}

static Mirror *mirror_of(State *st, PyObject *table) {
    return table == st->names ? &st->mirrors[0] : table == st->cats ? &st->mirrors[1]
         : table == st->arg_names ? &st->mirrors[2] : table == st->arg_strings ? &st->mirrors[3] : NULL;
}

static void mirror_put(Mirror *m, uint64_t iid, PyObject *v) {
    if (m == NULL || iid >= MIRROR_MAX) return;
    if (iid >= m->cap) {
        size_t cap = m->cap ? m->cap : 256;
        while (cap <= iid) cap *= 2;
        PyObject **ptr = PyMem_Realloc(m->ptr, cap * sizeof *ptr);
        if (ptr == NULL) return; /* (only a cache) */
        m->ptr = ptr;
        uint32_t *gen = PyMem_Realloc(m->gen, cap * sizeof *gen);
        if (gen == NULL) return;
        m->gen = gen;
        memset(gen + m->cap, 0, (cap - m->cap) * sizeof *gen);
        m->cap = cap;
    }
    m->ptr[iid] = v;
    m->gen[iid] = m->cur + 1; /* generations start at 1: a fresh slot (0) is never current */
}

/* table[iid], borrowed; NULL: not there (no error) or an error (set). */
static PyObject *find(State *st, PyObject *table, uint64_t iid) {
    Mirror *m = mirror_of(st, table);
    if (m != NULL && iid < m->cap && m->gen[iid] == m->cur + 1) return m->ptr[iid];
    PyObject *key = PyLong_FromUnsignedLongLong(iid);
    if (key == NULL) return NULL;
    PyObject *got = PyDict_GetItemWithError(table, key);
    Py_DECREF(key);
    if (got != NULL) mirror_put(m, iid, got);
    return got;
}

/* table[iid] as the reference reads an interned name: found -> it; iid 0 -> ""; else SLOW
 * (the reference counts it). */
static PyObject *interned(State *st, PyObject *table, uint64_t iid, int *rc) {
    PyObject *got = find(st, table, iid);
    if (got != NULL) {
        Py_INCREF(got);
        return got;
    }
    if (PyErr_Occurred()) {
        *rc = ERR;
        return NULL;
    }
    if (iid == 0) {
        Py_INCREF(s_empty);
        return s_empty;
    }
    *rc = SLOW;
    return NULL;
}

static void forget_seq(State *st) {
    flush_mirrors(st);
    Py_CLEAR(st->seq_id);
    Py_CLEAR(st->seq);
    Py_CLEAR(st->names);
    Py_CLEAR(st->cats);
    Py_CLEAR(st->arg_names);
    Py_CLEAR(st->arg_strings);
}

static int use_seq(State *st, uint64_t id) {
    PyObject *key = PyLong_FromUnsignedLongLong(id);
    if (key == NULL) return ERR;
    if (st->seq_id != NULL) {
        int same = PyObject_RichCompareBool(key, st->seq_id, Py_EQ);
        if (same) {
            Py_DECREF(key);
            return same < 0 ? ERR : OK;
        }
    }
    forget_seq(st);
    PyObject *seq = PyDict_GetItemWithError(st->seqs, key);
    if (seq == NULL) {
        if (PyErr_Occurred() || (seq = PyObject_CallNoArgs(g_sequence)) == NULL) {
            Py_DECREF(key);
            return ERR;
        }
        if (PyDict_SetItem(st->seqs, key, seq)) {
            Py_DECREF(seq);
            Py_DECREF(key);
            return ERR;
        }
    } else {
        Py_INCREF(seq);
    }
    st->seq_id = key;
    st->seq = seq;
    if (!(st->names = PyObject_GetAttr(seq, a_names)) || !(st->cats = PyObject_GetAttr(seq, a_cats)) ||
        !(st->arg_names = PyObject_GetAttr(seq, a_arg_names)) ||
        !(st->arg_strings = PyObject_GetAttr(seq, a_arg_strings))) {
        forget_seq(st);
        return ERR;
    }
    if (!PyDict_CheckExact(st->names) || !PyDict_CheckExact(st->cats) || !PyDict_CheckExact(st->arg_names) ||
        !PyDict_CheckExact(st->arg_strings)) {
        forget_seq(st);
        PyErr_SetString(PyExc_TypeError, "a Sequence's tables are dicts");
        return ERR;
    }
    return OK;
}

/* ---- interned data ------------------------------------------------------------------------------ */

/* One entry (iid 1, text 2) into ``table``; ``bytes_text``: an InternedString (bytes, decoded
 * with replacement characters, as the reference does) rather than a string field. */
static int intern_entry(State *st, PyObject *table, const Field *entry, int bytes_text) {
    const uint8_t *p = entry->d, *end = entry->d + entry->n;
    Field f = {0};
    int r, rc = OK;
    uint64_t iid = 0;
    const uint8_t *d = (const uint8_t *)"";
    size_t n = 0;
    while ((r = next_field(&p, end, &f)) == 1) {
        if (f.num == 1 && f.wt == 0) {
            iid = f.v;
        } else if (f.num == 2 && f.wt == 2) {
            d = f.d;
            n = f.n;
        } else {
            return SLOW;
        }
    }
    if (r < 0) return SLOW;
    PyObject *s = bytes_text ? PyUnicode_DecodeUTF8((const char *)d, (Py_ssize_t)n, "replace") : text(d, n, &rc);
    if (s == NULL) return rc == SLOW ? SLOW : ERR;
    PyObject *key = PyLong_FromUnsignedLongLong(iid);
    if (key == NULL) {
        Py_DECREF(s);
        return ERR;
    }
    int bad = PyDict_SetItem(table, key, s);
    Py_DECREF(key);
    if (!bad) mirror_put(mirror_of(st, table), iid, s); /* (the table holds it now) */
    Py_DECREF(s);
    return bad ? ERR : OK;
}

/* Check first (a SLOW after some entries is fine: interning again gives the same tables). */
static int intern(State *st, const uint8_t *d, size_t n) {
    const uint8_t *p = d, *end = d + n;
    Field f = {0};
    int r, rc;
    while ((r = next_field(&p, end, &f)) == 1) {
        if (f.wt != 2) return SLOW;
        switch (f.num) {
        case 1: rc = intern_entry(st, st->cats, &f, 0); break;
        case 2: rc = intern_entry(st, st->names, &f, 0); break;
        case 3: rc = intern_entry(st, st->arg_names, &f, 0); break;
        case 29: rc = intern_entry(st, st->arg_strings, &f, 1); break;
        default: return SLOW;
        }
        if (rc != OK) return rc;
    }
    return r < 0 ? SLOW : OK;
}

/* ---- debug annotations ------------------------------------------------------------------------- */

/* One DebugAnnotation into ``args`` (its name and value), as vtui.io.pftrace_args.event_args. */
static int annotation(State *st, const Field *ann, PyObject *args) {
    const uint8_t *p = ann->d, *end = ann->d + ann->n;
    Field f = {0}, val = {0}, name = {0};
    int r, rc = OK, has_val = 0, has_name = 0;
    while ((r = next_field(&p, end, &f)) == 1) {
        switch (f.num) {
        case 1: case 10: /* name_iid, name: a oneof, the last one read wins */
            if (f.wt != (f.num == 1 ? 0 : 2)) return SLOW;
            name = f;
            has_name = 1;
            break;
        case 2: case 3: case 4: case 7: case 17:
            if (f.wt != 0) return SLOW;
            val = f;
            has_val = 1;
            break;
        case 5:
            if (f.wt != 1) return SLOW;
            val = f;
            has_val = 1;
            break;
        case 6: case 9:
            if (f.wt != 2) return SLOW;
            val = f;
            has_val = 1;
            break;
        default: /* nested values, dict entries, arrays, protos: the reference reader */
            return SLOW;
        }
    }
    if (r < 0) return SLOW;
    PyObject *key;
    if (!has_name) {
        key = s_noname;
        Py_INCREF(key);
    } else if (name.num == 10) {
        if (!(key = text(name.d, name.n, &rc))) return rc;
    } else {
        key = find(st, st->arg_names, name.v);
        if (key != NULL) {
            Py_INCREF(key);
        } else if (PyErr_Occurred()) {
            return ERR;
        } else if (name.v == 0) {
            key = s_noname;
            Py_INCREF(key);
        } else {
            return SLOW; /* not interned: the reference counts it */
        }
    }
    PyObject *value = NULL;
    if (!has_val) {
        value = Py_None;
        Py_INCREF(value);
    } else {
        switch (val.num) {
        case 2: value = PyBool_FromLong(val.v != 0); break;
        case 3: value = PyLong_FromUnsignedLongLong(val.v); break;
        case 4: value = PyLong_FromLongLong((long long)val.v); break;
        case 5: {
            double x;
            memcpy(&x, &val.v, 8);
            value = PyFloat_FromDouble(x);
            break;
        }
        case 7: {
            char buf[24];
            snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)val.v);
            value = PyUnicode_FromString(buf);
            break;
        }
        case 6: value = text(val.d, val.n, &rc); break;
        case 17: value = interned(st, st->arg_strings, val.v, &rc); break;
        case 9: { /* legacy JSON: msgspec reads it; what it refuses the reference reads its own way */
            PyObject *s = text(val.d, val.n, &rc);
            if (s == NULL) break;
            value = PyObject_CallOneArg(g_decode, s);
            Py_DECREF(s);
            if (value == NULL && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
                PyErr_Clear();
                rc = SLOW;
            } else if (value == NULL) {
                rc = ERR;
            }
            break;
        }
        }
        if (value == NULL && rc == OK) rc = ERR;
    }
    if (value == NULL) {
        Py_DECREF(key);
        return rc;
    }
    int bad = PyDict_SetItem(args, key, value);
    Py_DECREF(key);
    Py_DECREF(value);
    return bad ? ERR : OK;
}

/* ---- track events ------------------------------------------------------------------------------ */

typedef struct {
    const uint8_t *d;
    size_t n;
    uint64_t type, track, name_iid, corr_iid, corr;
    int has_type, has_track, has_ann, legacy_scope, flows;
    Field name, corr_str;
    int named;       /* 0 none, 10 name_iid, 23 name */
    int corr_which;  /* 0 none, 52, 53, 54 */
    uint64_t cat_iids[MAX_CATS];
    int n_cat_iids;
    const uint8_t *cats[MAX_CATS];
    size_t cat_lens[MAX_CATS];
    int n_cats;
    uint64_t ids[MAX_IDS], terms[MAX_IDS], ids_old[MAX_IDS], terms_old[MAX_IDS];
    int n_ids, n_terms, n_ids_old, n_terms_old;
} Ev;

/* The legacy event of an instant that says only its scope (what vtui's exporter writes). */
static int legacy_scope(const Field *legacy, int *scope) {
    const uint8_t *p = legacy->d, *end = legacy->d + legacy->n;
    Field f = {0};
    int r;
    while ((r = next_field(&p, end, &f)) == 1) {
        if (f.num != 14 || f.wt != 0 || f.v > 3) return SLOW;
        *scope = (int)f.v;
    }
    return r < 0 ? SLOW : OK;
}

static int parse_event(Ev *e) {
    const uint8_t *p = e->d, *end = e->d + e->n;
    Field f = {0};
    int r, rc;
    while ((r = next_field(&p, end, &f)) == 1) {
        switch (f.num) {
        case 9:
            if (f.wt != 0 || f.v < 1 || f.v > 3) return SLOW; /* counters, unknown types: the reference */
            e->type = f.v;
            e->has_type = 1;
            break;
        case 11:
            if (f.wt != 0) return SLOW;
            e->track = f.v;
            e->has_track = 1;
            break;
        case 10:
            if (f.wt != 0) return SLOW;
            e->name_iid = f.v;
            e->named = 10;
            break;
        case 23:
            if (f.wt != 2 || !utf8_ok(f.d, f.n)) return SLOW;
            e->name = f;
            e->named = 23;
            break;
        case 3:
            if (f.wt == 0) {
                if (e->n_cat_iids >= MAX_CATS) return SLOW;
                e->cat_iids[e->n_cat_iids++] = f.v;
            } else if (f.wt == 2) {
                const uint8_t *q = f.d, *qe = f.d + f.n;
                while (q < qe) {
                    if (e->n_cat_iids >= MAX_CATS || varint(&q, qe, &e->cat_iids[e->n_cat_iids])) return SLOW;
                    e->n_cat_iids++;
                }
            } else {
                return SLOW;
            }
            break;
        case 22:
            if (f.wt != 2 || e->n_cats >= MAX_CATS || !utf8_ok(f.d, f.n)) return SLOW;
            e->cats[e->n_cats] = f.d;
            e->cat_lens[e->n_cats++] = f.n;
            break;
        case 4:
            if (f.wt != 2 || check_annotation(&f)) return SLOW;
            e->has_ann = 1;
            break;
        case 47: if ((rc = put_fixed64s(&f, e->ids, &e->n_ids))) return rc; break;
        case 48: if ((rc = put_fixed64s(&f, e->terms, &e->n_terms))) return rc; break;
        case 36: if ((rc = put_varints(&f, e->ids_old, &e->n_ids_old))) return rc; break;
        case 42: if ((rc = put_varints(&f, e->terms_old, &e->n_terms_old))) return rc; break;
        case 52: case 54:
            if (f.wt != 0) return SLOW;
            if (f.num == 52) e->corr = f.v; else e->corr_iid = f.v;
            e->corr_which = (int)f.num;
            break;
        case 53:
            if (f.wt != 2 || !utf8_ok(f.d, f.n)) return SLOW;
            e->corr_str = f;
            e->corr_which = 53;
            break;
        case 6:
            if (f.wt != 2 || legacy_scope(&f, &e->legacy_scope)) return SLOW;
            break;
        default: /* legacy timestamps, counters, thread times, typed Chrome fields...: the reference */
            return SLOW;
        }
    }
    if (r < 0 || !e->has_type) return SLOW;
    if (e->legacy_scope && e->type != 3) return SLOW;
    e->flows = e->n_ids || e->n_terms || e->n_ids_old || e->n_terms_old;
    return OK;
}

/* The name as the reference reads it (``names.get(iid) or interned(...)``). */
static PyObject *event_name(State *st, Ev *e, int *rc) {
    if (e->named == 23) return text(e->name.d, e->name.n, rc);
    return interned(st, st->names, e->named ? e->name_iid : 0, rc);
}

static PyObject *event_cat(State *st, Ev *e, int *rc) {
    if (e->n_cats || e->n_cat_iids != 1) {
        /* categories as text joined by commas; several iids each as ``interned`` (iid 0: "") */
        int many = e->n_cats > 0;
        int n = many ? e->n_cats : e->n_cat_iids;
        PyObject *parts = PyList_New(n);
        if (parts == NULL) {
            *rc = ERR;
            return NULL;
        }
        for (int k = 0; k < n; k++) {
            PyObject *s;
            if (many) {
                s = text(e->cats[k], e->cat_lens[k], rc);
            } else if (e->cat_iids[k] == 0) {
                s = s_empty;
                Py_INCREF(s);
            } else {
                s = interned(st, st->cats, e->cat_iids[k], rc);
            }
            if (s == NULL) {
                Py_DECREF(parts);
                return NULL;
            }
            PyList_SET_ITEM(parts, k, s);
        }
        PyObject *out = PyUnicode_Join(s_comma, parts);
        Py_DECREF(parts);
        if (out == NULL) *rc = ERR;
        return out;
    }
    return interned(st, st->cats, e->cat_iids[0], rc);
}

/* The event's args (a new dict), or NULL with *rc SLOW / ERR. */
static PyObject *event_args(State *st, Ev *e, int *rc) {
    PyObject *args = PyDict_New();
    if (args == NULL) {
        *rc = ERR;
        return NULL;
    }
    if (e->has_ann) {
        const uint8_t *p = e->d, *end = e->d + e->n;
        Field f = {0};
        while (next_field(&p, end, &f) == 1) {
            if (f.num == 4 && (*rc = annotation(st, &f, args)) != OK) {
                Py_DECREF(args);
                return NULL;
            }
        }
    }
    if (e->corr_which) {
        int has = PyDict_Contains(args, s_correlation);
        if (has < 0) {
            *rc = ERR;
            Py_DECREF(args);
            return NULL;
        }
        if (!has) {
            PyObject *v = NULL;
            if (e->corr_which == 52) {
                v = PyLong_FromUnsignedLongLong(e->corr);
            } else if (e->corr_which == 53) {
                v = text(e->corr_str.d, e->corr_str.n, rc);
            } else {
                PyObject *k = PyLong_FromUnsignedLongLong(e->corr_iid);
                if (k != NULL) {
                    v = PyDict_GetItemWithError(st->arg_strings, k);
                    Py_DECREF(k);
                    if (v == NULL && !PyErr_Occurred()) v = s_empty;
                    Py_XINCREF(v);
                }
            }
            if (v == NULL || PyDict_SetItem(args, s_correlation, v)) {
                if (*rc == OK) *rc = ERR;
                Py_XDECREF(v);
                Py_DECREF(args);
                return NULL;
            }
            Py_DECREF(v);
        }
    }
    return args;
}

/* ---- args as JSON, written directly --------------------------------------------------------- */

#define DICT 2 /* the args need the dict path (a key twice...): as the reference */
#define MAX_KEYS 32

typedef struct {
    char *d;
    size_t len, cap;
} Buf;

static Buf g_buf;

static int put(Buf *b, const char *s, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n) cap *= 2;
        char *d = PyMem_Realloc(b->d, cap);
        if (d == NULL) {
            PyErr_NoMemory();
            return ERR;
        }
        b->d = d;
        b->cap = cap;
    }
    memcpy(b->d + b->len, s, n);
    b->len += n;
    return OK;
}

/* A JSON string as msgspec writes one: ", \ and control characters escaped, the rest as it is. */
static int put_text(Buf *b, const uint8_t *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    if (put(b, "\"", 1)) return ERR;
    size_t run = 0;
    for (size_t k = 0; k < n; k++) {
        uint8_t c = s[k];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (put(b, (const char *)s + run, k - run)) return ERR;
        run = k + 1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t m = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\t': esc[1] = 't'; break;
        case '\n': esc[1] = 'n'; break;
        case '\f': esc[1] = 'f'; break;
        case '\r': esc[1] = 'r'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            m = 6;
        }
        if (put(b, esc, m)) return ERR;
    }
    if (put(b, (const char *)s + run, n - run)) return ERR;
    return put(b, "\"", 1);
}

static int put_str_obj(Buf *b, PyObject *s) {
    Py_ssize_t n;
    const char *u = PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;
    if (u == NULL) {
        PyErr_Clear(); /* (a lone surrogate: the dict path says what msgspec makes of it) */
        return DICT;
    }
    return put_text(b, (const uint8_t *)u, (size_t)n);
}

static int put_u64(Buf *b, uint64_t v, int negative) {
    char buf[24], *end = buf + sizeof buf, *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (negative) *--p = '-';
    return put(b, p, (size_t)(end - p));
}

/* The event's args as the JSON msgspec would write of the reference's dict, as bytes (b"" for
 * none); NULL with *rc SLOW, ERR, or DICT. */
static PyObject *args_json(State *st, Ev *e, int *rc) {
    Buf *b = &g_buf;
    const uint8_t *keys[MAX_KEYS];
    size_t key_lens[MAX_KEYS];
    int nkeys = 0, r;
    b->len = 0;
    if (put(b, "{", 1)) goto error;
    const uint8_t *p = e->d, *end = e->d + e->n;
    Field f = {0};
    while (e->has_ann && next_field(&p, end, &f) == 1) {
        if (f.num != 4) continue;
        const uint8_t *q = f.d, *qe = f.d + f.n;
        Field g = {0}, val = {0}, name = {0};
        int has_val = 0, has_name = 0;
        while (next_field(&q, qe, &g) == 1) { /* (checked before: known fields, wire types, UTF-8) */
            if (g.num == 1 || g.num == 10) {
                name = g;
                has_name = 1;
            } else {
                val = g;
                has_val = 1;
            }
        }
        const uint8_t *k;
        size_t kn;
        if (!has_name) {
            k = (const uint8_t *)"[no name]";
            kn = 9;
        } else if (name.num == 10) {
            k = name.d;
            kn = name.n;
        } else {
            PyObject *key = find(st, st->arg_names, name.v); /* borrowed: the table holds it */
            if (key == NULL && PyErr_Occurred()) goto error;
            if (key == NULL && name.v) {
                *rc = SLOW; /* not interned: the reference counts it */
                return NULL;
            }
            if (key == NULL) {
                k = (const uint8_t *)"[no name]";
                kn = 9;
            } else {
                Py_ssize_t n;
                k = (const uint8_t *)(PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &n) : NULL);
                if (k == NULL) {
                    PyErr_Clear();
                    *rc = DICT;
                    return NULL;
                }
                kn = (size_t)n;
            }
        }
        if (nkeys == MAX_KEYS) {
            *rc = DICT;
            return NULL;
        }
        for (int j = 0; j < nkeys; j++) {
            if (key_lens[j] == kn && !memcmp(keys[j], k, kn)) {
                *rc = DICT; /* a key twice: the dict keeps its first place and last value */
                return NULL;
            }
        }
        keys[nkeys] = k;
        key_lens[nkeys++] = kn;
        if ((nkeys > 1 && put(b, ",", 1)) || put_text(b, k, kn) || put(b, ":", 1)) goto error;
        if (!has_val) {
            r = put(b, "null", 4);
        } else {
            switch (val.num) {
            case 2: r = val.v ? put(b, "true", 4) : put(b, "false", 5); break;
            case 3: r = put_u64(b, val.v, 0); break;
            case 4: {
                int64_t v = (int64_t)val.v;
                r = put_u64(b, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0);
                break;
            }
            case 7: {
                char buf[24];
                int n = snprintf(buf, sizeof buf, "\"0x%llx\"", (unsigned long long)val.v);
                r = put(b, buf, (size_t)n);
                break;
            }
            case 6: r = put_text(b, val.d, val.n); break;
            case 17: {
                PyObject *v = interned(st, st->arg_strings, val.v, rc);
                if (v == NULL) return NULL;
                r = put_str_obj(b, v);
                Py_DECREF(v);
                break;
            }
            case 5: case 9: { /* a double, legacy JSON's values: as msgspec writes them (the same text in a dict) */
                PyObject *v;
                if (val.num == 5) {
                    double x;
                    memcpy(&x, &val.v, 8);
                    v = PyFloat_FromDouble(x);
                } else {
                    PyObject *text_ = PyUnicode_DecodeUTF8((const char *)val.d, (Py_ssize_t)val.n, NULL);
                    if (text_ == NULL) goto error; /* (checked UTF-8 before) */
                    v = PyObject_CallOneArg(g_decode, text_);
                    Py_DECREF(text_);
                    if (v == NULL) {
                        if (PyErr_ExceptionMatches(PyExc_MemoryError)) goto error;
                        PyErr_Clear();
                        *rc = SLOW; /* what msgspec refuses the reference reads its own way */
                        return NULL;
                    }
                }
                if (v == NULL) goto error;
                PyObject *out = PyObject_CallOneArg(g_encode, v);
                Py_DECREF(v);
                if (out == NULL) {
                    PyErr_Clear();
                    *rc = DICT;
                    return NULL;
                }
                r = put(b, PyBytes_AS_STRING(out), (size_t)PyBytes_GET_SIZE(out));
                Py_DECREF(out);
                break;
            }
            default:
                *rc = DICT;
                return NULL;
            }
        }
        if (r == DICT) {
            *rc = DICT;
            return NULL;
        }
        if (r) goto error;
    }
    if (e->corr_which) {
        int seen = 0;
        for (int j = 0; j < nkeys; j++) seen |= key_lens[j] == 11 && !memcmp(keys[j], "correlation", 11);
        if (!seen) {
            if ((nkeys && put(b, ",", 1)) || put(b, "\"correlation\":", 14)) goto error;
            nkeys++;
            if (e->corr_which == 52) {
                r = put_u64(b, e->corr, 0);
            } else if (e->corr_which == 53) {
                r = put_text(b, e->corr_str.d, e->corr_str.n);
            } else {
                PyObject *k = PyLong_FromUnsignedLongLong(e->corr_iid);
                if (k == NULL) goto error;
                PyObject *v = PyDict_GetItemWithError(st->arg_strings, k);
                Py_DECREF(k);
                if (v == NULL && PyErr_Occurred()) goto error;
                r = v == NULL ? put(b, "\"\"", 2) : put_str_obj(b, v);
            }
            if (r == DICT) {
                *rc = DICT;
                return NULL;
            }
            if (r) goto error;
        }
    }
    if (!nkeys) return PyBytes_FromStringAndSize("", 0);
    if (put(b, "}", 1)) goto error;
    return PyBytes_FromStringAndSize(b->d, (Py_ssize_t)b->len);
error:
    *rc = ERR;
    return NULL;
}

/* The args of a begin or an instant: their JSON where it can be written here, else the dict. */
static PyObject *begin_args(State *st, Ev *e, int *rc) {
    PyObject *args = args_json(st, e, rc);
    if (args == NULL && *rc == DICT) {
        *rc = OK;
        args = event_args(st, e, rc);
    }
    return args;
}

static PyObject *id_tuple(const uint64_t *a, int na, const uint64_t *b, int nb) {
    PyObject *t = PyTuple_New(na + nb);
    if (t == NULL) return NULL;
    for (int k = 0; k < na + nb; k++) {
        PyObject *v = PyLong_FromUnsignedLongLong(k < na ? a[k] : b[k - na]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

/* The flow step of the event (FlowSteps.add): ``cell`` learns the row of its slice later. */
static int add_flows(State *st, Ev *e, PyObject *ts, PyObject *cell) {
    PyObject *ids = id_tuple(e->ids, e->n_ids, e->ids_old, e->n_ids_old);
    PyObject *terms = id_tuple(e->terms, e->n_terms, e->terms_old, e->n_terms_old);
    PyObject *n = PyLong_FromSsize_t(PyList_GET_SIZE(st->steps));
    PyObject *step = ids && terms && n ? PyTuple_Pack(5, ts, n, cell, ids, terms) : NULL;
    Py_XDECREF(ids);
    Py_XDECREF(terms);
    Py_XDECREF(n);
    if (step == NULL) return ERR;
    int bad = PyList_Append(st->steps, step);
    Py_DECREF(step);
    return bad ? ERR : OK;
}

static PyObject *new_cell(void) {
    PyObject *cell = PyList_New(1);
    if (cell != NULL) PyList_SET_ITEM(cell, 0, PyLong_FromLong(-1));
    return cell;
}

static int emit(State *st, PyObject *ev) {
    if (ev == NULL) return ERR;
    int bad = PyList_Append(st->out, ev);
    Py_DECREF(ev);
    if (bad) return ERR;
    st->rows++;
    return OK;
}

static PyObject *event_obj(PyObject *ph, PyObject *name, PyObject *cat, PyObject *ts, PyObject *dur, PyObject *pid,
                           PyObject *tid, PyObject *s, PyObject *args) {
    PyObject *argv[16] = {ph, name, cat, ts, dur, pid, tid, Py_None, Py_None, Py_None, s, Py_None,
                          Py_None, Py_None, Py_None, args};
    return PyObject_Vectorcall(g_event, argv, 16, NULL);
}

/* An ``X`` event of the open slice ``o`` ([ts, name, cat, pid, tid, args, cell]) ending at ``end``. */
static int slice(State *st, PyObject *o, int64_t start, int64_t end) {
    PyObject *ts = us_text(start), *dur = ts ? us_text(end - start) : NULL;
    PyObject *args = dur ? raw_args(PyList_GET_ITEM(o, 5)) : NULL;
    PyObject *ev = args ? event_obj(s_X, PyList_GET_ITEM(o, 1), PyList_GET_ITEM(o, 2), ts, dur,
                                    PyList_GET_ITEM(o, 3), PyList_GET_ITEM(o, 4), Py_None, args)
                        : NULL;
    Py_XDECREF(ts);
    Py_XDECREF(dur);
    Py_XDECREF(args);
    Py_ssize_t row = st->rows;
    if (emit(st, ev)) return ERR;
    PyObject *cell = PyList_GET_ITEM(o, 6);
    if (cell != Py_None) {
        PyObject *r = PyLong_FromSsize_t(row);
        if (r == NULL || PyList_SetItem(cell, 0, r)) return ERR;
    }
    return OK;
}

/* (pid, tid) of a track as Tracks.key gives it (its cache first). */
static PyObject *track_key(State *st, PyObject *uuid) {
    PyObject *got = PyDict_GetItemWithError(st->keys, uuid);
    if (got != NULL) {
        Py_INCREF(got);
        return got;
    }
    if (PyErr_Occurred()) return NULL;
    return PyObject_CallMethodOneArg(st->tracks, a_key, uuid);
}

static int track_event(State *st, Ev *e, uint64_t ts_ns) {
    int rc = OK;
    PyObject *uuid;
    if (e->has_track) {
        uuid = PyLong_FromUnsignedLongLong(e->track);
    } else {
        uuid = PyObject_GetAttr(st->seq, a_default_track);
        if (uuid == Py_None) {
            Py_DECREF(uuid);
            return SLOW; /* a legacy thread's events, or the default track: the reference */
        }
    }
    if (uuid == NULL) return ERR;
    PyObject *key = NULL, *name = NULL, *cat = NULL, *args = NULL, *ts = NULL, *cell = NULL, *stack = NULL;
    key = track_key(st, uuid);
    if (key == NULL || !PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2) {
        if (key != NULL) PyErr_SetString(PyExc_TypeError, "a track key is (pid, tid)");
        rc = ERR;
        goto done;
    }
    PyObject *pid = PyTuple_GET_ITEM(key, 0), *tid = PyTuple_GET_ITEM(key, 1);
    if (!(ts = PyLong_FromUnsignedLongLong(ts_ns))) {
        rc = ERR;
        goto done;
    }
    if (e->type == 2) { /* END: the slice on top of the track's stack */
        if (e->has_ann && !(args = event_args(st, e, &rc))) goto done;
        stack = PyDict_GetItemWithError(st->stacks, uuid);
        if (stack == NULL && PyErr_Occurred()) {
            rc = ERR;
            goto done;
        }
        if (stack == NULL || !PyList_Check(stack) || PyList_GET_SIZE(stack) == 0) {
            rc = SLOW; /* no begin: the reference counts it */
            goto done;
        }
        PyObject *top = PyList_GET_ITEM(stack, PyList_GET_SIZE(stack) - 1);
        if (!PyList_CheckExact(top) || PyList_GET_SIZE(top) != 7 ||
            !(PyDict_CheckExact(PyList_GET_ITEM(top, 5)) || PyBytes_CheckExact(PyList_GET_ITEM(top, 5)))) {
            PyErr_SetString(PyExc_TypeError, "an open slice is [ts, name, cat, pid, tid, args, cell]");
            rc = ERR;
            goto done;
        }
        int overflow = 0;
        long long start = PyLong_AsLongLongAndOverflow(PyList_GET_ITEM(top, 0), &overflow);
        if (start == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            overflow = 1;
        }
        if (overflow || start >= (long long)TS_LIMIT || start <= -(long long)TS_LIMIT) {
            rc = SLOW;
            goto done;
        }
        Py_INCREF(top);
        if (PyList_SetSlice(stack, PyList_GET_SIZE(stack) - 1, PyList_GET_SIZE(stack), NULL)) {
            Py_DECREF(top);
            rc = ERR;
            goto done;
        }
        if (args != NULL && PyBytes_CheckExact(PyList_GET_ITEM(top, 5))) { /* its JSON, as the dict again */
            PyObject *raw = PyList_GET_ITEM(top, 5);
            PyObject *d = PyBytes_GET_SIZE(raw) ? PyObject_CallOneArg(g_decode, raw) : PyDict_New();
            if (d == NULL || !PyDict_CheckExact(d)) {
                if (d != NULL) PyErr_SetString(PyExc_TypeError, "an open slice's args are a JSON object");
                Py_XDECREF(d);
                rc = ERR;
            } else {
                PyList_SetItem(top, 5, d);
            }
        }
        if (rc == OK && args != NULL && PyDict_Update(PyList_GET_ITEM(top, 5), args)) rc = ERR;
        if (rc == OK && e->flows) {
            cell = PyList_GET_ITEM(top, 6);
            Py_INCREF(cell);
            if (cell == Py_None) {
                Py_DECREF(cell);
                if (!(cell = new_cell())) {
                    rc = ERR;
                } else {
                    Py_INCREF(cell);
                    PyList_SetItem(top, 6, cell);
                }
            }
            if (rc == OK) rc = add_flows(st, e, ts, cell);
        }
        if (rc == OK) rc = slice(st, top, start, (int64_t)ts_ns);
        Py_DECREF(top);
        goto done;
    }
    /* BEGIN or INSTANT */
    if (!(name = event_name(st, e, &rc)) || !(cat = event_cat(st, e, &rc)) || !(args = begin_args(st, e, &rc)))
        goto done;
    if (e->flows) {
        if (!(cell = new_cell()) || add_flows(st, e, ts, cell)) {
            rc = ERR;
            goto done;
        }
    } else {
        cell = Py_None;
        Py_INCREF(cell);
    }
    if (e->type == 1 || e->flows) {
        PyObject *o = PyList_New(7);
        if (o == NULL) {
            rc = ERR;
            goto done;
        }
        PyObject *items[7] = {ts, name, cat, pid, tid, args, cell};
        for (int k = 0; k < 7; k++) {
            Py_INCREF(items[k]);
            PyList_SET_ITEM(o, k, items[k]);
        }
        if (e->type == 1) {
            stack = PyDict_GetItemWithError(st->stacks, uuid);
            if (stack == NULL && !PyErr_Occurred()) {
                stack = PyList_New(0);
                if (stack != NULL && PyDict_SetItem(st->stacks, uuid, stack)) Py_CLEAR(stack);
                Py_XDECREF(stack); /* the dict holds it */
            }
            rc = stack == NULL || PyList_Append(stack, o) ? ERR : OK;
            stack = NULL;
        } else { /* an instant with flows: a slice of no length */
            rc = slice(st, o, (int64_t)ts_ns, (int64_t)ts_ns);
        }
        Py_DECREF(o);
        goto done;
    }
    /* an instant: process scope on a process track, else as its legacy event says */
    PyObject *scope;
    static PyObject **by_legacy[4] = {NULL, &s_g, &s_p, &s_t};
    if (e->legacy_scope) {
        scope = *by_legacy[e->legacy_scope];
    } else {
        PyObject *is = PyObject_CallMethodOneArg(st->tracks, a_is_process, uuid);
        if (is == NULL) {
            rc = ERR;
            goto done;
        }
        scope = PyObject_IsTrue(is) ? s_p : s_t;
        Py_DECREF(is);
    }
    PyObject *t = us_text((int64_t)ts_ns), *raw = t ? raw_args(args) : NULL;
    PyObject *ev = raw ? event_obj(s_i, name, cat, t, g_empty_raw, pid, tid, scope, raw) : NULL;
    Py_XDECREF(t);
    Py_XDECREF(raw);
    rc = emit(st, ev);
done:
    Py_DECREF(uuid);
    Py_XDECREF(key);
    Py_XDECREF(name);
    Py_XDECREF(cat);
    Py_XDECREF(args);
    Py_XDECREF(ts);
    Py_XDECREF(cell);
    return rc;
}

/* ---- packets ----------------------------------------------------------------------------------- */

static int packet(State *st, const uint8_t *d, size_t n) {
    const uint8_t *p = d, *end = d + n;
    Field f = {0}, interned = {0};
    Ev e;
    int r, has_event = 0, has_interned = 0, cleared = 0, dropped = 0;
    uint64_t ts = 0, seq_id = 0, flags = 0;
    memset(&e, 0, sizeof e);
    while ((r = next_field(&p, end, &f)) == 1) {
        switch (f.num) {
        case 8: if (f.wt != 0) return SLOW; ts = f.v; break;
        case 10: if (f.wt != 0 || f.v > 0xFFFFFFFFu) return SLOW; seq_id = f.v; break;
        case 13: if (f.wt != 0 || f.v > 0xFFFFFFFFu) return SLOW; flags = f.v; break;
        case 41: if (f.wt != 0) return SLOW; cleared = f.v != 0; break;
        case 42: if (f.wt != 0 || f.v > 0xFFFFFFFFu) return SLOW; dropped = f.v != 0; break;
        case 3: case 58: case 79: case 87: /* uid, clock id, pid, first on sequence: not read */
            if (f.wt != 0) return SLOW;
            break;
        case 11:
            if (f.wt != 2 || has_event) return SLOW;
            e.d = f.d;
            e.n = f.n;
            has_event = 1;
            break;
        case 12:
            if (f.wt != 2 || has_interned) return SLOW;
            interned = f;
            has_interned = 1;
            break;
        default: /* descriptors, metadata, defaults, other data: the reference */
            return SLOW;
        }
    }
    if (r < 0 || ts >= TS_LIMIT) return SLOW;
    if (has_event && parse_event(&e)) return SLOW;
    if (has_interned && check_entries(interned.d, interned.n)) return SLOW;
    if (use_seq(st, seq_id)) return ERR;
    /* the sequence's state: a clear (and interning after it) is repeatable if the packet goes on
     * to the reference reader after all */
    if (cleared || (flags & 1)) {
        PyObject *got = PyObject_CallMethodNoArgs(st->seq, a_clear);
        flush_mirrors(st);
        if (got == NULL) return ERR;
        Py_DECREF(got);
    } else if (dropped) {
        if (PyObject_SetAttr(st->seq, a_valid, Py_False)) return ERR;
    }
    if (flags & 2) {
        PyObject *valid = PyObject_GetAttr(st->seq, a_valid);
        if (valid == NULL) return ERR;
        int ok = PyObject_IsTrue(valid);
        Py_DECREF(valid);
        if (ok < 0) return ERR;
        if (!ok) return SLOW; /* skipped and counted by the reference */
    }
    if (has_interned) {
        int rc = intern(st, interned.d, interned.n);
        if (rc != OK) return rc;
    }
    return has_event ? track_event(st, &e, ts) : OK;
}

static int slow_packet(State *st, const uint8_t *d, size_t n) {
    forget_seq(st); /* the reference reader may change any sequence */
    PyObject *raw = PyBytes_FromStringAndSize((const char *)d, (Py_ssize_t)n);
    if (raw == NULL) return ERR;
    PyObject *rows = PyLong_FromSsize_t(st->rows);
    PyObject *got = rows ? PyObject_CallFunctionObjArgs(st->slow, raw, rows, NULL) : NULL;
    Py_DECREF(raw);
    Py_XDECREF(rows);
    if (got == NULL) return ERR;
    Py_ssize_t now = PyLong_AsSsize_t(got);
    Py_DECREF(got);
    if (now < 0) return ERR;
    st->rows = now;
    return OK;
}

static PyObject *run(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    (void)self;
    if (g_event == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    if (argc != 3 || !PyTuple_Check(argv[0]) || PyTuple_GET_SIZE(argv[0]) != 8) {
        PyErr_SetString(PyExc_TypeError, "run(state, buf, pos)");
        return NULL;
    }
    State st;
    memset(&st, 0, sizeof st);
    PyObject *t = argv[0];
    st.seqs = PyTuple_GET_ITEM(t, 0);
    st.tracks = PyTuple_GET_ITEM(t, 1);
    st.keys = PyTuple_GET_ITEM(t, 2);
    st.stacks = PyTuple_GET_ITEM(t, 3);
    st.out = PyTuple_GET_ITEM(t, 4);
    st.steps = PyTuple_GET_ITEM(t, 5);
    st.slow = PyTuple_GET_ITEM(t, 6);
    st.rows = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 7));
    if (st.rows < 0 && PyErr_Occurred()) return NULL;
    if (!PyDict_CheckExact(st.seqs) || !PyDict_CheckExact(st.keys) || !PyDict_CheckExact(st.stacks) ||
        !PyList_CheckExact(st.out) || !PyList_CheckExact(st.steps)) {
        PyErr_SetString(PyExc_TypeError, "run: the reader's state is dicts and lists");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(argv[2]);
    if (pos < 0 && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(argv[1], &view, PyBUF_SIMPLE)) return NULL;
    const uint8_t *base = view.buf, *end = base + view.len, *p = base + (pos < view.len ? pos : view.len);
    Py_ssize_t packets = 0, need = 0;
    int failed = 0;
    while (p < end) {
        const uint8_t *q = p;
        uint64_t tag, n = 0;
        if (varint(&q, end, &tag)) {
            need = end - p >= 10 ? -1 : (end - p) + 16; /* a head cut by the block, or damage */
            break;
        }
        int wt = (int)(tag & 7);
        if (wt == 2) {
            if (varint(&q, end, &n)) {
                need = end - q >= 10 ? -1 : (end - p) + 16;
                break;
            }
            if (n > MAX_PACKET) {
                need = -1;
                break;
            }
        } else if (wt == 0) {
            uint64_t v;
            if (varint(&q, end, &v)) {
                need = end - q >= 10 ? -1 : (end - p) + 16;
                break;
            }
        } else if (wt == 1 || wt == 5) {
            n = wt == 1 ? 8 : 4;
        } else {
            need = -1;
            break;
        }
        if (n > (uint64_t)(end - q)) {
            need = (q - p) + (Py_ssize_t)n;
            break;
        }
        if (tag == 0x0A) {
            packets++;
            int rc = packet(&st, q, (size_t)n);
            if (rc == SLOW) rc = slow_packet(&st, q, (size_t)n);
            if (rc == ERR) {
                failed = 1;
                break;
            }
        }
        p = q + n;
    }
    forget_seq(&st);
    free_mirrors(&st);
    PyBuffer_Release(&view);
    if (failed) return NULL;
    return Py_BuildValue("nnnn", (Py_ssize_t)(p - base), need, st.rows, packets);
}

/* Flow steps joined as FlowSteps.resolve joins them (its Python loop is the reference): ``steps``
 * sorted, each (ts, n, cell, ids, terminating); the flow bindings of the edges, two per edge. */
static int add_edge(PyObject *out, PyObject *a, PyObject *b, Py_ssize_t k) {
    static PyObject *s_flow;
    if (s_flow == NULL && !(s_flow = PyUnicode_InternFromString("flow"))) return ERR;
    PyObject *n = PyLong_FromSsize_t(k);
    PyObject *key = n ? PyTuple_Pack(2, s_flow, n) : NULL;
    Py_XDECREF(n);
    if (key == NULL) return ERR;
    PyObject *from = PyTuple_Pack(4, a, key, Py_False, Py_True), *to = PyTuple_Pack(4, b, key, Py_True, Py_False);
    Py_DECREF(key);
    int bad = from == NULL || to == NULL || PyList_Append(out, from) || PyList_Append(out, to);
    Py_XDECREF(from);
    Py_XDECREF(to);
    return bad ? ERR : OK;
}

static PyObject *flow_edges(PyObject *self, PyObject *steps) {
    (void)self;
    if (!PyList_CheckExact(steps)) {
        PyErr_SetString(PyExc_TypeError, "flow_edges(steps: list)");
        return NULL;
    }
    PyObject *active = PyDict_New(), *out = PyList_New(0);
    Py_ssize_t k = 0;
    if (active == NULL || out == NULL) goto error;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(steps); i++) {
        PyObject *step = PyList_GET_ITEM(steps, i);
        if (!PyTuple_CheckExact(step) || PyTuple_GET_SIZE(step) != 5 || !PyList_CheckExact(PyTuple_GET_ITEM(step, 2)) ||
            PyList_GET_SIZE(PyTuple_GET_ITEM(step, 2)) != 1 || !PyTuple_CheckExact(PyTuple_GET_ITEM(step, 3)) ||
            !PyTuple_CheckExact(PyTuple_GET_ITEM(step, 4))) {
            PyErr_SetString(PyExc_TypeError, "a flow step is (ts, n, [row], ids, terminating)");
            goto error;
        }
        PyObject *row = PyList_GET_ITEM(PyTuple_GET_ITEM(step, 2), 0);
        Py_INCREF(row);
        Py_ssize_t r = PyLong_AsSsize_t(row);
        if (r == -1 && PyErr_Occurred()) {
            Py_DECREF(row);
            goto error;
        }
        if (r < 0) {
            Py_DECREF(row);
            continue;
        }
        PyObject *ids = PyTuple_GET_ITEM(step, 3), *terms = PyTuple_GET_ITEM(step, 4);
        int bad = 0;
        for (Py_ssize_t j = 0; !bad && j < PyTuple_GET_SIZE(ids); j++) {
            PyObject *ident = PyTuple_GET_ITEM(ids, j);
            PyObject *source = PyDict_GetItemWithError(active, ident);
            if (source == NULL && PyErr_Occurred()) {
                bad = 1;
                break;
            }
            if (source != NULL) {
                int differ = PyObject_RichCompareBool(source, row, Py_NE);
                if (differ < 0 || (differ && add_edge(out, source, row, k++))) bad = 1;
            }
            if (!bad && PyDict_SetItem(active, ident, row)) bad = 1;
        }
        for (Py_ssize_t j = 0; !bad && j < PyTuple_GET_SIZE(terms); j++) {
            PyObject *ident = PyTuple_GET_ITEM(terms, j);
            PyObject *source = PyDict_GetItemWithError(active, ident);
            if (source == NULL) {
                bad = PyErr_Occurred() != NULL;
                continue;
            }
            Py_INCREF(source);
            int differ = PyDict_DelItem(active, ident) ? -1 : PyObject_RichCompareBool(source, row, Py_NE);
            if (differ < 0 || (differ && add_edge(out, source, row, k++))) bad = 1;
            Py_DECREF(source);
        }
        Py_DECREF(row);
        if (bad) goto error;
    }
    Py_DECREF(active);
    return out;
error:
    Py_XDECREF(active);
    Py_XDECREF(out);
    return NULL;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ev, *raw, *empty, *enc, *dec, *seq;
    if (!PyArg_ParseTuple(args, "OOOOOO", &ev, &raw, &empty, &enc, &dec, &seq)) return NULL;
    PyObject **slots[6] = {&g_event, &g_raw, &g_empty_raw, &g_encode, &g_decode, &g_sequence};
    PyObject *vals[6] = {ev, raw, empty, enc, dec, seq};
    for (int k = 0; k < 6; k++) {
        Py_INCREF(vals[k]);
        Py_XSETREF(*slots[k], vals[k]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(Event, Raw, EMPTY_RAW, json_encode, json_decode, Sequence)"},
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL, "run(state, buf, pos) -> (pos, need, rows, packets)"},
    {"flow_edges", flow_edges, METH_O, "flow_edges(sorted steps) -> the flow bindings of their edges"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_vtui_pftrace", NULL, -1, methods};

PyMODINIT_FUNC PyInit__vtui_pftrace(void) {
    struct {
        PyObject **slot;
        const char *text;
    } strings[] = {
        {&s_X, "X"}, {&s_i, "i"}, {&s_t, "t"}, {&s_p, "p"}, {&s_g, "g"}, {&s_empty, ""},
        {&s_noname, "[no name]"}, {&s_comma, ","}, {&s_correlation, "correlation"},
        {&a_names, "names"}, {&a_cats, "cats"}, {&a_arg_names, "arg_names"}, {&a_arg_strings, "arg_strings"},
        {&a_valid, "valid"}, {&a_default_track, "default_track"}, {&a_clear, "clear"},
        {&a_key, "key"}, {&a_is_process, "is_process"},
    };
    for (size_t k = 0; k < sizeof strings / sizeof strings[0]; k++) {
        if (!(*strings[k].slot = PyUnicode_InternFromString(strings[k].text))) return NULL;
    }
    PyObject *mod = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
    /* It works on the reader's dicts and lists under the GIL's protection: a free-threaded Python
       keeps the GIL on while it is imported. */
    if (mod != NULL && PyUnstable_Module_SetGIL(mod, Py_MOD_GIL_USED) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
#endif
    return mod;
}
