/* One pass over a text that tells each redaction rule where it could start, or that it cannot.
 *
 * The pure-Python engine (tracesim/_redact) proves per rule that a text holds no secret: a
 * `memchr` gate, then one `re` scan per rule from its anchor. Each pass costs 4-7 machine
 * instructions per character, and the key-name probe needs a lower-cased and a reversed copy
 * of the text first: about 55 instructions per character in all for a 10 KB chat history.
 * This module does the same proof in one pass, at a few instructions per character. It is an
 * accelerator only: the Python engine stays the reference and the fallback, and the tests hold
 * both to the same answers.
 *
 * A `Probe` is built once per `Redactor` from the rules' *needles*: short literal strings that
 * every match of a rule contains at a known place, with a run of characters the match must
 * have after them. It reports, per rule, the smallest position where the rule's first match
 * could start (-1: nowhere), so the rule's own regex is searched from there: a needle is a
 * necessary condition, never a sufficient one. Key names (`api_key=`, `"password":`) are found
 * exactly as the Python probe finds them: backwards from each `:`, `=` or `>`.
 *
 * Case-insensitive needles and key names compare what `str.lower` gives: ASCII letters, and
 * the two characters outside ASCII that lower to ASCII ones (U+0130 to "i", whose dot the
 * engine drops, and KELVIN SIGN to "k").
 *
 * Two more steps of every traced call run here, each the twin of a Python function that stays
 * the reference and the fallback: `Probe.quiet` tells that an exported span needs no change at
 * all (`Redaction._quiet`), and `small` walks a captured value to tell whether it is small
 * enough to serialise whole (`tracesim/_capture/_size.py`).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define INLINE static __forceinline
#else
#define INLINE static inline
#endif

#define PROBE_VERSION 3  /* tracesim/_redact/_native.py: VERSION */
#define TRIGGER_NEEDLE 1
#define TRIGGER_SEPARATOR 2

typedef struct {
    Py_UCS1 *chars;           /* the literal, ASCII; lower-case when folded */
    Py_ssize_t length;
    Py_ssize_t trigger;       /* index of the character the scan stops at */
    Py_ssize_t start;         /* where the rule's match starts, from the literal's start */
    int folded;               /* compared as `str.lower` would give it */
    int group;                /* the rule it belongs to */
    unsigned char skip[128];  /* after the literal: a run of these (skip_min at least)... */
    int skip_min;
    unsigned char run[128];   /* ...then `count` characters of this class */
    int run_wide;             /* characters outside ASCII belong to the class */
    Py_ssize_t count;
    int cut;                  /* or 1 to count-1 of them, then the cut marker's "…" */
} Needle;

typedef struct {
    Py_ssize_t needle;
    int side;        /* the character tried first: 0 before the trigger, 1 after, -1 none... */
    int folded;
    Py_UCS4 beside;  /* ...must be this one */
} Entry;

typedef struct {
    Py_UCS1 *chars;  /* a key name spelt backwards, lower-case */
    Py_ssize_t length;
    long anchor;     /* what is reported: the anchor's number... */
    Py_ssize_t at;   /* ...and its position, this far from the name's first character */
    int qualified;   /* a name that needs one of the key words before it (`api_key`, not `cache_key`) */
} Name;

typedef struct {
    PyObject_HEAD
    Needle *needles;
    Py_ssize_t n_needles;
    Py_ssize_t n_groups;
    Name *names;
    Py_ssize_t n_names;
    unsigned char triggers[128];       /* TRIGGER_* flags by ASCII character */
    Entry *bucket[128];                /* the needles by trigger character */
    Py_ssize_t bucket_size[128];
    unsigned char skip_back[128];      /* between a key name and its separator */
    unsigned char name_end[128];       /* the last characters of key names */
    Py_UCS1 **words;                   /* the key words, spelt backwards: `ipa` of `api_key` */
    Py_ssize_t *word_sizes;
    Py_ssize_t n_words;
} Probe;

/* The fields `quiet` reads, interned once at import. */
static struct {
    PyObject *name, *attributes, *dict, *events, *links, *dq, *status, *description, *resource;
} interned;

static inline Py_UCS4 fold(Py_UCS4 c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0x130) return 'i';
    if (c == 0x212A) return 'k';
    return c;
}

static inline int in_class(const unsigned char *set, int wide, Py_UCS4 c) {
    return c < 128 ? set[c] : wide;
}

