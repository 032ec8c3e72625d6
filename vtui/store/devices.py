"""Every device and category rule in one place: what is accelerator work, which tracks are device
tracks, what is a runtime (launch) call, a sync point, an annotation, a Python frame, an operator.

Kineto writes one category per activity type (current names, the 2021 legacy ones, and those of
non-CUDA backends: MTIA's on-device ``mtia_ccp_events`` are its kernels). Categories are compared
in lower case. The store uses `device_category` to mark device tracks; the analyses use the masks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from vtui.store.tracks import GPU, THREAD

if TYPE_CHECKING:
    from vtui.store.store import TraceStore

# Device work (Kineto's device activity; "kernel"/"memcpy"/"memset" cover the 2021 Kernel/Memcpy/Memset).
KERNEL_CATS = frozenset({"kernel", "mtia_ccp_events"})
MEMCPY_CATS = frozenset({"gpu_memcpy", "memcpy"})
MEMSET_CATS = frozenset({"gpu_memset", "memset"})
DEVICE_WORK_CATS = KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS
# Also on device tracks, but not work: annotations mirrored onto a stream, CUDA sync records.
DEVICE_TRACK_CATS = DEVICE_WORK_CATS | frozenset({"gpu_user_annotation", "cuda_sync"})
# Host-side runtime / driver calls (the launches and syncs), CUDA, 2021 legacy, MTIA, XPU, PrivateUse1.
RUNTIME_CATS = frozenset({"cuda_runtime", "runtime", "cuda_driver", "driver", "mtia_runtime", "xpu_runtime",
                          "privateuse1_runtime", "privateuse1_driver"})
ANNOTATION_CATS = frozenset({"user_annotation", "gpu_user_annotation"})
PYTHON_CATS = frozenset({"python_function"})
PROFILER_CATS = frozenset({"trace"})  # the profiler's own whole-run span ("PyTorch Profiler (0)")
# The profiler's own cost (CUPTI's "Activity Buffer Request", "Lazy Function Loading", on pid -1):
# time the tracer took, not an operator of the program.
OVERHEAD_CATS = frozenset({"overhead"})
# On a device track these are not work (annotations, host frames some producers put there).
NOT_WORK_CATS = ANNOTATION_CATS | PYTHON_CATS | PROFILER_CATS | frozenset({"cuda_sync", "cpu_op"})

STEP_ANNOTATION = re.compile(r"^ProfilerStep#\d+$")
# PyTorch's own record_function labels (ProfilerStep#N, Optimizer.step#SGD.step,
# enumerate(DataLoader)#…__next__) and users' ("## forward ##") hold a '#', which no ATen op or
# autograd node name does. The 2021 Kineto schema files them under "Operator" with the operators
# (torch-tb-profiler leaves the DataLoader and Optimizer ones out of its operator table too);
# later schemas say user_annotation.
RECORD_FUNCTION_NAME = re.compile("#")
HOST_OP_CATS = frozenset({"cpu_op", "operator"})
WHOLE_RUN_SPAN = re.compile(r"^PyTorch Profiler \(\d+\)$")
# Sync points: CUDA/HIP names anywhere (traces without categories too), and in a runtime category
# any call that synchronises (MTIA's synchronizeStream, aclrtSynchronizeStream, ...). Blocking ones
# hold the host until the device has drained: synchronize calls, synchronous copies and memsets
# (no "Async": cudaMemcpy, hipMemcpyWithStream, cudaMemset; the driver's cuMemcpyDtoH too) and
# ``.item()``'s copy. Ordering ones (event record, stream wait event) only queue a dependency.
BLOCKING_SYNC_NAME = re.compile(r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|ThreadSynchronize)$"
                                r"|^(cuda|hip)Memcpy(2D|3D|Peer|ToSymbol|FromSymbol|WithStream|DtoH|HtoD|DtoD)?$"
                                r"|^(cuda|hip)Memset(D8|D16|D32|2D|3D)?$|^cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?$"
                                r"|^aten::_local_scalar_dense$")
ORDERING_SYNC_NAME = re.compile(r"^(cuda|hip)(EventRecord|EventRecordWithFlags|StreamWaitEvent)$")
SYNC_NAME = re.compile(f"{BLOCKING_SYNC_NAME.pattern}|{ORDERING_SYNC_NAME.pattern}")
RUNTIME_SYNC_NAME = re.compile(r"(?i)synchroni[sz]e")
ITEM_COPY = re.compile(r"^aten::_local_scalar_dense$")  # .item(): a blocking copy when no runtime call is recorded in it
# Threads the CUDA/HIP runtime, the driver and the profiler run for themselves (Nsight names them;
# Kineto's traces do not hold them), and Nsight's OS-runtime calls (poll, ioctl, sem_wait): no unit of
# the application's work is there.
HELPER_THREAD_NAME = re.compile(r"(?i)evthandlr|cupti")
OS_RUNTIME_CATS = frozenset({"osrt"})
DEVICE_LABELS = ("GPU", "MTIA")  # process labels Kineto gives device processes

KERNEL, MEMCPY, MEMSET = 1, 2, 3
_KIND_OF_CAT = {cat: kind for cats, kind in ((KERNEL_CATS, KERNEL), (MEMCPY_CATS, MEMCPY), (MEMSET_CATS, MEMSET))
                for cat in cats}
_MEMCPY_NAME = re.compile(r"(?i)^memcpy|\bmemcpy\b")
_MEMSET_NAME = re.compile(r"(?i)^memset|\bmemset\b")


def device_category(cat: str) -> bool:
    """A category that makes its track a device track."""
    return cat.lower() in DEVICE_TRACK_CATS


# Host-side work: a thread holding these in a process labelled "GPU n" is still a CPU thread
# (Kineto files some Python threads, e.g. tqdm's monitor, under pid 0 = "GPU 0").
HOST_TRACK_CATS = RUNTIME_CATS | PYTHON_CATS | frozenset({"cpu_op", "operator", "user_annotation", "python_overhead"})


def host_category(cat: str) -> bool:
    """A category of host-side work (never on a device track by itself)."""
    return cat.lower() in HOST_TRACK_CATS


def device_label(label: str) -> bool:
    return label.upper().startswith(DEVICE_LABELS)


def string_mask(store: TraceStore, pred: Callable[[str], object]) -> np.ndarray:
    """Boolean per interned string: pred(text)."""
    return np.fromiter((bool(pred(s)) for s in store.strings), dtype=bool, count=len(store.strings))


def per_slice(store: TraceStore, by_id: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``by_id[ids]``: a per-string (or per-track) mask gathered over the slices (``ids``: their
    name, category or track ids); no gather where nothing is marked (most categories, names and
    helper threads asked for are absent from a given trace)."""
    if not by_id.any():
        return np.zeros(len(ids), dtype=bool)
    return by_id[ids]


