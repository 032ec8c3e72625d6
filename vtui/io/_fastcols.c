/* Optional helper for vtui.io.columns.ColumnSink.add: the per-event part of a chunk in C.
 *
 * Built as the top-level module _vtui_fastcols (not vtui.io._fastcols): tests run from a checkout
 * import vtui from the source tree, which never holds the compiled file, while a top-level module
 * is found where pip installed it.
 *
 * It reads only Python objects (decoded Event structs), never trace bytes. Anything it does not
 * handle exactly as the Python path does (an unhashable kind field, a ts whose text is not a plain
 * decimal, an object of another type...) makes it return None,
 * and the caller runs the pure-Python path on that chunk instead: results are identical either way.
 *
 * Fields are read straight from the struct's slots (offsets taken from the type's member
 * descriptors, checked once per call), which is what PyObject_GetAttr would end up doing, minus
 * the attribute lookup. Every object used is held (INCREF) while it is used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { F_PH, F_NAME, F_CAT, F_PID, F_TID, F_TS, F_DUR, F_ARGS, F_ID, F_ID2, F_S, F_BP, F_BIND, F_SCOPE, NFIELDS };
static const char *FIELD_NAMES[NFIELDS] = {
    "ph", "name", "cat", "pid", "tid", "ts", "dur", "args", "id", "id2", "s", "bp", "bind_id", "scope",
};
static PyObject *field_str[NFIELDS];  /* interned names */
static PyObject *raw_type;  /* msgspec.Raw */

/* Offsets of the fields in instances of ``tp``; 0 when the type is not a plain slotted struct. */
static int
field_offsets(PyTypeObject *tp, Py_ssize_t *offs)
{
    for (int f = 0; f < NFIELDS; f++) {
        /* On a type, a slot's name gives its member descriptor (``Event.ph``). */
        PyObject *descr = PyObject_GetAttr((PyObject *)tp, field_str[f]);
        if (descr == NULL) {
            PyErr_Clear();
            return 0;
        }
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type)
                 && PyType_IsSubtype(tp, ((PyDescrObject *)descr)->d_type);
        if (ok) {
            PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
            ok = (m->type == T_OBJECT_EX || m->type == T_OBJECT) && m->offset > 0
                 && (size_t)m->offset + sizeof(PyObject *) <= (size_t)tp->tp_basicsize;
            offs[f] = m->offset;
        }
        Py_DECREF(descr);  /* the type holds it */
        if (!ok)
            return 0;
    }
    return 1;
}

/* ns of a JSON number's text ``-?digits[.digits]``: the integer part and 3 fraction digits, the
 * digits below the ns rounded half to even, as vtui.io.exactts does. 0: done (an empty text,
 * a missing field, is NO_NS); -1: anything else (an exponent, a string, true, out of range), which
 * the Python path decides. */
static int
parse_ns(const char *p, Py_ssize_t len, int64_t *out)
{
    if (len == 0) {
        *out = INT64_MIN;
        return 0;
    }
    const char *end = p + len;
    int negative = (*p == '-');
    if (negative)
        p++;
    uint64_t whole = 0, frac = 0;
    int digits = 0, frac_digits = 0, round_digit = -1, sticky = 0;
    while (p < end && (unsigned)(*p - '0') < 10) {
        if (++digits > 16)
            return -1;
        whole = whole * 10 + (uint64_t)(*p++ - '0');
    }
    if (digits == 0)
        return -1;
    if (p < end && *p == '.') {
        p++;
        while (p < end && (unsigned)(*p - '0') < 10) {
            int d = *p++ - '0';
            if (frac_digits < 3)
                frac = frac * 10 + (uint64_t)d;
            else if (frac_digits == 3)
                round_digit = d;
            else if (d)
                sticky = 1;
            frac_digits++;
        }
        if (frac_digits == 0)
            return -1;
    }
    if (p != end || whole > (uint64_t)(INT64_MAX - 999) / 1000)
        return -1;
    for (int k = frac_digits; k < 3; k++)
        frac *= 10;
    uint64_t ns = whole * 1000 + frac;
    if (round_digit > 5 || (round_digit == 5 && (sticky || (ns & 1))))
        ns++;
    *out = negative ? -(int64_t)ns : (int64_t)ns;
    return 0;
}

/* int64 ns of a ts/dur slot: its source text (msgspec.Raw) or None; -1: not handled here. */
static int
as_ns(PyObject *v, int64_t *out)
{
    if (v == Py_None) {
        *out = INT64_MIN;
        return 0;
    }
    if (!Py_IS_TYPE(v, (PyTypeObject *)raw_type))
        return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return -1;
    }
    int rc = parse_ns((const char *)view.buf, view.len, out);
    PyBuffer_Release(&view);
    return rc;
}