/* Whether `needle` is in the text with its literal starting at `at`. */
INLINE int needle_at(const Needle *needle, int kind, const void *data, Py_ssize_t size, Py_ssize_t at) {
    if (at < 0 || at + needle->length > size) return 0;
    for (Py_ssize_t k = 0; k < needle->length; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, at + k);
        if ((needle->folded ? fold(c) : c) != needle->chars[k]) return 0;
    }
    Py_ssize_t i = at + needle->length, skipped = 0;
    while (i < size && in_class(needle->skip, 0, PyUnicode_READ(kind, data, i))) {
        i++;
        skipped++;
    }
    if (skipped < needle->skip_min) return 0;
    Py_ssize_t run = 0;
    while (run < needle->count && i + run < size) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i + run);
        if (needle->cut && c == 0x2026) return run > 0;  /* "…" ends a cut value; a wide run holds it */
        if (!in_class(needle->run, needle->run_wide, c)) return 0;
        run++;
    }
    return run >= needle->count;
}

/* Whether the identifier that ends just before `end`, read back at most 48 characters of
 * `[a-z0-9_.-]` (lower-cased), ends with one of the key words once `_`, `-` and `.` are dropped. */
INLINE int qualified(const Probe *self, int kind, const void *data, Py_ssize_t end) {
    Py_ssize_t stop = end - 48 > 0 ? end - 48 : 0, k = end;
    while (k > stop) {
        Py_UCS4 c = fold(PyUnicode_READ(kind, data, k - 1));
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')) break;
        k--;
    }
    for (Py_ssize_t w = 0; w < self->n_words; w++) {
        Py_ssize_t i = end, m = 0;
        while (m < self->word_sizes[w] && i > k) {
            Py_UCS4 c = fold(PyUnicode_READ(kind, data, i - 1));
            i--;
            if (c == '_' || c == '.' || c == '-') continue;
            if (c != self->words[w][m]) break;
            m++;
        }
        if (m == self->word_sizes[w]) return 1;
    }
    return 0;
}

/* The key name ending just before the separator at `at`: appended to `keys` as (anchor, the
 * anchor's position, the separator's position). */
INLINE int key_before(const Probe *self, int kind, const void *data, Py_ssize_t at, PyObject **keys) {
    Py_ssize_t j = at - 1;
    Py_UCS4 last = 0;
    while (j >= 0) {
        last = fold(PyUnicode_READ(kind, data, j));
        if (last >= 128 || !self->skip_back[last]) break;
        j--;
    }
    if (j < 0 || last >= 128 || !self->name_end[last]) return 0;  /* no name ends there */
    for (Py_ssize_t n = 0; n < self->n_names; n++) {
        const Name *name = &self->names[n];
        if (name->chars[0] != last || j - name->length + 1 < 0) continue;
        Py_ssize_t k = 0;
        while (k < name->length && fold(PyUnicode_READ(kind, data, j - k)) == name->chars[k]) k++;
        if (k < name->length) continue;
        if (name->qualified && !qualified(self, kind, data, j - name->length + 1)) return 0;
        if (*keys == NULL && (*keys = PyList_New(0)) == NULL) return -1;
        PyObject *pair = Py_BuildValue("(lnn)", name->anchor, j - name->length + 1 + name->at, at);
        if (pair == NULL || PyList_Append(*keys, pair) < 0) {
            Py_XDECREF(pair);
            return -1;
        }
        Py_DECREF(pair);
        return 0;  /* the first name that matches, as the regex alternation takes it */
    }
    return 0;
}

INLINE int at_trigger(const Probe *self, int kind, const void *data, Py_ssize_t size, Py_ssize_t i,
                      Py_UCS4 c, Py_ssize_t *firsts, PyObject **keys) {
    if (self->triggers[c] & TRIGGER_SEPARATOR && key_before(self, kind, data, i, keys) < 0) return -1;
    /* The characters beside the trigger: most needles of a bucket fail on one of them. */
    Py_UCS4 before = i > 0 ? PyUnicode_READ(kind, data, i - 1) : 0x110000;
    Py_UCS4 after = i + 1 < size ? PyUnicode_READ(kind, data, i + 1) : 0x110000;
    Py_UCS4 beside[2][2] = {{before, after}, {fold(before), fold(after)}};
    const Entry *entries = self->bucket[c];
    for (Py_ssize_t b = 0; b < self->bucket_size[c]; b++) {
        const Entry *entry = &entries[b];
        if (entry->side >= 0 && beside[entry->folded][entry->side] != entry->beside) continue;
        const Needle *needle = &self->needles[entry->needle];
        Py_ssize_t at = i - needle->trigger, start = at + needle->start;
        Py_ssize_t *first = &firsts[needle->group];
        if (*first >= 0 && *first <= start) continue;  /* this rule has an earlier place already */
        if (needle_at(needle, kind, data, size, at)) *first = start;
    }
    return 0;
}