# The masks below are memoised per store (``TraceStore.memo``, read-only arrays): one Insights
# pass asks for the same ones ~20 times, and each is a gather over every slice.


def cat_mask(store: TraceStore, cats: frozenset[str] | set[str]) -> np.ndarray:
    """Per slice: its category (lower case) is one of ``cats``."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    cats = frozenset(cats)
    return store.memo(("cat", cats),
                      lambda: per_slice(store, string_mask(store, lambda s: s.lower() in cats), store.slices.cat_id))


def name_mask(store: TraceStore, regex: re.Pattern[str]) -> np.ndarray:
    """Per slice: ``regex.search(name)``."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return store.memo(("name", regex.pattern, regex.flags),
                      lambda: per_slice(store, string_mask(store, regex.search), store.slices.name_id))


def _track_kind_is(store: TraceStore, kind: str) -> np.ndarray:
    """Per track: it is of this kind."""
    return store.tracks.kind_is(kind)


def on_device_track(store: TraceStore) -> np.ndarray:
    """Per slice: it lies on a device (GPU, MTIA, ...) track."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return store.memo("on_device_track", lambda: _track_kind_is(store, GPU)[store.slices.track])


def device_work_kinds(store: TraceStore) -> np.ndarray:
    """Per slice: 0 not device work, else KERNEL / MEMCPY / MEMSET.

    Kineto's categories decide. A trace without them (another producer) falls back to the leaf
    slices on device tracks, typed by name (Memcpy… / Memset…, the rest kernels); leaves only, so
    an annotation wrapping kernels is not counted twice.
    """
    return store.memo("device_work_kinds", lambda: _device_work_kinds(store))


def _device_work_kinds(store: TraceStore) -> np.ndarray:
    s = store.slices
    # The kind per category string, then one gather over the slices.
    by_cat = np.fromiter((_KIND_OF_CAT.get(c.lower(), 0) for c in store.strings), dtype=np.int8,
                         count=len(store.strings))
    kinds = by_cat[s.cat_id] if len(s) else np.zeros(0, dtype=np.int8)
    if kinds.any() or not len(s):
        return kinds
    has_child = np.bincount(s.parent[s.parent >= 0], minlength=len(s)) > 0
    rows = np.flatnonzero(on_device_track(store) & ~has_child & ~cat_mask(store, NOT_WORK_CATS))
    for r in rows.tolist():
        name = store.name(r)
        kinds[r] = MEMCPY if _MEMCPY_NAME.search(name) else MEMSET if _MEMSET_NAME.search(name) else KERNEL
    return kinds


def runtime_mask(store: TraceStore) -> np.ndarray:
    """Per slice: a host-side runtime or driver call (where launches come from)."""
    return cat_mask(store, RUNTIME_CATS)


def sync_mask(store: TraceStore) -> np.ndarray:
    """Per slice: a synchronisation point (the host waits for, or orders against, the device)."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return blocking_sync_mask(store) | name_mask(store, ORDERING_SYNC_NAME)