/* Types whose == with a str and whose isinstance(v, str) run no Python code. */
static int
plain_json(PyObject *v)
{
    return v == Py_None || PyUnicode_CheckExact(v) || PyLong_CheckExact(v) || PyBool_Check(v)
           || PyFloat_CheckExact(v) || PyList_CheckExact(v) || PyDict_CheckExact(v);
}

/* One character string equal to ``c``? (``v`` an exact str) */
static int
is_char(PyObject *v, Py_UCS4 c)
{
    return PyUnicode_GET_LENGTH(v) == 1 && PyUnicode_READ_CHAR(v, 0) == c;
}

/* The id, scope and bp columns of a flagged event, as ColumnSink._ids_of sets them in its common
 * case (no id2, scope or bind_id; the id None or an int64). 0: not that case. */
static int
ids_of(PyObject **fv, int8_t *id_kind, int64_t *id_val, int8_t *scope, char *bp)
{
    if (fv[F_ID2] != Py_None || fv[F_SCOPE] != Py_None || fv[F_BIND] != Py_None)
        return 0;  /* rare: namespaced ids and flow v2, Python's path */
    PyObject *id = fv[F_ID];
    if (id != Py_None) {
        if (!PyLong_CheckExact(id))  /* bools, strings, floats: normalised in Python */
            return 0;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(id, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {  /* beyond int64: interned, in Python */
            PyErr_Clear();
            return 0;
        }
        *id_kind = 1;
        *id_val = (int64_t)v;
    }
    PyObject *s = fv[F_S], *b = fv[F_BP];
    if (!plain_json(s) || !plain_json(b))
        return 0;
    if (PyUnicode_CheckExact(s))  /* _SCOPE.get(s, 0) */
        *scope = is_char(s, 't') ? 0 : is_char(s, 'p') ? 1 : is_char(s, 'g') ? 2 : 0;
    *bp = PyUnicode_CheckExact(b) && is_char(b, 'e');  /* bp == "e" */
    return 1;
}

PyDoc_STRVAR(extract_doc,
"extract(events: list, kinds: dict) -> tuple | None\n\n"
"Per event: kind id (kinds.get((ph, name, cat, pid, tid), -1)) as int32 bytearray, ts and dur as\n"
"int64 ns bytes (INT64_MIN: none; read from their msgspec.Raw text), args lengths as int64 bytes, the args joined as bytes, and a uint8 flag (any of id,\n"
"id2, s, bp, bind_id not None) as bytes, and the (id_kind int8, id_val int64, scope int8, bp bool)\n"
"columns as bytes, or None where Python must make them. None when the chunk needs the Python path.");

static PyObject *
extract(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "extract(events: list, kinds: dict)");
        return NULL;
    }
    PyObject *events = args[0], *kinds = args[1];
    Py_ssize_t n = PyList_GET_SIZE(events);
    if (n == 0)
        Py_RETURN_NONE;

    PyObject *first = PyList_GET_ITEM(events, 0);
    PyTypeObject *tp = Py_TYPE(first);
    Py_ssize_t offs[NFIELDS];
    if (!field_offsets(tp, offs))
        Py_RETURN_NONE;
    Py_INCREF(tp);  /* the offsets stay valid while the type lives */
    Py_INCREF(kinds);

    PyObject *kind_b = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    PyObject *ts_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *dur_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *len_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *flag_b = PyBytes_FromStringAndSize(NULL, n);
    PyObject *idk_b = PyBytes_FromStringAndSize(NULL, n);
    PyObject *idv_b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *scope_b = PyBytes_FromStringAndSize(NULL, n);
    PyObject *bp_b = PyBytes_FromStringAndSize(NULL, n);
    PyObject *blob = NULL, *result = NULL;
    int ids_ok = 1;
    char *bbuf = NULL;
    Py_ssize_t bcap = 0, bsize = 0;
    if (!kind_b || !ts_b || !dur_b || !len_b || !flag_b || !idk_b || !idv_b || !scope_b || !bp_b)
        goto error;
    int8_t *id_kind = (int8_t *)PyBytes_AS_STRING(idk_b);
    int64_t *id_val = (int64_t *)PyBytes_AS_STRING(idv_b);
    int8_t *scope = (int8_t *)PyBytes_AS_STRING(scope_b);
    char *bp = PyBytes_AS_STRING(bp_b);
    memset(id_kind, 0, (size_t)n);
    memset(id_val, 0, (size_t)n * sizeof(int64_t));
    memset(scope, 0, (size_t)n);
    memset(bp, 0, (size_t)n);
    int32_t *kind = (int32_t *)PyByteArray_AS_STRING(kind_b);
    int64_t *ts = (int64_t *)PyBytes_AS_STRING(ts_b);
    int64_t *dur = (int64_t *)PyBytes_AS_STRING(dur_b);
    int64_t *lens = (int64_t *)PyBytes_AS_STRING(len_b);
    char *flags = PyBytes_AS_STRING(flag_b);

    for (Py_ssize_t i = 0; i < n; i++) {
        /* Hashing and comparing can run Python code for odd field types: re-check the list. */
        if (PyList_GET_SIZE(events) != n)
            goto fallback;
        PyObject *ev = PyList_GET_ITEM(events, i);
        if (!Py_IS_TYPE(ev, tp))
            goto fallback;
        Py_INCREF(ev);
        PyObject *fv[NFIELDS];
        int missing = 0;
        for (int f = 0; f < NFIELDS; f++) {
            fv[f] = *(PyObject **)((char *)ev + offs[f]);
            if (fv[f] == NULL)
                missing = 1;
        }
        if (missing) {
            Py_DECREF(ev);
            goto fallback;
        }
        flags[i] = (fv[F_ID] != Py_None || fv[F_ID2] != Py_None || fv[F_S] != Py_None
                    || fv[F_BP] != Py_None || fv[F_BIND] != Py_None);
        if (flags[i] && ids_ok)
            ids_ok = ids_of(fv, &id_kind[i], &id_val[i], &scope[i], &bp[i]);
        if (as_ns(fv[F_TS], &ts[i]) < 0 || as_ns(fv[F_DUR], &dur[i]) < 0) {
            Py_DECREF(ev);
            goto fallback;
        }
        /* args: a msgspec.Raw (or bytes), whose buffer's length is its len(), appended to the blob. */
        PyObject *raw = fv[F_ARGS];
        if (!Py_IS_TYPE(raw, (PyTypeObject *)raw_type) && !PyBytes_CheckExact(raw)) {
            Py_DECREF(ev);
            goto fallback;
        }
        Py_INCREF(raw);
        Py_buffer view;
        if (PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) < 0) {
            PyErr_Clear();
            Py_DECREF(raw);
            Py_DECREF(ev);
            goto fallback;
        }
        if (bsize + view.len > bcap) {
            Py_ssize_t want = bcap ? bcap : 4096;
            while (want < bsize + view.len) {
                if (want > PY_SSIZE_T_MAX / 2) {
                    PyBuffer_Release(&view);
                    Py_DECREF(raw);
                    Py_DECREF(ev);
                    PyErr_NoMemory();
                    goto error;
                }
                want *= 2;
            }
            char *grown = PyMem_Realloc(bbuf, (size_t)want);
            if (grown == NULL) {
                PyBuffer_Release(&view);
                Py_DECREF(raw);
                Py_DECREF(ev);
                PyErr_NoMemory();
                goto error;
            }
            bbuf = grown;
            bcap = want;
        }
        if (view.len)
            memcpy(bbuf + bsize, view.buf, (size_t)view.len);
        bsize += view.len;
        lens[i] = (int64_t)view.len;
        PyBuffer_Release(&view);
        Py_DECREF(raw);

        /* The kind: a new (ph, name, cat, pid, tid) tuple looked up as Python's dict.get would. */
        PyObject *key = PyTuple_New(5);
        if (key == NULL) {
            Py_DECREF(ev);
            goto error;
        }
        for (int f = 0; f < 5; f++) {  /* F_PH..F_TID are 0..4, in key order */
            Py_INCREF(fv[f]);
            PyTuple_SET_ITEM(key, f, fv[f]);
        }
        Py_DECREF(ev);  /* the key holds what is still needed */
        PyObject *hit = PyDict_GetItemWithError(kinds, key);  /* borrowed */
        if (hit == NULL) {
            Py_DECREF(key);
            if (PyErr_Occurred()) {  /* unhashable field (a list...): Python's path uses its text */
                PyErr_Clear();
                goto fallback;
            }
            kind[i] = -1;
            continue;
        }
        Py_DECREF(key);
        if (!PyLong_CheckExact(hit))
            goto fallback;
        long id = PyLong_AsLong(hit);
        if ((id == -1 && PyErr_Occurred()) || id < INT32_MIN || id > INT32_MAX) {
            PyErr_Clear();
            goto fallback;
        }
        kind[i] = (int32_t)id;
    }

    blob = PyBytes_FromStringAndSize(bbuf, bsize);
    if (blob == NULL)
        goto error;
    if (ids_ok) {
        PyObject *ids = PyTuple_Pack(4, idk_b, idv_b, scope_b, bp_b);
        if (ids == NULL)
            goto error;
        result = PyTuple_Pack(7, kind_b, ts_b, dur_b, len_b, blob, flag_b, ids);
        Py_DECREF(ids);
    }
    else {
        result = PyTuple_Pack(7, kind_b, ts_b, dur_b, len_b, blob, flag_b, Py_None);
    }
    goto done;