#define SCAN_KIND(TYPE)                                                                    \
    for (Py_ssize_t i = 0; i < size; i++) {                                                \
        Py_UCS4 c = ((const TYPE *)data)[i];                                               \
        if (c < 128 && self->triggers[c] &&                                                \
            at_trigger(self, kind, data, size, i, c, firsts, keys) < 0)                    \
            goto error;                                                                    \
    }

/* Latin-1 text, the common case: four characters tested at a time against a local table. */
static int scan_latin1(const Probe *self, const Py_UCS1 *data, Py_ssize_t size, Py_ssize_t *firsts,
                       PyObject **keys) {
    unsigned char table[256] = {0};
    memcpy(table, self->triggers, 128);
    Py_ssize_t i = 0;
    while (i < size) {
        while (i + 4 <= size && !(table[data[i]] | table[data[i + 1]] | table[data[i + 2]] | table[data[i + 3]]))
            i += 4;
        Py_ssize_t stop = i + 4 < size ? i + 4 : size;
        for (; i < stop; i++)
            if (table[data[i]] && at_trigger(self, PyUnicode_1BYTE_KIND, data, size, i, data[i], firsts, keys) < 0)
                return -1;
    }
    return 0;
}

/* Scan `text` (a ready str) into `firsts` (one per group, set to -1 here) and `keys`. */
static int scan_text(const Probe *self, PyObject *text, Py_ssize_t *firsts, PyObject **keys) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t g = 0; g < self->n_groups; g++) firsts[g] = -1;
    if (self->n_needles == 0 && self->n_names == 0) return 0;  /* no rules: nothing to look for */
    if (kind == PyUnicode_1BYTE_KIND) return scan_latin1(self, data, size, firsts, keys);
    if (kind == PyUnicode_2BYTE_KIND) {
        SCAN_KIND(Py_UCS2)
    } else {
        SCAN_KIND(Py_UCS4)
    }
    return 0;
error:
    return -1;
}

static int ready(PyObject *text) {
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_READY(text);  /* a legacy string made by the old C API */
#else
    (void)text;
    return 0;
#endif
}

static PyObject *Probe_scan(Probe *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "Probe.scan() takes a str");
        return NULL;
    }
    if (ready(text) < 0) return NULL;
    Py_ssize_t stack[16], *firsts = stack;
    PyObject *keys = NULL, *result = NULL, *places = NULL;
    if (self->n_groups > 16 && (firsts = PyMem_New(Py_ssize_t, self->n_groups)) == NULL)
        return PyErr_NoMemory();
    if (scan_text(self, text, firsts, &keys) < 0) goto error;
    Py_ssize_t found = 0;
    for (Py_ssize_t g = 0; g < self->n_groups; g++) found += firsts[g] >= 0;
    if (!found && keys == NULL) {  /* the common answer: no rule can find anything */
        result = Py_NewRef(Py_None);
        goto error;
    }
    places = PyTuple_New(self->n_groups);
    if (places == NULL) goto error;
    for (Py_ssize_t g = 0; g < self->n_groups; g++) {
        PyObject *value = PyLong_FromSsize_t(firsts[g]);
        if (value == NULL) goto error;
        PyTuple_SET_ITEM(places, g, value);
    }
    result = PyTuple_Pack(2, places, keys ? keys : Py_None);
error:  /* and the way out */
    Py_XDECREF(places);
    Py_XDECREF(keys);
    if (firsts != stack) PyMem_Free(firsts);
    return result;
}

/* Whether redacting every value of `values` (a dict) would change none, decided without Python
 * code in the common case: numbers and bools; short strings (`short` characters at most) that
 * `clean` (the redaction's cache: text -> redacted text) maps to themselves; longer strings
 * within `limit` characters in which no rule can find anything. False means "ask Python":
 * an unknown short string, a long or cut one, a candidate place, any other type. */
