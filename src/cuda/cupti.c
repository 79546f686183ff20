/* Why: the profiler shows GPU work the way torch.profiler does, with the
 * real kernel names (cuBLASLt's nvjet/xmma kernels included), the launch
 * calls on the CPU lane and flow arrows between them. CUPTI's Activity API
 * delivers those records; this file turns them into the profiler's plain
 * records on fmlp's clock with Kineto's joins: every runtime call and the
 * GPU activity it started keep the correlation CUPTI gave the call (unique
 * per call), and both carry the issuing op's External id, which the
 * backend pushes as CUPTI external correlation. It switches CUPTI off again
 * when a window closes so profiling leaves no slowdown behind. CUPTI is per
 * process, so its state here is too: one collection, which the profilers
 * of contexts on different GPUs (one process driving several, as a
 * tensor-parallel run does) share, each handed its own GPU's records. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "cuda/cuda_internal.h"
#include "profiler/hook.h"

#define CUPTI_BUFFER_BYTES ((size_t)4 << 20)

typedef enum { CR_KERNEL, CR_RUNTIME, CR_DRIVER, CR_MEMCPY, CR_MEMSET, CR_TAKEN } cr_kind;

typedef struct {
    cr_kind kind;
    uint32_t corr, device, stream, tid, cbid;
    uint64_t t0, t1, bytes;
    uint8_t src_kind, dst_kind; /* memcpy: CUpti_ActivityMemoryKind of each side; memset: dst */
    const char *name; /* interned (kernels), or static */
    int grid[3], block[3], regs, smem;
} cr_rec;

/* The most GPUs whose profilers may record at once. */
#define CUPTI_MAX_DEVICES 64

static struct {
    pthread_mutex_t lock;
    pthread_mutex_t owners_lock; /* orders starts and stops: CUPTI is switched on by the first, off by the last */
    volatile int active;
    uint64_t owners; /* bit d: a profiler of a context on device d collects */
    cr_rec *recs;
    size_t n, cap;
    struct {
        uint32_t corr;
        uint64_t ext;
    } *ext;
    size_t n_ext, cap_ext;
    char **names;
    size_t n_names, cap_names;
    struct {
        uint32_t cupti_tid;
        int tid;
    } threads[64];
    int n_threads;
} G = {.lock = PTHREAD_MUTEX_INITIALIZER, .owners_lock = PTHREAD_MUTEX_INITIALIZER};

static const CUpti_ActivityKind KINDS[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_MEMCPY,            CUPTI_ACTIVITY_KIND_MEMSET,  CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};
#define N_KINDS (sizeof KINDS / sizeof KINDS[0])

bool fmlp_cu_prof_active(void) { return G.active != 0; }

void fmlp_cu_prof_push(int64_t external_id)
{
    const uint32_t self = (uint32_t)pthread_self();
    bool known = false;
    pthread_mutex_lock(&G.lock);
    for (int i = 0; i < G.n_threads && !known; i++) known = G.threads[i].cupti_tid == self;
    if (!known && G.n_threads < 64) {
        G.threads[G.n_threads].cupti_tid = self;
        G.threads[G.n_threads].tid = fmlp_thread_id();
        G.n_threads++;
    }
    pthread_mutex_unlock(&G.lock);
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, (uint64_t)external_id);
}