fallback:
    result = Py_NewRef(Py_None);
    goto done;
error:
    result = NULL;
done:
    PyMem_Free(bbuf);
    Py_XDECREF(blob);
    Py_XDECREF(kind_b);
    Py_XDECREF(ts_b);
    Py_XDECREF(dur_b);
    Py_XDECREF(len_b);
    Py_XDECREF(flag_b);
    Py_XDECREF(idk_b);
    Py_XDECREF(idv_b);
    Py_XDECREF(scope_b);
    Py_XDECREF(bp_b);
    Py_DECREF(kinds);
    Py_DECREF(tp);
    return result;
}

/* ---- shape_keys: the recorded shapes of the given rows, interned ---------------------------------
 *
 * For each row (its args: blob[off:off+len], a JSON object as the trace's parser kept it), the raw
 * JSON values of "Input Dims", "Input type" and "Concrete Inputs" (b"null" when absent; the last
 * one when a key repeats, as msgspec does), interned as one triple: returns (ids: bytes of int64,
 * one per row; triples: list of (dims, types, concrete) bytes). Returns None, and the caller runs
 * vtui.analysis.base.shapes' msgspec path, on anything it does not read exactly as msgspec would: an
 * escape in a key, a value cut off by the end of the row, text that is not an object's structure.
 */