static int values_unchanged(const Probe *self, PyObject *values, PyObject *clean, Py_ssize_t shortest,
                            Py_ssize_t limit) {
    Py_ssize_t stack[16], *firsts = stack;
    if (self->n_groups > 16 && (firsts = PyMem_New(Py_ssize_t, self->n_groups)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *key, *value;
    int result = 1;
    Py_ssize_t at = 0;
    while (PyDict_Next(values, &at, &key, &value)) {
        PyTypeObject *type = Py_TYPE(value);
        if (type == &PyLong_Type || type == &PyFloat_Type || type == &PyBool_Type) continue;
        if (type != &PyUnicode_Type) {
            result = 0;
            break;
        }
        if (ready(value) < 0) {
            PyErr_Clear();
            result = 0;
            break;
        }
        Py_ssize_t size = PyUnicode_GET_LENGTH(value);
        if (size <= shortest) {
            /* A key of `clean` that is a str subclass may run Python code in the lookup (its
             * __eq__ on a hash collision), which could change `values`: hold on to `value`. */
            Py_INCREF(value);
            PyObject *known = PyDict_GetItemWithError(clean, value);  /* borrowed */
            int same = known != NULL && (known == value || (PyUnicode_CheckExact(known) &&
                                                            PyUnicode_Compare(known, value) == 0));
            Py_DECREF(value);
            if (!same) {
                result = PyErr_Occurred() ? -1 : 0;
                break;
            }
            continue;
        }
        PyObject *keys = NULL;
        if (size > limit) {
            result = 0;
            break;
        }
        Py_INCREF(value);  /* held while the scan allocates (a collection could run finalizers) */
        int scanned = scan_text(self, value, firsts, &keys);
        Py_DECREF(value);
        if (scanned < 0) {
            Py_XDECREF(keys);
            result = -1;
            break;
        }
        Py_ssize_t found = keys != NULL;
        Py_XDECREF(keys);
        for (Py_ssize_t g = 0; g < self->n_groups && !found; g++) found = firsts[g] >= 0;
        if (found) {
            result = 0;
            break;
        }
    }
    if (firsts != stack) PyMem_Free(firsts);
    return result;
}

/* `short` and `limit` as C sizes; 0 when beyond a Py_ssize_t (then Python decides). */
static int sizes(PyObject *const *args, Py_ssize_t *shortest, Py_ssize_t *limit) {
    *shortest = PyLong_AsSsize_t(args[0]);
    if (*shortest == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *limit = PyLong_AsSsize_t(args[1]);
    if (*limit == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* Whether redacting every value of `values` (a dict) would change none, decided without Python
 * code in the common case: numbers and bools; short strings (`short` characters at most) that
 * `clean` (the redaction's cache: text -> redacted text) maps to themselves; longer strings
 * within `limit` characters in which no rule can find anything. False means "ask Python":
 * an unknown short string, a long or cut one, a candidate place, any other type. */
static PyObject *Probe_unchanged(Probe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyDict_CheckExact(args[0]) || !PyDict_CheckExact(args[1]) || !PyLong_Check(args[2]) ||
        !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "unchanged(values: dict, clean: dict, short: int, limit: int)");
        return NULL;
    }
    Py_ssize_t shortest, limit;
    if (!sizes(args + 2, &shortest, &limit)) Py_RETURN_FALSE;  /* beyond Py_ssize_t: let Python decide */
    int unchanged = values_unchanged(self, args[0], args[1], shortest, limit);
    if (unchanged < 0) return NULL;
    return Py_NewRef(unchanged ? Py_True : Py_False);
}

/* A field of an SDK span (or of one of its parts), or NULL with no error set when it is missing. */
static PyObject *field(PyObject *owner, PyObject *name) {
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
    return value;
}

/* Whether the SDK's list of events or links (its deque), or an exact tuple or list, is empty:
 * 1, 0 (not empty, or another kind of object: the Python pass takes its length), -1. */
static int empty(PyObject *items, PyObject *bounded_list) {
    if (PyTuple_CheckExact(items)) return PyTuple_GET_SIZE(items) == 0;
    if (PyList_CheckExact(items)) return PyList_GET_SIZE(items) == 0;
    if (Py_TYPE(items) != (PyTypeObject *)bounded_list) return 0;
    PyObject *deque = field(items, interned.dq);
    if (deque == NULL) return PyErr_Occurred() ? -1 : 0;
    Py_ssize_t size = PyObject_Size(deque);
    Py_DECREF(deque);
    return size < 0 ? -1 : size == 0;
}

/* Whether the export pass would leave an SDK span as it is (see `Redaction._quiet`): its name
 * maps to itself in `clean`; its attributes, a BoundedAttributes whose dict holds none of the
 * `usage` keys, pass `values_unchanged`; it has no events and no links; its status has no
 * description; `resources` maps id(resource) to (resource, resource). False: ask Python. */
static PyObject *Probe_quiet(Probe *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyDict_CheckExact(args[1]) || !PyDict_CheckExact(args[2]) || !PyLong_Check(args[3]) ||
        !PyLong_Check(args[4]) || !PyTuple_CheckExact(args[5]) || PyTuple_GET_SIZE(args[5]) != 3 ||
        !PyTuple_CheckExact(args[6])) {
        PyErr_SetString(PyExc_TypeError,
                        "quiet(span, clean: dict, resources: dict, short: int, limit: int, "
                        "(BoundedAttributes, BoundedList, Status), usage: tuple)");
        return NULL;
    }
    PyObject *span = args[0], *clean = args[1], *resources = args[2], *types = args[5], *usage = args[6];
    Py_ssize_t shortest, limit;
    if (!sizes(args + 3, &shortest, &limit)) Py_RETURN_FALSE;
    PyObject *name = NULL, *raw = NULL, *plain = NULL, *events = NULL, *links = NULL, *status = NULL;
    PyObject *description = NULL, *resource = NULL, *id = NULL;
    int quiet = 0;
    /* the name: a str the cache maps to itself */
    if ((name = field(span, interned.name)) == NULL || !PyUnicode_CheckExact(name)) goto done;
    PyObject *known = PyDict_GetItemWithError(clean, name);  /* borrowed; name is held */
    if (known == NULL || (known != name && (!PyUnicode_CheckExact(known) || PyUnicode_Compare(known, name) != 0)))
        goto done;
    /* the attributes */
    if ((raw = field(span, interned.attributes)) == NULL) goto done;
    if (raw != Py_None) {
        if (Py_TYPE(raw) != (PyTypeObject *)PyTuple_GET_ITEM(types, 0)) goto done;
        if ((plain = field(raw, interned.dict)) == NULL || !PyDict_CheckExact(plain)) goto done;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(usage); k++) {
            int holds = PyDict_Contains(plain, PyTuple_GET_ITEM(usage, k));
            if (holds != 0) goto done;  /* usage to account for, or an error */
        }
        if (values_unchanged(self, plain, clean, shortest, limit) != 1) goto done;
    }
    /* no events, no links, no status description */
    if ((events = field(span, interned.events)) == NULL || empty(events, PyTuple_GET_ITEM(types, 1)) != 1) goto done;
    if ((links = field(span, interned.links)) == NULL || empty(links, PyTuple_GET_ITEM(types, 1)) != 1) goto done;
    if ((status = field(span, interned.status)) == NULL || Py_TYPE(status) != (PyTypeObject *)PyTuple_GET_ITEM(types, 2))
        goto done;
    if ((description = field(status, interned.description)) == NULL || PyObject_IsTrue(description) != 0) goto done;
    /* the resource: already redacted, to itself */
    if ((resource = field(span, interned.resource)) == NULL || (id = PyLong_FromVoidPtr(resource)) == NULL) goto done;
    PyObject *cached = PyDict_GetItemWithError(resources, id);  /* borrowed */
    quiet = cached != NULL && PyTuple_CheckExact(cached) && PyTuple_GET_SIZE(cached) == 2 &&
            PyTuple_GET_ITEM(cached, 0) == resource && PyTuple_GET_ITEM(cached, 1) == resource;
done:
    /* Any error on the way (a missing field, a failing __bool__) only means "ask Python". */
    if (PyErr_Occurred()) PyErr_Clear();
    Py_XDECREF(name);
    Py_XDECREF(raw);
    Py_XDECREF(plain);
    Py_XDECREF(events);
    Py_XDECREF(links);
    Py_XDECREF(status);
    Py_XDECREF(description);
    Py_XDECREF(resource);
    Py_XDECREF(id);
    return Py_NewRef(quiet ? Py_True : Py_False);
}

/* ---------------------------------------------------------------- building a probe */

static int ascii_copy(PyObject *text, Py_UCS1 **chars, Py_ssize_t *length, const char *what) {
    if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text) || PyUnicode_GET_LENGTH(text) == 0) {
        PyErr_Format(PyExc_ValueError, "%s must be a non-empty ASCII str", what);
        return -1;
    }
    *length = PyUnicode_GET_LENGTH(text);
    *chars = PyMem_Malloc(*length + 1);
    if (*chars == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(*chars, PyUnicode_DATA(text), *length);
    return 0;
}

static int char_set(PyObject *text, unsigned char *set, const char *what) {
    memset(set, 0, 128);
    if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text)) {
        PyErr_Format(PyExc_ValueError, "%s must be an ASCII str", what);
        return -1;
    }
    const Py_UCS1 *chars = PyUnicode_1BYTE_DATA(text);
    for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(text); k++) set[chars[k]] = 1;
    return 0;
}