void fmlp_cu_prof_pop(void)
{
    uint64_t id;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

static uint64_t CUPTIAPI now_cb(void) { return (uint64_t)fmlp_now_ns(); }

static const char *intern(const char *s)
{
    for (size_t i = 0; i < G.n_names; i++)
        if (strcmp(G.names[i], s) == 0) return G.names[i];
    if (G.n_names == G.cap_names) {
        size_t cap = G.cap_names ? 2 * G.cap_names : 64;
        char **nn = fmlp_realloc(G.names, cap * sizeof *nn);
        if (!nn) return "kernel";
        G.names = nn;
        G.cap_names = cap;
    }
    char *c = fmlp_strdup(s);
    if (!c) return "kernel";
    G.names[G.n_names++] = c;
    return c;
}

static cr_rec *push_rec(void)
{
    if (G.n == G.cap) {
        size_t cap = G.cap ? 2 * G.cap : 4096;
        cr_rec *nr = fmlp_realloc(G.recs, cap * sizeof *nr);
        if (!nr) return NULL;
        G.recs = nr;
        G.cap = cap;
    }
    cr_rec *r = &G.recs[G.n++];
    memset(r, 0, sizeof *r);
    return r;
}

static void take(const CUpti_Activity *a)
{
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        cr_rec *r = push_rec();
        if (!r) return;
        r->kind = CR_KERNEL;
        r->corr = k->correlationId;
        r->device = k->deviceId;
        r->stream = k->streamId;
        r->t0 = k->start;
        r->t1 = k->end;
        r->name = intern(k->name ? k->name : "kernel");
        r->grid[0] = k->gridX;
        r->grid[1] = k->gridY;
        r->grid[2] = k->gridZ;
        r->block[0] = k->blockX;
        r->block[1] = k->blockY;
        r->block[2] = k->blockZ;
        r->regs = k->registersPerThread;
        r->smem = k->staticSharedMemory + k->dynamicSharedMemory;
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *api = (const CUpti_ActivityAPI *)a;
        cr_rec *r = push_rec();
        if (!r) return;
        r->kind = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CR_RUNTIME : CR_DRIVER;
        r->corr = api->correlationId;
        r->cbid = api->cbid;
        r->tid = api->threadId;
        r->t0 = api->start;
        r->t1 = api->end;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;
        cr_rec *r = push_rec();
        if (!r) return;
        r->kind = CR_MEMCPY;
        r->corr = m->correlationId;
        r->device = m->deviceId;
        r->stream = m->streamId;
        r->t0 = m->start;
        r->t1 = m->end;
        r->bytes = m->bytes;
        r->cbid = m->copyKind;
        r->src_kind = m->srcKind;
        r->dst_kind = m->dstKind;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)a;
        cr_rec *r = push_rec();
        if (!r) return;
        r->kind = CR_MEMSET;
        r->corr = m->correlationId;
        r->device = m->deviceId;
        r->stream = m->streamId;
        r->t0 = m->start;
        r->t1 = m->end;
        r->bytes = m->bytes;
        r->dst_kind = (uint8_t)m->memoryKind;
        break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)a;
        if (x->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) return;
        if (G.n_ext == G.cap_ext) {
            size_t cap = G.cap_ext ? 2 * G.cap_ext : 4096;
            void *ne = fmlp_realloc(G.ext, cap * sizeof *G.ext);
            if (!ne) return;
            G.ext = ne;
            G.cap_ext = cap;
        }
        G.ext[G.n_ext].corr = x->correlationId;
        G.ext[G.n_ext].ext = x->externalId;
        G.n_ext++;
        break;
    }
    default: break;
    }
}

/* CUPTI's record buffers are kept for reuse, their pages touched once: a
 * fresh 4 MiB buffer is a thousand page faults (2.4 ms on the H200's
 * host), which would land in whichever step first needs a buffer. */
#define CUPTI_SPARE_BUFFERS 8
static struct {
    pthread_mutex_t lock;
    uint8_t *free[CUPTI_SPARE_BUFFERS];
    int n;
} g_buffers = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint8_t *buffer_new(void)
{
    uint8_t *b = fmlp_aligned_alloc(8, CUPTI_BUFFER_BYTES);
    if (b) memset(b, 0, CUPTI_BUFFER_BYTES);
    return b;
}