enum { SK_DIMS, SK_TYPES, SK_CONCRETE, SK_N };
static const char *SK_NAMES[SK_N] = {"Input Dims", "Input type", "Concrete Inputs"};

static Py_ssize_t
sk_ws(const char *p, Py_ssize_t i, Py_ssize_t end)
{
    while (i < end && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

/* The index after the string starting at p[i] == '"'; -1 when it does not close before ``end``.
 * memchr to each quote, then its backslashes counted (an odd run escapes it). */
static Py_ssize_t
sk_string(const char *p, Py_ssize_t i, Py_ssize_t end, int *escaped)
{
    for (i++; i < end;) {
        const char *q = memchr(p + i, '"', (size_t)(end - i));
        if (q == NULL)
            return -1;
        Py_ssize_t at = q - p, back = 0;
        while (at - 1 - back >= i && p[at - 1 - back] == '\\')
            back++;
        if (back || memchr(p + i, '\\', (size_t)(at - i)) != NULL)
            *escaped = 1;
        if (back % 2 == 0)
            return at + 1;
        i = at + 1;
    }
    return -1;
}

/* Bytes that end a run inside an array or object: quotes and brackets (1), everything else 0. */
static unsigned char SK_STOP[256] = {['"'] = 1, ['['] = 1, [']'] = 1, ['{'] = 1, ['}'] = 1};

/* The index after the JSON value starting at p[i]; -1 when it runs past ``end`` or is unbalanced. */
static Py_ssize_t
sk_value(const char *p, Py_ssize_t i, Py_ssize_t end)
{
    int esc = 0;
    if (i >= end)
        return -1;
    if (p[i] == '"')
        return sk_string(p, i, end, &esc);
    if (p[i] == '[' || p[i] == '{') {
        char stack[256];
        int depth = 0;
        for (;;) {
            while (i < end && !SK_STOP[(unsigned char)p[i]])
                i++;
            if (i >= end)
                return -1;
            char c = p[i];
            if (c == '"') {
                i = sk_string(p, i, end, &esc);
                if (i < 0)
                    return -1;
                continue;
            }
            if (c == '[' || c == '{') {
                if (depth == (int)sizeof(stack))
                    return -1;
                stack[depth++] = c == '[' ? ']' : '}';
            }
            else if (depth == 0 || stack[--depth] != c)
                return -1;
            else if (depth == 0)
                return i + 1;
            i++;
        }
    }
    while (i < end && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' && p[i] != '\t'
           && p[i] != '\n' && p[i] != '\r')
        i++;
    return i;
}

/* Spans of the three values in one args object: 1 done (absent: start -1), 0 not an object
 * (all absent, as msgspec's failure gives), -1 decline. */
static int
sk_row(const char *p, Py_ssize_t i, Py_ssize_t end, Py_ssize_t *vs, Py_ssize_t *ve)
{
    for (int k = 0; k < SK_N; k++)
        vs[k] = -1;
    i = sk_ws(p, i, end);
    if (i >= end || p[i] != '{')
        return i >= end ? 0 : (p[i] == '[' || p[i] == '"' || p[i] == '-' || (p[i] >= '0' && p[i] <= '9')
                               || p[i] == 't' || p[i] == 'f' || p[i] == 'n') ? 0 : -1;
    i = sk_ws(p, i + 1, end);
    if (i < end && p[i] == '}')
        return 1;
    for (;;) {
        int esc = 0;
        if (i >= end || p[i] != '"')
            return -1;
        Py_ssize_t ks = i + 1, ke = sk_string(p, i, end, &esc);
        if (ke < 0 || esc)
            return -1;
        i = sk_ws(p, ke, end);
        if (i >= end || p[i] != ':')
            return -1;
        i = sk_ws(p, i + 1, end);
        Py_ssize_t v0 = i, v1 = sk_value(p, i, end);
        if (v1 < 0 || v1 == v0)
            return -1;
        Py_ssize_t klen = ke - 1 - ks;
        for (int k = 0; k < SK_N; k++) {
            if ((size_t)klen == strlen(SK_NAMES[k]) && memcmp(p + ks, SK_NAMES[k], (size_t)klen) == 0) {
                vs[k] = v0;
                ve[k] = v1;
            }
        }
        i = sk_ws(p, v1, end);
        if (i < end && p[i] == ',') {
            i = sk_ws(p, i + 1, end);
            continue;
        }
        return (i < end && p[i] == '}') ? 1 : -1;
    }
}

/* A hash of the three texts (8 bytes at a time; the lengths mixed in, so the split is part of it). */
static uint64_t
sk_hash(const char *const *text, const Py_ssize_t *tl)
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < SK_N; k++) {
        const char *t = text[k];
        Py_ssize_t n = tl[k], i = 0;
        h = (h ^ (uint64_t)n) * 0xFF51AFD7ED558CCDull;
        for (; i + 8 <= n; i += 8) {
            uint64_t w;
            memcpy(&w, t + i, 8);
            h = (h ^ w) * 0x9E3779B97F4A7C15ull;
            h ^= h >> 29;
        }
        uint64_t w = 0;
        memcpy(&w, t + i, (size_t)(n - i));
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
        h ^= h >> 32;
    }
    return h;
}