static void Probe_dealloc(Probe *self) {
    for (Py_ssize_t n = 0; n < self->n_needles; n++) PyMem_Free(self->needles[n].chars);
    for (Py_ssize_t n = 0; n < self->n_names; n++) PyMem_Free(self->names[n].chars);
    for (Py_ssize_t n = 0; n < self->n_words; n++) PyMem_Free(self->words[n]);
    PyMem_Free(self->words);
    PyMem_Free(self->word_sizes);
    for (int c = 0; c < 128; c++) PyMem_Free(self->bucket[c]);
    PyMem_Free(self->needles);
    PyMem_Free(self->names);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Probe(groups, needles, names, skip_back, words)
 *   needles: tuples (literal, trigger, start, folded, group, skip, skip_min, run, run_wide, count, cut)
 *   names: tuples (name spelt backwards, anchor number, at, qualified); skip_back: characters
 *   between a name and its separator (`:`, `=`, `>`), which trigger the backwards search when
 *   names exist; words: what must end the identifier before a qualified name (`api` of `api_key`).
 */
static PyObject *Probe_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Py_ssize_t groups;
    PyObject *needles, *names, *skip_back, *words;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Probe() takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "nO!O!UO!", &groups, &PyTuple_Type, &needles, &PyTuple_Type, &names, &skip_back,
                          &PyTuple_Type, &words))
        return NULL;
    if (groups < 0 || groups > 1024) {
        PyErr_SetString(PyExc_ValueError, "groups must be between 0 and 1024");
        return NULL;
    }
    Probe *self = (Probe *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->n_groups = groups;
    Py_ssize_t n_needles = PyTuple_GET_SIZE(needles), n_names = PyTuple_GET_SIZE(names);
    self->needles = PyMem_Calloc(n_needles ? n_needles : 1, sizeof(Needle));
    self->names = PyMem_Calloc(n_names ? n_names : 1, sizeof(Name));
    if (self->needles == NULL || self->names == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    if (char_set(skip_back, self->skip_back, "skip_back") < 0) goto error;
    for (Py_ssize_t n = 0; n < n_needles; n++) {
        Needle *needle = &self->needles[n];
        PyObject *literal, *skip, *run;
        if (!PyTuple_Check(PyTuple_GET_ITEM(needles, n))) {
            PyErr_SetString(PyExc_TypeError, "a needle must be a tuple");
            goto error;
        }
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(needles, n), "UnnpiUiUpnp;a needle is (literal, trigger, "
                              "start, folded, group, skip, skip_min, run, run_wide, count, cut)",
                              &literal, &needle->trigger, &needle->start, &needle->folded, &needle->group,
                              &skip, &needle->skip_min, &run, &needle->run_wide, &needle->count, &needle->cut))
            goto error;
        self->n_needles = n + 1;
        if (ascii_copy(literal, &needle->chars, &needle->length, "a needle's literal") < 0) goto error;
        if (char_set(skip, needle->skip, "a needle's skip") < 0 || char_set(run, needle->run, "a needle's run") < 0)
            goto error;
        if (needle->trigger < 0 || needle->trigger >= needle->length || needle->group < 0 ||
            needle->group >= groups || needle->count < 0) {
            PyErr_SetString(PyExc_ValueError, "a needle's trigger, group or count is out of range");
            goto error;
        }
        Py_UCS1 c = needle->chars[needle->trigger];
        if (needle->folded) {
            for (Py_ssize_t k = 0; k < needle->length; k++) needle->chars[k] = (Py_UCS1)fold(needle->chars[k]);
            c = needle->chars[needle->trigger];
            if (c == 'i' || c == 'k') {  /* U+0130 and KELVIN SIGN would not stop the scan */
                PyErr_SetString(PyExc_ValueError, "a folded needle cannot trigger on 'i' or 'k'");
                goto error;
            }
        }
        Entry entry = {n, -1, needle->folded, 0};
        if (needle->trigger > 0 || needle->length > 1) {
            entry.side = needle->trigger > 0 ? 0 : 1;
            entry.beside = needle->chars[needle->trigger + (entry.side ? 1 : -1)];
        }
        Py_UCS1 cases[2] = {c, (Py_UCS1)(needle->folded && c >= 'a' && c <= 'z' ? c - 32 : c)};
        for (int k = 0; k < (cases[0] == cases[1] ? 1 : 2); k++) {
            Py_UCS1 t = cases[k];
            Entry *grown = PyMem_Realloc(self->bucket[t], (self->bucket_size[t] + 1) * sizeof(Entry));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto error;
            }
            self->bucket[t] = grown;
            self->bucket[t][self->bucket_size[t]++] = entry;
            self->triggers[t] |= TRIGGER_NEEDLE;
        }
    }
    for (Py_ssize_t n = 0; n < n_names; n++) {
        Name *name = &self->names[n];
        PyObject *spelt;
        if (!PyTuple_Check(PyTuple_GET_ITEM(names, n))) {
            PyErr_SetString(PyExc_TypeError, "a name must be a tuple");
            goto error;
        }
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(names, n), "Ulnp;a name is (backwards, anchor, at, qualified)",
                              &spelt, &name->anchor, &name->at, &name->qualified))
            goto error;
        self->n_names = n + 1;
        if (ascii_copy(spelt, &name->chars, &name->length, "a key name") < 0) goto error;
        for (Py_ssize_t k = 0; k < name->length; k++) name->chars[k] = (Py_UCS1)fold(name->chars[k]);
        self->name_end[name->chars[0]] = 1;
    }
    Py_ssize_t n_words = PyTuple_GET_SIZE(words);
    self->words = PyMem_Calloc(n_words ? n_words : 1, sizeof(Py_UCS1 *));
    self->word_sizes = PyMem_Calloc(n_words ? n_words : 1, sizeof(Py_ssize_t));
    if (self->words == NULL || self->word_sizes == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t n = 0; n < n_words; n++) {
        self->n_words = n + 1;
        if (ascii_copy(PyTuple_GET_ITEM(words, n), &self->words[n], &self->word_sizes[n], "a key word") < 0)
            goto error;
        Py_UCS1 *word = self->words[n];
        for (Py_ssize_t a = 0, b = self->word_sizes[n] - 1; a < b; a++, b--) {  /* spelt backwards */
            Py_UCS1 swap = word[a];
            word[a] = word[b];
            word[b] = swap;
        }
        for (Py_ssize_t k = 0; k < self->word_sizes[n]; k++) word[k] = (Py_UCS1)fold(word[k]);
    }
    if (n_names) {
        self->triggers[':'] |= TRIGGER_SEPARATOR;
        self->triggers['='] |= TRIGGER_SEPARATOR;
        self->triggers['>'] |= TRIGGER_SEPARATOR;
    }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