def blocking_sync_mask(store: TraceStore) -> np.ndarray:
    """Per slice: a sync point that blocks the host until the device is done (see BLOCKING_SYNC_NAME).
    ``.item()``'s ``aten::_local_scalar_dense`` counts only where no sync call is recorded inside
    it (else that call is the sync point, counted once)."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return store.memo("blocking_sync_mask", lambda: _blocking_sync(store))


def _blocking_sync(store: TraceStore) -> np.ndarray:
    calls = (name_mask(store, BLOCKING_SYNC_NAME) & ~name_mask(store, ITEM_COPY)) | name_mask(store, ORDERING_SYNC_NAME) \
        | (runtime_mask(store) & name_mask(store, RUNTIME_SYNC_NAME))
    item = name_mask(store, ITEM_COPY)
    out = calls & ~name_mask(store, ORDERING_SYNC_NAME)
    if item.any():
        parent = store.slices.parent
        holds = np.zeros(len(out), dtype=bool)
        anc = parent[np.flatnonzero(calls)].astype(np.int64)
        while len(anc):  # climb from every sync call: the .item() copies holding one
            anc = anc[anc >= 0]
            holds[anc] = True
            anc = parent[anc].astype(np.int64)
        out = out | (item & ~holds)
    return out


def annotation_mask(store: TraceStore) -> np.ndarray:
    """Per slice: an annotation, not an operator: user / GPU annotations, ProfilerStep#N, the
    profiler's whole-run span, and record_function labels filed as operators (a '#' in the name)."""
    return (cat_mask(store, ANNOTATION_CATS | PROFILER_CATS) | name_mask(store, STEP_ANNOTATION)
            | name_mask(store, WHOLE_RUN_SPAN)
            | (cat_mask(store, HOST_OP_CATS) & name_mask(store, RECORD_FUNCTION_NAME)))


def whole_run_mask(store: TraceStore) -> np.ndarray:
    """Per slice: the profiler's own span over the whole run (not a unit of work)."""
    return cat_mask(store, PROFILER_CATS) | name_mask(store, WHOLE_RUN_SPAN)


def python_mask(store: TraceStore) -> np.ndarray:
    return cat_mask(store, PYTHON_CATS)


def on_thread_track(store: TraceStore) -> np.ndarray:
    """Per slice: it lies on a CPU thread's track (not a device, async or other track)."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return store.memo("on_thread_track", lambda: _track_kind_is(store, THREAD)[store.slices.track])


def helper_mask(store: TraceStore) -> np.ndarray:
    """Per slice: on a runtime, driver or profiler helper thread (HELPER_THREAD_NAME), or an OS
    runtime call (Nsight's ``osrt``): never the application's unit of work."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)

    def build() -> np.ndarray:
        t = store.tracks
        names = getattr(t, "columns", None)
        if names is not None:  # the track table: one test per distinct name
            text = t.text
            by_text = np.fromiter((bool(HELPER_THREAD_NAME.search(x)) for x in text), dtype=bool, count=len(text))
            per_track = by_text[names["name"]] & t.kind_is(THREAD)
        else:
            per_track = np.fromiter((tr.kind == THREAD and bool(HELPER_THREAD_NAME.search(tr.name or "")) for tr in t),
                                    dtype=bool, count=len(t))
        return per_slice(store, per_track, store.slices.track) | cat_mask(store, OS_RUNTIME_CATS)
    return store.memo("helper_mask", build)


def cpu_op_mask(store: TraceStore) -> np.ndarray:
    """Per slice: a CPU operator: a call on a CPU thread (async spans are not calls: they overlap
    freely and belong to no thread), not device work, not a Python frame, not an annotation, not
    the profiler's own overhead."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return store.memo("cpu_op_mask", lambda: on_thread_track(store) & (device_work_kinds(store) == 0)
                      & ~python_mask(store) & ~annotation_mask(store) & ~cat_mask(store, OVERHEAD_CATS))


def op_mask(store: TraceStore) -> np.ndarray:
    """Per slice: a CPU operator that is not a runtime or driver call (``cpu_op_mask`` less
    ``runtime_mask``): the operators that launch device work, as a diff names them."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return store.memo("op_mask", lambda: cpu_op_mask(store) & ~runtime_mask(store))