typedef struct {
    uint64_t hash;
    int64_t id;  /* -1: empty slot */
} sk_slot;

typedef struct {
    const char *text[SK_N];  /* the first row's texts (inside the blob, or the static "null") */
    Py_ssize_t tl[SK_N];
} sk_shape;

PyDoc_STRVAR(shape_keys_doc, "shape_keys(blob, offs_int64, lens_int32) -> (ids bytes, [(dims, types, concrete)]) | None");

static PyObject *
shape_keys(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "shape_keys(blob, offs, lens)");
        return NULL;
    }
    Py_buffer blob, offs, lens;
    if (PyObject_GetBuffer(args[0], &blob, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &offs, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&blob);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &lens, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&blob);
        PyBuffer_Release(&offs);
        return NULL;
    }
    PyObject *result = NULL, *triples = NULL, *ids = NULL;
    sk_slot *table = NULL;
    sk_shape *shapes = NULL;
    Py_ssize_t cap = 64, used = 0, shapes_cap = 32;
    Py_ssize_t n = offs.len / (Py_ssize_t)sizeof(int64_t);
    static const char NUL[] = "null";
    if (lens.len / (Py_ssize_t)sizeof(int32_t) != n) {
        PyErr_SetString(PyExc_ValueError, "offs and lens differ in length");
        goto done;
    }
    const char *p = (const char *)blob.buf;
    const int64_t *off = (const int64_t *)offs.buf;
    const int32_t *len = (const int32_t *)lens.buf;
    table = PyMem_Malloc((size_t)cap * sizeof(sk_slot));
    shapes = PyMem_Malloc((size_t)shapes_cap * sizeof(sk_shape));
    if (table == NULL || shapes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < cap; i++)
        table[i].id = -1;
    if ((ids = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t))) == NULL)
        goto done;
    int64_t *out = (int64_t *)PyBytes_AS_STRING(ids);
    for (Py_ssize_t r = 0; r < n; r++) {
        Py_ssize_t vs[SK_N], ve[SK_N];
        Py_ssize_t start = (Py_ssize_t)off[r], end = start + (Py_ssize_t)len[r];
#if defined(__GNUC__) || defined(__clang__)
        /* The rows' args lie scattered through the blob: ask for a later row's bytes early. */
        if (r + 8 < n && off[r + 8] >= 0 && off[r + 8] < blob.len)
            __builtin_prefetch(p + off[r + 8]);
#endif
        if (len[r] <= 0) {
            for (int k = 0; k < SK_N; k++)
                vs[k] = -1;
        }
        else if (start < 0 || end > blob.len || sk_row(p, start, end, vs, ve) < 0) {
            result = Py_NewRef(Py_None);  /* declined: the msgspec path decides */
            goto done;
        }
        sk_shape cur;
        for (int k = 0; k < SK_N; k++) {
            cur.text[k] = vs[k] < 0 ? NUL : p + vs[k];
            cur.tl[k] = vs[k] < 0 ? 4 : ve[k] - vs[k];
        }
        uint64_t h = sk_hash(cur.text, cur.tl);
        Py_ssize_t slot = (Py_ssize_t)(h & (uint64_t)(cap - 1));
        int64_t found = -1;
        for (; table[slot].id >= 0; slot = (slot + 1) & (cap - 1)) {
            if (table[slot].hash != h)
                continue;
            sk_shape *o = &shapes[table[slot].id];
            int same = 1;
            for (int k = 0; k < SK_N && same; k++)
                same = o->tl[k] == cur.tl[k] && memcmp(o->text[k], cur.text[k], (size_t)cur.tl[k]) == 0;
            if (same) {
                found = table[slot].id;
                break;
            }
        }
        if (found < 0) {
            if (used == shapes_cap) {
                sk_shape *grown = PyMem_Realloc(shapes, (size_t)shapes_cap * 2 * sizeof(sk_shape));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                shapes = grown;
                shapes_cap *= 2;
            }
            found = used;
            shapes[used++] = cur;
            table[slot].hash = h;
            table[slot].id = found;
            if (used * 2 > cap) {  /* keep it at most half full: rehash into twice the slots */
                Py_ssize_t ncap = cap * 2;
                sk_slot *nt = PyMem_Malloc((size_t)ncap * sizeof(sk_slot));
                if (nt == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                for (Py_ssize_t i = 0; i < ncap; i++)
                    nt[i].id = -1;
                for (Py_ssize_t i = 0; i < cap; i++) {
                    if (table[i].id < 0)
                        continue;
                    Py_ssize_t j = (Py_ssize_t)(table[i].hash & (uint64_t)(ncap - 1));
                    while (nt[j].id >= 0)
                        j = (j + 1) & (ncap - 1);
                    nt[j] = table[i];
                }
                PyMem_Free(table);
                table = nt;
                cap = ncap;
            }
        }
        out[r] = found;
    }
    if ((triples = PyList_New(used)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < used; i++) {
        sk_shape *o = &shapes[i];
        PyObject *t = Py_BuildValue("(y#y#y#)", o->text[0], o->tl[0], o->text[1], o->tl[1], o->text[2], o->tl[2]);
        if (t == NULL)
            goto done;
        PyList_SET_ITEM(triples, i, t);
    }
    result = PyTuple_Pack(2, ids, triples);
done:
    PyMem_Free(table);
    PyMem_Free(shapes);
    Py_XDECREF(triples);
    Py_XDECREF(ids);
    PyBuffer_Release(&blob);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&lens);
    return result;
}