/* ---------------------------------------------------------------- the capture's size check */

/* Whether a value is small enough to serialise whole: `_is_small_python` of tracesim/_capture/_size.py,
 * step for step, for values made of the exact JSON types (dict, list, tuple, str, int, float,
 * bool, None). It returns None when it meets any other type: Python then decides, from the
 * start. No Python code runs during the walk (only lengths of exact built-in types are read),
 * so the borrowed references on the stack stay valid. */
#define SCALAR(t) ((t) == &PyLong_Type || (t) == &PyFloat_Type || (t) == &PyBool_Type || (t) == Py_TYPE(Py_None))

typedef struct {
    PyObject **items;
    Py_ssize_t size, capacity;
    PyObject *local[64];
} Stack;

static int push(Stack *stack, PyObject *item) {
    if (stack->size == stack->capacity) {
        Py_ssize_t capacity = stack->capacity * 2;
        if (capacity > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PyObject *)) {
            PyErr_NoMemory();
            return -1;
        }
        size_t bytes = (size_t)capacity * sizeof(PyObject *);
        int local = stack->items == stack->local;
        PyObject **items = local ? PyMem_Malloc(bytes) : PyMem_Realloc(stack->items, bytes);
        if (items == NULL) {  /* the old block, if any, is still stack->items: freed by the caller */
            PyErr_NoMemory();
            return -1;
        }
        if (local) memcpy(items, stack->local, sizeof(stack->local));
        stack->items = items;
        stack->capacity = capacity;
    }
    stack->items[stack->size++] = item;
    return 0;
}