static void buffer_keep(uint8_t *b)
{
    pthread_mutex_lock(&g_buffers.lock);
    if (g_buffers.n < CUPTI_SPARE_BUFFERS) {
        g_buffers.free[g_buffers.n++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&g_buffers.lock);
    free(b);
}

/* At least `want` spare buffers, touched (outside any recorded step). */
static void buffers_prepare(int want)
{
    pthread_mutex_lock(&g_buffers.lock);
    int have = g_buffers.n;
    pthread_mutex_unlock(&g_buffers.lock);
    for (; have < want; have++) {
        uint8_t *b = buffer_new();
        if (!b) return;
        buffer_keep(b);
    }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    pthread_mutex_lock(&g_buffers.lock);
    *buffer = g_buffers.n ? g_buffers.free[--g_buffers.n] : NULL;
    pthread_mutex_unlock(&g_buffers.lock);
    if (!*buffer) *buffer = buffer_new();
    *size = *buffer ? CUPTI_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext c, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    (void)c;
    (void)stream;
    (void)size;
    CUpti_Activity *a = NULL;
    pthread_mutex_lock(&G.lock);
    while (valid && cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) take(a);
    pthread_mutex_unlock(&G.lock);
    buffer_keep(buffer);
}

static fmlp_status cupti_fail(CUptiResult r, const char *what)
{
    const char *msg = "";
    cuptiGetResultString(r, &msg);
    return fmlp_fail(FMLP_ERR_DEVICE, "CUPTI %s failed: %s; GPU activity cannot be recorded", what, msg);
}

static void clear_collected(void)
{
    for (size_t i = 0; i < G.n_names; i++) free(G.names[i]);
    G.n_names = 0;
    G.n = 0;
    G.n_ext = 0;
    G.n_threads = 0;
}

/* The bit of the context's device in G.owners; 0 when past the limit. */
static uint64_t owner_bit(fmlp_ctx *ctx)
{
    const int d = fmlp_cu_state_of(ctx)->device;
    return d >= 0 && d < CUPTI_MAX_DEVICES ? (uint64_t)1 << d : 0;
}

static fmlp_status cupti_on(void)
{
    pthread_mutex_lock(&G.lock);
    clear_collected();
    pthread_mutex_unlock(&G.lock);
    buffers_prepare(2);
    CUptiResult r = cuptiActivityRegisterTimestampCallback(now_cb);
    if (r != CUPTI_SUCCESS) return cupti_fail(r, "timestamp callback");
    r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) return cupti_fail(r, "buffer callbacks");
    for (size_t i = 0; i < N_KINDS; i++) {
        r = cuptiActivityEnable(KINDS[i]);
        if (r != CUPTI_SUCCESS) {
            for (size_t j = 0; j < i; j++) cuptiActivityDisable(KINDS[j]);
            return cupti_fail(r, "cuptiActivityEnable");
        }
    }
    G.active = 1;
    return FMLP_OK;
}