/* ---- device_runs: the critical path's per-stream columns of the device work, in one pass --------
 *
 * vtui.analysis.why.critical._Device, without its numpy passes (one per column; ~25 over every piece
 * of device work, each filling fresh memory). ``rows``: the device work's slice rows, ``launch``:
 * the runtime call of each (-1 none); the slice columns ``start``, ``end``, ``track``, ``name``
 * (whole, indexed by row); ``comm_name``: 1 per string id that names a collective. Fills the
 * outputs (one entry per row; cum_* one more) as the numpy code does before any event wait moves
 * a dependency. An empty ``cum_comm`` and ``comm``: no collective in the trace, not filled (the
 * caller's zeros). Returns flags: 1 the rows are in (track, start) order (else nothing is
 * filled: the caller sorts them and calls again), 2 their launch starts are in order too.
 */
PyDoc_STRVAR(device_runs_doc, "device_runs(rows, launch, start, end, track, name, comm_name, *outputs) -> flags");

enum { DR_ROWS, DR_LAUNCH, DR_START, DR_END, DR_TRACK, DR_NAME, DR_COMM_NAME,
       DR_O_LSTART, DR_O_READY, DR_O_LACC, DR_O_HEAD, DR_O_CUM_GPU, DR_O_CUM_COMM, DR_O_CUM_GAP, DR_O_END_DROPS,
       DR_O_COMM, DR_N };