/* 1 small, 0 not, 2 another type (ask Python), -1 error. */
static int walk(Stack *stack, PyObject *value, Py_ssize_t chars, Py_ssize_t nodes) {
    if (push(stack, value) < 0) return -1;
    while (stack->size > 0) {
        PyObject *item = stack->items[--stack->size];
        nodes -= 1;
        PyTypeObject *kind = Py_TYPE(item);
        if (kind == &PyDict_Type || kind == &PyList_Type || kind == &PyTuple_Type) {
            Py_ssize_t count = kind == &PyDict_Type   ? PyDict_GET_SIZE(item)
                               : kind == &PyList_Type ? PyList_GET_SIZE(item)
                                                      : PyTuple_GET_SIZE(item);
            nodes -= count;
            if (nodes < 0) return 0;
            Py_ssize_t at = 0;
            for (Py_ssize_t k = 0; k < count; k++) {
                PyObject *child;
                if (kind == &PyDict_Type) {
                    if (!PyDict_Next(item, &at, NULL, &child)) break;
                } else {
                    child = kind == &PyList_Type ? PyList_GET_ITEM(item, k) : PyTuple_GET_ITEM(item, k);
                }
                PyTypeObject *ckind = Py_TYPE(child);
                if (ckind == &PyUnicode_Type) {
                    if (ready(child) < 0) return -1;
                    chars -= PyUnicode_GET_LENGTH(child);
                } else if (ckind == &PyDict_Type) {  /* a record: its items read here too */
                    nodes -= PyDict_GET_SIZE(child);
                    if (nodes < 0) return 0;
                    Py_ssize_t inner = 0;
                    PyObject *grandchild;
                    while (PyDict_Next(child, &inner, NULL, &grandchild)) {
                        PyTypeObject *gkind = Py_TYPE(grandchild);
                        if (gkind == &PyUnicode_Type) {
                            if (ready(grandchild) < 0) return -1;
                            chars -= PyUnicode_GET_LENGTH(grandchild);
                        } else if (!SCALAR(gkind)) {
                            if (push(stack, grandchild) < 0) return -1;
                            nodes += 1;  /* counted again when it is read */
                        }
                    }
                } else if (!SCALAR(ckind)) {
                    if (push(stack, child) < 0) return -1;
                    nodes += 1;
                }
            }
            if (chars < 0) return 0;
        } else if (kind == &PyUnicode_Type) {
            if (ready(item) < 0) return -1;
            chars -= PyUnicode_GET_LENGTH(item);
            if (chars < 0) return 0;
        } else if (nodes < 0) {
            return 0;
        } else if (!SCALAR(kind)) {
            return 2;
        }
    }
    return nodes >= 0;
}