fmlp_status fmlp_cu_prof_start(fmlp_ctx *ctx)
{
    const uint64_t bit = owner_bit(ctx);
    if (!bit)
        return fmlp_fail(FMLP_ERR_UNSUPPORTED, "GPU activity of CUDA device %d cannot be recorded: fmlp records devices "
                         "0..%d; hide the others with CUDA_VISIBLE_DEVICES",
                         fmlp_cu_state_of(ctx)->device, CUPTI_MAX_DEVICES - 1);
    pthread_mutex_lock(&G.owners_lock);
    fmlp_status s = FMLP_OK;
    if (G.owners & bit)
        s = fmlp_fail(FMLP_ERR_UNSUPPORTED, "GPU activity of CUDA device %d is already being recorded by another "
                      "profiler; stop it first",
                      fmlp_cu_state_of(ctx)->device);
    else if (!G.owners)
        s = cupti_on();
    if (s == FMLP_OK) G.owners |= bit;
    pthread_mutex_unlock(&G.owners_lock);
    return s;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* G.ext sorted by CUPTI correlation id (its first member). */
static int64_t ext_of(uint32_t corr)
{
    size_t lo = 0, hi = G.n_ext;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (G.ext[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < G.n_ext && G.ext[lo].corr == corr ? (int64_t)G.ext[lo].ext : 0;
}

static int cmp_ext(const void *a, const void *b) { return cmp_u32(a, b); }

static const char *api_name(const cr_rec *r, char *buf, size_t len)
{
    const char *n = NULL;
    cuptiGetCallbackName(r->kind == CR_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, r->cbid, &n);
    snprintf(buf, len, "%s", n ? n : "cudaApi");
    char *v = strstr(buf, "_v");
    if (v && v[2] >= '0' && v[2] <= '9') *v = 0;
    return buf;
}

static bool api_worth_showing(const char *n)
{
    static const char *keep[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMalloc",
                                 "cudaFree", "cudaMemcpy", "cudaGraphLaunch", "cudaStreamBeginCapture",
                                 "cudaStreamEndCapture", "cudaGraphInstantiate"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (strncmp(n, keep[i], strlen(keep[i])) == 0) return true;
    return false;
}

static const char *memory_kind_name(uint8_t kind)
{
    static const char *const names[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                        "Array",   "Managed",  "Device Static", "Managed Static"};
    return kind < sizeof names / sizeof *names ? names[kind] : "Unknown";
}

/* Kineto's names, which say whether host memory was pageable or pinned:
 * "Memcpy HtoD (Pageable -> Device)", "Memset (Device)". */
static const char *copy_name(const cr_rec *r, char *buf, size_t len)
{
    if (r->kind == CR_MEMSET) {
        snprintf(buf, len, "Memset (%s)", memory_kind_name(r->dst_kind));
        return buf;
    }
    const char *dir = "Memcpy";
    switch (r->cbid) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: dir = "HtoD"; break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: dir = "DtoH"; break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: dir = "DtoD"; break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: dir = "HtoH"; break;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: dir = "PtoP"; break;
    default: break;
    }
    snprintf(buf, len, "Memcpy %s (%s -> %s)", dir, memory_kind_name(r->src_kind), memory_kind_name(r->dst_kind));
    return buf;
}

/* The correlations of `dev`'s GPU records and of all runtime calls,
 * sorted; false when out of memory. */
static bool correlations(int dev, uint32_t **gpu, size_t *n_gpu, uint32_t **rt, size_t *n_rt)
{
    *gpu = fmlp_malloc((G.n ? G.n : 1) * sizeof **gpu);
    *rt = fmlp_malloc((G.n ? G.n : 1) * sizeof **rt);
    *n_gpu = *n_rt = 0;
    if (!*gpu || !*rt) {
        free(*gpu);
        free(*rt);
        return false;
    }
    for (size_t i = 0; i < G.n; i++) {
        const cr_rec *c = &G.recs[i];
        if ((c->kind == CR_KERNEL || c->kind == CR_MEMCPY || c->kind == CR_MEMSET) && (int)c->device == dev)
            (*gpu)[(*n_gpu)++] = c->corr;
        if (c->kind == CR_RUNTIME) (*rt)[(*n_rt)++] = c->corr;
    }
    qsort(*gpu, *n_gpu, sizeof **gpu, cmp_u32);
    qsort(*rt, *n_rt, sizeof **rt, cmp_u32);
    return true;
}

/* The record as the profiler takes it; false for a call not worth a span
 * (launched nothing, or a driver call inside a runtime call sharing its
 * correlation). */
static bool as_record(const cr_rec *c, bool launched, const uint32_t *rt, size_t n_rt, fmlp_prof_record *r, char *nbuf,
                      size_t nlen)
{
    memset(r, 0, sizeof *r);
    r->t0_ns = (int64_t)c->t0;
    r->t1_ns = (int64_t)c->t1;
    r->correlation = c->corr;
    r->external_id = ext_of(c->corr);
    switch (c->kind) {
    case CR_KERNEL:
        r->kind = FMLP_REC_KERNEL;
        r->name = c->name;
        r->device = (int)c->device;
        r->lane = c->stream;
        memcpy(r->grid, c->grid, sizeof r->grid);
        memcpy(r->block, c->block, sizeof r->block);
        r->registers = c->regs;
        r->shared_bytes = c->smem;
        return true;
    case CR_MEMCPY:
    case CR_MEMSET:
        r->kind = c->kind == CR_MEMCPY ? FMLP_REC_MEMCPY : FMLP_REC_MEMSET;
        r->name = copy_name(c, nbuf, nlen);
        r->device = (int)c->device;
        r->lane = c->stream;
        r->bytes = (int64_t)c->bytes;
        return true;
    default:
        r->kind = FMLP_REC_RUNTIME;
        r->name = api_name(c, nbuf, nlen);
        if (!launched && (c->kind == CR_DRIVER || !api_worth_showing(r->name))) return false;
        /* One call per correlation: a driver call made inside a runtime
         * call that shares its id is the runtime call's. */
        if (c->kind == CR_DRIVER && bsearch(&c->corr, rt, n_rt, sizeof *rt, cmp_u32)) return false;
        r->device = -1;
        r->lane = c->tid;
        for (int t = 0; t < G.n_threads; t++)
            if (G.threads[t].cupti_tid == c->tid) r->lane = G.threads[t].tid;
        return true;
    }
}

/* Hands `prof` (NULL: drops) the records of device `dev` and the calls
 * that launched them; what is taken leaves G. Calls that launched nothing
 * (synchronizations, allocations) cannot be told apart by device: they
 * stay for the last profiler to stop unless `idle_calls_too` takes them.
 * Called with G.lock held. */
static void take_records(struct fmlp_profiler *prof, int dev, bool idle_calls_too)
{
    uint32_t *gpu, *rt;
    size_t n_gpu, n_rt;
    const bool lists = correlations(dev, &gpu, &n_gpu, &rt, &n_rt);
    if (G.n_ext) qsort(G.ext, G.n_ext, sizeof *G.ext, cmp_ext);
    for (size_t i = 0; i < G.n; i++) {
        cr_rec *c = &G.recs[i];
        const bool on_gpu = c->kind == CR_KERNEL || c->kind == CR_MEMCPY || c->kind == CR_MEMSET;
        const bool launched = lists && bsearch(&c->corr, gpu, n_gpu, sizeof *gpu, cmp_u32);
        const bool mine = on_gpu ? (int)c->device == dev : launched || idle_calls_too;
        if (!mine) continue;
        fmlp_prof_record r;
        char nbuf[128];
        if (prof && as_record(c, launched, lists ? rt : NULL, lists ? n_rt : 0, &r, nbuf, sizeof nbuf))
            fmlp_prof_record_add(prof, &r);
        c->kind = CR_TAKEN;
    }
    if (lists) {
        free(gpu);
        free(rt);
    }
    size_t kept = 0;
    for (size_t i = 0; i < G.n; i++)
        if (G.recs[i].kind != CR_TAKEN) G.recs[kept++] = G.recs[i];
    G.n = kept;
}

fmlp_status fmlp_cu_prof_discard(fmlp_ctx *ctx)
{
    const uint64_t bit = owner_bit(ctx);
    pthread_mutex_lock(&G.owners_lock);
    if (!(G.owners & bit)) {
        pthread_mutex_unlock(&G.owners_lock);
        return FMLP_OK;
    }
    if (fmlp_cu_synchronize(ctx) != FMLP_OK) fmlp_clear_error();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&G.lock);
    if (G.owners == bit)
        clear_collected();
    else
        take_records(NULL, fmlp_cu_state_of(ctx)->device, true);
    pthread_mutex_unlock(&G.lock);
    pthread_mutex_unlock(&G.owners_lock);
    return FMLP_OK;
}

fmlp_status fmlp_cu_prof_stop(fmlp_ctx *ctx, struct fmlp_profiler *prof)
{
    const uint64_t bit = owner_bit(ctx);
    pthread_mutex_lock(&G.owners_lock);
    if (!(G.owners & bit)) {
        pthread_mutex_unlock(&G.owners_lock);
        return FMLP_OK;
    }
    const bool last = G.owners == bit;
    G.owners &= ~bit;
    if (fmlp_cu_synchronize(ctx) != FMLP_OK) fmlp_clear_error();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (last) {
        for (size_t i = 0; i < N_KINDS; i++) cuptiActivityDisable(KINDS[i]);
        G.active = 0;
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        cuptiFinalize();
    }
    pthread_mutex_lock(&G.lock);
    /* the last takes the calls no device claims; what other GPUs ran after
     * their profilers stopped goes with the rest */
    take_records(prof, fmlp_cu_state_of(ctx)->device, last);
    if (last) clear_collected();
    pthread_mutex_unlock(&G.lock);
    pthread_mutex_unlock(&G.owners_lock);
    return FMLP_OK;
}