static PyObject *
device_runs(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != DR_N) {
        PyErr_SetString(PyExc_TypeError, "device_runs takes 16 buffers");
        return NULL;
    }
    Py_buffer b[DR_N];
    int got = 0;
    PyObject *result = NULL;
    for (; got < DR_N; got++) {
        int flags = got >= DR_O_LSTART ? PyBUF_WRITABLE : PyBUF_SIMPLE;
        if (PyObject_GetBuffer(args[got], &b[got], flags) < 0)
            goto done;
    }
    {
        const Py_ssize_t n = b[DR_ROWS].len / 8, n_rows = b[DR_START].len / 8, n_names = b[DR_COMM_NAME].len;
        const int with_comm = b[DR_O_COMM].len > 0;
        /* sizes: every per-work buffer n entries (cum_*: n + 1), the columns one length */
        const Py_ssize_t want[DR_N] = {n * 8, n * 8, n_rows * 8, n_rows * 8, n_rows * 4, n_rows * 4, n_names,
                                       n * 8, n * 8, n * 8, n * 8, (n + 1) * 8, with_comm ? (n + 1) * 8 : 0,
                                       (n + 1) * 8, n * 4, with_comm ? n : 0};
        for (int k = 0; k < DR_N; k++) {
            if (b[k].len != want[k]) {
                PyErr_Format(PyExc_ValueError, "device_runs: buffer %d has the wrong size", k);
                goto done;
            }
        }
        const int64_t *rows = b[DR_ROWS].buf, *launch = b[DR_LAUNCH].buf, *start = b[DR_START].buf, *end = b[DR_END].buf;
        const int32_t *track = b[DR_TRACK].buf, *name = b[DR_NAME].buf;
        const unsigned char *comm_name = b[DR_COMM_NAME].buf;
        for (Py_ssize_t i = 0; i < n; i++) {  /* bounds first: nothing is read out of range */
            if (rows[i] < 0 || rows[i] >= n_rows || launch[i] < -1 || launch[i] >= n_rows
                || name[rows[i]] < 0 || name[rows[i]] >= n_names) {
                PyErr_SetString(PyExc_ValueError, "device_runs: a row or name out of range");
                goto done;
            }
        }
        for (Py_ssize_t i = 1; i < n; i++) {
            int32_t t0 = track[rows[i - 1]], t1 = track[rows[i]];
            if (t1 < t0 || (t1 == t0 && start[rows[i]] < start[rows[i - 1]])) {
                result = PyLong_FromLong(0);
                goto done;
            }
        }
        int64_t *o_lstart = b[DR_O_LSTART].buf, *o_ready = b[DR_O_READY].buf, *o_lacc = b[DR_O_LACC].buf,
                *o_head = b[DR_O_HEAD].buf, *cum_gpu = b[DR_O_CUM_GPU].buf, *cum_comm = b[DR_O_CUM_COMM].buf,
                *cum_gap = b[DR_O_CUM_GAP].buf;
        int32_t *drops = b[DR_O_END_DROPS].buf;
        unsigned char *o_comm = b[DR_O_COMM].buf;
        const int64_t NONE_PREV = INT64_MIN / 2;
        int64_t acc = INT64_MIN, head = 0, g = 0, c = 0, gap_sum = 0, last_l = INT64_MIN, prev_en = 0;
        int32_t nd = 0, prev_t = 0;
        int l_sorted = 1;
        cum_gpu[0] = cum_gap[0] = 0;
        if (with_comm)
            cum_comm[0] = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t r = rows[i], l = launch[i];
            int32_t t = track[r];
            int64_t st = start[r], en = end[r];
            int same = i > 0 && t == prev_t;
            int64_t prev = same ? prev_en : NONE_PREV;
            int has = l >= 0;
            int64_t ready = has ? (end[l] < st ? end[l] : st) : prev;
            int64_t ls = has ? start[l] : INT64_MAX;
            o_ready[i] = ready;
            o_lstart[i] = ls;
            if (ls < last_l)
                l_sorted = 0;
            last_l = ls;
            if (!same)
                acc = INT64_MIN;
            int64_t known = has ? ls : INT64_MIN;
            acc = known > acc ? known : acc;
            o_lacc[i] = acc;
            if (!(same && (!has || prev >= ready)))  /* the previous work did not arrive last: a run starts */
                head = i;
            o_head[i] = head;
            int64_t dur = en - st;
            if (with_comm && comm_name[name[r]]) {
                o_comm[i] = 1;
                c += dur;
            }
            else {
                if (with_comm)
                    o_comm[i] = 0;
                g += dur;
            }
            cum_gpu[i + 1] = g;
            if (with_comm)
                cum_comm[i + 1] = c;
            gap_sum += same ? (st - prev > 0 ? st - prev : 0) : 0;
            cum_gap[i + 1] = gap_sum;
            if (i > 0 && en < prev_en)
                nd++;
            drops[i] = nd;
            prev_t = t;
            prev_en = en;
        }
        result = PyLong_FromLong(1 | (l_sorted ? 2 : 0));
    }
