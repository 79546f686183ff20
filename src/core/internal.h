/* Why: the context and MLP structs are opaque to users but shared by the
 * model, plan, executor and backends; their layout lives here. */
#ifndef FMLP_CORE_INTERNAL_H
#define FMLP_CORE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "core/backend.h"
#include "fmlp.h"

struct fmlp_profiler;

/* A cached workspace buffer, reused across forwards so steady state
 * allocates nothing. */
typedef struct fmlp_ws_block {
    void *data;
    size_t bytes;
    struct fmlp_ws_block *next;
} fmlp_ws_block;

/* One measured AUTO decision: an MLP shape and a row bucket (plan/auto.c). */
#define FMLP_AUTO_MEMO 64
typedef struct {
    fmlp_block block;
    fmlp_act act;
    fmlp_dtype dtype;
    int64_t dim, hidden, out_dim, bucket;
    int layers;
    bool bias;
    fmlp_mode mode;
    char why[128];
} fmlp_auto_choice;

struct fmlp_ctx {
    fmlp_device device;
    int device_index;
    const fmlp_backend *be;
    void *be_state; /* backend private */
    /* Non-NULL only while a profiler records: the executor's one branch.
     * Read and written atomically; code that records takes it with
     * fmlp_prof_hold (profiler/hook.h), which keeps it from being freed. */
    struct fmlp_profiler *prof;
    unsigned prof_epoch;       /* the hold slot new holders count in (its low bit) */
    int prof_holders[2];       /* holders per slot */
    pthread_mutex_t prof_sync; /* one profiler waiting for holders at a time */
    /* The caller's reference plus one per MLP and profiler made on the
     * context (atomic): the last to go frees it. */
    int refs;
    pthread_mutex_t ws_lock;
    fmlp_ws_block *ws_free;
    int64_t ws_live; /* bytes of workspace held by running forwards */
    /* The machine's ceilings, held once read or measured (src/machine/
     * fills them; only its lock is core's to create and destroy). */
    pthread_mutex_t machine_lock;
    /* AUTO decided by measurement (the backend's auto_measured, or
     * FMLP_AUTO_MEASURE=0/1), and what was measured. */
    bool auto_measure;
    pthread_mutex_t auto_lock;
    fmlp_auto_choice auto_memo[FMLP_AUTO_MEMO];
    int n_auto;
    bool ceilings_loaded;
    fmlp_ceilings ceilings;
};

/* One Linear layer: PyTorch's (out_features n, in_features k) weight and
 * optional bias, stored on the host in the MLP's dtype, plus its packings. */
typedef struct {
    char wname[64], bname[64];
    int64_t n, k;
    void *w; /* (n, k) row-major; NULL until fmlp_mlp_materialize */
    void *b; /* (n) or NULL */
    void *packed;
} fmlp_layer;

/* A plan cached for one (mode, rows); plan/cache.c fills and lends these,
 * fmlp_mlp_drop_plans frees them when the weights change. */
#define FMLP_PLAN_SLOTS 16
typedef struct {
    void *plan; /* a malloc'd fmlp_plan, or NULL */
    fmlp_mode mode;
    int64_t rows;
    int refs;   /* forwards using it now */
    uint64_t last_use;
} fmlp_plan_slot;

struct fmlp_mlp {
    fmlp_ctx *ctx;
    fmlp_mlp_desc desc;
    int n_layers;
    fmlp_layer layers[FMLP_MAX_LAYERS]; /* GATED: 0 gate, 1 up, 2 down */
    void *packed_glu;                   /* GATED: gate and up together */
    bool graph;
    uint64_t seed;  /* the weights are drawn from it when first needed */
    int weights_ok; /* __atomic access: layers[].w and .b exist */
    pthread_mutex_t pack_lock;
    int packed_ok; /* __atomic access: packings match the weights */
    pthread_mutex_t plan_lock; /* guards the slots below */
    fmlp_plan_slot plans[FMLP_PLAN_SLOTS];
    uint64_t plan_clock;
};

/* A reference to the context, for each MLP and profiler made on it; the
 * last fmlp_ctx_unref (fmlp_ctx_destroy is the caller's) frees it. */
void fmlp_ctx_ref(fmlp_ctx *ctx);
void fmlp_ctx_unref(fmlp_ctx *ctx);

/* Workspace for one forward: take at least `bytes`, give it back after. */
fmlp_status fmlp_ws_take(fmlp_ctx *ctx, size_t bytes, fmlp_ws_block **out);
void fmlp_ws_give(fmlp_ctx *ctx, fmlp_ws_block *b);

/* Host allocation, 64-byte aligned, zero bytes allowed; free with free(). */
void *fmlp_host_alloc(size_t bytes);

/* Checks a tensor handed in as `what` ("x", "copy destination"): a known
 * dtype and device, data unless it is empty, rows and cols >= 0, ld >= cols,
 * and an extent ((rows - 1) * ld + cols elements) whose bytes fit int64,
 * returned in *extent_bytes (0 when empty; NULL: not wanted). */
fmlp_status fmlp_tensor_check(const char *what, const fmlp_tensor *t, int64_t *extent_bytes);

#endif
