/* Optional C helper: survive reading a mapped file that another program cut shorter.
 *
 * Touching a page of a file mapping past the file's (new) end raises SIGBUS, and its default
 * action kills the process at once: no cleanup runs (temp files stay), and the kernel's death
 * signal for the decoders is the only thing that stops them. Python cannot handle SIGBUS itself
 * (its handlers run later, between bytecodes; the faulting read would repeat forever).
 *
 * install() sets a SIGBUS handler that, for a fault past the end of a mapped file (si_code
 * BUS_ADRERR), maps one page of zeros over the faulting page and returns: the read repeats and
 * sees zeros, and faults() counts it. The loader then finds the file changed (its size and hash)
 * and says so in one line, with every cleanup run. Any other SIGBUS goes to the handler that was
 * there before (the default: the process dies, as without this helper).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__linux__)
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static struct sigaction previous;
static volatile sig_atomic_t installed;
static volatile long long replaced;  /* pages replaced by zeros (written only in the handler) */
static long page_size;  /* set by install(): sysconf() is not async-signal-safe, so the handler only reads it */

static void
on_sigbus(int signum, siginfo_t *info, void *context)
{
    if (info != NULL && info->si_code == BUS_ADRERR) {
        long page = page_size;
        uintptr_t at = (uintptr_t)info->si_addr & ~(uintptr_t)(page - 1);
        /* One page only: the faulting page lies inside the file's mapping, so nothing else is hit. */
        void *got = mmap((void *)at, (size_t)page, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (got != MAP_FAILED) {
            replaced++;
            return;  /* the read runs again, on zeros */
        }
    }
    /* Not ours (or no memory for the page): the previous action, which runs when the fault repeats. */
    sigaction(SIGBUS, &previous, NULL);
    (void)signum;
    (void)context;
}

static PyObject *
install(PyObject *self, PyObject *unused)
{
    if (!installed) {
        struct sigaction action;
        page_size = sysconf(_SC_PAGESIZE);
        if (page_size <= 0) {
            PyErr_SetString(PyExc_OSError, "the page size is unknown");
            return NULL;
        }
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = on_sigbus;
        action.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        if (sigaction(SIGBUS, &action, &previous) != 0)
            return PyErr_SetFromErrno(PyExc_OSError);
        installed = 1;
    }
    Py_RETURN_TRUE;
}

static PyObject *
faults(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(replaced);
}
#else
static PyObject *
install(PyObject *self, PyObject *unused)
{
    Py_RETURN_FALSE;  /* no guard here: the caller reads the file instead of mapping it */
}

static PyObject *
faults(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(0);
}
#endif

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS, "Install the SIGBUS guard (idempotent); False where there is none."},
    {"faults", faults, METH_NOARGS, "Pages past a mapped file's end that were read as zeros so far."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_vtui_mapguard",
    "Optional C helper: reads past the end of a mapped file that shrank give zeros, not SIGBUS.", -1, methods,
};

PyMODINIT_FUNC
PyInit__vtui_mapguard(void)
{
    PyObject *mod = PyModule_Create(&module);
#ifdef Py_GIL_DISABLED
    /* Declared, not assumed: install() keeps process-wide state (the previous handler) with no
       lock of its own, so a free-threaded Python (3.13t) keeps the GIL on while it is imported. */
    if (mod != NULL && PyUnstable_Module_SetGIL(mod, Py_MOD_GIL_USED) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
#endif
    return mod;
}