done:
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&b[k]);
    return result;
}

/* ---- launched_sum: per operator, the device time its launch calls started ----------------------
 *
 * vtui.analysis.gpu.roofline._gpu_time for one thread, as a merge instead of numpy's binary searches
 * and temporaries: ``op_start`` / ``op_end`` (int64, the operators, by start), the launch calls'
 * ``call_start`` / ``call_end`` / ``call_track`` (int64, by call start) and ``gpu_start`` /
 * ``gpu_end`` (the device work's); each call on ``track`` inside the last operator starting at or
 * before it (that operator's end at or after the call's) adds its work's length to ``out`` (int64,
 * one per operator). Returns False, filling nothing, where the calls or operators are not in order.
 */
PyDoc_STRVAR(launched_sum_doc, "launched_sum(op_start, op_end, call_start, call_end, call_track, gpu_start, gpu_end, track, out) -> bool");

static PyObject *
launched_sum(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "launched_sum(op_start, op_end, call_start, call_end, call_track, gpu_start, gpu_end, track, out)");
        return NULL;
    }
    long long track = PyLong_AsLongLong(args[7]);
    if (track == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer b[9];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 9; got++) {
        if (got == 7) {
            b[7].obj = NULL;
            continue;
        }
        if (PyObject_GetBuffer(args[got], &b[got], got == 8 ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
            goto done;
    }
    {
        const Py_ssize_t n = b[0].len / 8, m = b[2].len / 8;
        if (b[1].len != n * 8 || b[8].len != n * 8 || b[3].len != m * 8 || b[4].len != m * 8 || b[5].len != m * 8
            || b[6].len != m * 8) {
            PyErr_SetString(PyExc_ValueError, "launched_sum: buffers of different lengths");
            goto done;
        }
        const int64_t *os = b[0].buf, *oe = b[1].buf, *cs = b[2].buf, *ce = b[3].buf, *ct = b[4].buf, *gs = b[5].buf,
                      *ge = b[6].buf;
        int64_t *out = b[8].buf;
        for (Py_ssize_t j = 1; j < n; j++) {
            if (os[j] < os[j - 1]) {
                result = Py_NewRef(Py_False);
                goto done;
            }
        }
        for (Py_ssize_t i = 1; i < m; i++) {
            if (cs[i] < cs[i - 1]) {
                result = Py_NewRef(Py_False);
                goto done;
            }
        }
        Py_ssize_t j = -1;  /* the last operator starting at or before the call */
        for (Py_ssize_t i = 0; i < m; i++) {
            if (ct[i] != track)
                continue;
            while (j + 1 < n && os[j + 1] <= cs[i])
                j++;
            if (j >= 0 && oe[j] >= ce[i])
                out[j] += ge[i] - gs[i];
        }
        result = Py_NewRef(Py_True);
    }
done:
    for (int k = 0; k < got; k++) {
        if (k != 7)
            PyBuffer_Release(&b[k]);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"extract", (PyCFunction)(void (*)(void))extract, METH_FASTCALL, extract_doc},
    {"shape_keys", (PyCFunction)(void (*)(void))shape_keys, METH_FASTCALL, shape_keys_doc},
    {"device_runs", (PyCFunction)(void (*)(void))device_runs, METH_FASTCALL, device_runs_doc},
    {"launched_sum", (PyCFunction)(void (*)(void))launched_sum, METH_FASTCALL, launched_sum_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_vtui_fastcols",
    "Optional C helper for vtui.io.columns (the pure-Python path is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit__vtui_fastcols(void)
{
    for (int f = 0; f < NFIELDS; f++) {
        if (field_str[f] == NULL && (field_str[f] = PyUnicode_InternFromString(FIELD_NAMES[f])) == NULL)
            return NULL;
    }
    if (raw_type == NULL) {
        PyObject *msgspec = PyImport_ImportModule("msgspec");
        if (msgspec == NULL)
            return NULL;
        raw_type = PyObject_GetAttrString(msgspec, "Raw");
        Py_DECREF(msgspec);
        if (raw_type == NULL)
            return NULL;
        if (!PyType_Check(raw_type)) {
            Py_CLEAR(raw_type);
            PyErr_SetString(PyExc_ImportError, "msgspec.Raw is not a type");
            return NULL;
        }
    }
    PyObject *mod = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
    /* Declared, not assumed: it reads msgspec's structs and fills lists with the GIL's
       protection, so a free-threaded Python (3.13t) keeps the GIL on while it is imported. */
    if (mod != NULL && PyUnstable_Module_SetGIL(mod, Py_MOD_GIL_USED) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
#endif
    return mod;
}