static PyObject *small(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "small(value, chars: int, nodes: int)");
        return NULL;
    }
    Py_ssize_t chars, nodes;
    /* budgets that are not ints, or beyond a Py_ssize_t: Python decides */
    if (!PyLong_Check(args[1]) || !PyLong_Check(args[2]) || !sizes(args + 1, &chars, &nodes)) Py_RETURN_NONE;
    /* Any negative budget answers as -1 does (the walk only compares with 0), and the steps
     * below cannot wrap around from there. */
    if (chars < -1) chars = -1;
    if (nodes < -1) nodes = -1;
    Stack stack = {.size = 0, .capacity = 64};
    stack.items = stack.local;
    int found = walk(&stack, args[0], chars, nodes);
    if (stack.items != stack.local) PyMem_Free(stack.items);
    if (found < 0) return NULL;
    return Py_NewRef(found == 2 ? Py_None : found ? Py_True : Py_False);
}

static PyMethodDef module_methods[] = {
    {"small", (PyCFunction)(void (*)(void))small, METH_FASTCALL,
     "small(value, chars, nodes) -> bool, or None: tracesim._capture._size.is_small for values of the "
     "exact JSON types (None when another type is met: ask Python)."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef Probe_methods[] = {
    {"unchanged", (PyCFunction)(void (*)(void))Probe_unchanged, METH_FASTCALL,
     "unchanged(values, clean, short, limit) -> bool: True when redacting the values of the dict "
     "`values` changes none of them (see the source); False: let the Python pass decide."},
    {"quiet", (PyCFunction)(void (*)(void))Probe_quiet, METH_FASTCALL,
     "quiet(span, clean, resources, short, limit, types, usage) -> bool: True when the export pass "
     "would leave the SDK span as it is (see the source); False: let the Python pass decide."},
    {"scan", (PyCFunction)Probe_scan, METH_O,
     "scan(text) -> None when no rule can find anything in text, else (places, keys): per rule, "
     "where its first match could start (-1: nowhere); the key names found before separators as "
     "(anchor, position, separator), or None."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProbeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tracesim._redact._probe.Probe",
    .tp_basicsize = sizeof(Probe),
    .tp_dealloc = (destructor)Probe_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Where each redaction rule could start in a text, found in one pass.",
    .tp_methods = Probe_methods,
    .tp_new = Probe_new,
};

static struct PyModuleDef probe_module = {
    PyModuleDef_HEAD_INIT, "_probe", "One-pass probe for tracesim's redaction rules; the capture's size check.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__probe(void) {
    if (PyType_Ready(&ProbeType) < 0) return NULL;
    const char *fields[] = {"_name", "_attributes", "_dict", "_events", "_links", "_dq", "_status",
                            "_description", "_resource"};
    PyObject **slots[] = {&interned.name, &interned.attributes, &interned.dict, &interned.events,
                          &interned.links, &interned.dq, &interned.status, &interned.description,
                          &interned.resource};
    for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++)
        if (*slots[k] == NULL && (*slots[k] = PyUnicode_InternFromString(fields[k])) == NULL) return NULL;
    PyObject *module = PyModule_Create(&probe_module);
    if (module == NULL) return NULL;
    Py_INCREF(&ProbeType);
    if (PyModule_AddObject(module, "Probe", (PyObject *)&ProbeType) < 0) {
        Py_DECREF(&ProbeType);
        Py_DECREF(module);
        return NULL;
    }
    /* What the Python side checks before using this build: a module built from an older source
     * (an in-place build left in a checkout) is not used. Raise it with any change of meaning. */
    if (PyModule_AddIntConstant(module, "VERSION", PROBE_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
