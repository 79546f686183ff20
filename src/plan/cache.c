/* Why: a forward must not rebuild its plan (kernel list, names, FLOP
 * counts) every call: at one row that costs as much as the kernels. Plans
 * are cached per MLP by (mode, rows) and lent to forwards, which may run
 * concurrently; a plan in use is never evicted, and when every slot is busy
 * the forward gets a plan of its own that is freed on release. The MLP
 * drops them all when its weights change (fmlp_mlp_drop_plans). */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "plan/plan.h"

/* The slot holding (mode, rows), else the one to fill: an empty slot, or
 * the least recently used plan nobody is using; NULL when all are busy. */
static fmlp_plan_slot *find_slot(fmlp_mlp *m, fmlp_mode mode, int64_t rows, bool *hit)
{
    fmlp_plan_slot *free_slot = NULL;
    *hit = false;
    for (int i = 0; i < FMLP_PLAN_SLOTS; i++) {
        fmlp_plan_slot *s = &m->plans[i];
        if (s->plan && s->mode == mode && s->rows == rows) {
            *hit = true;
            return s;
        }
        if (s->refs) continue;
        if (!free_slot || !s->plan || (free_slot->plan && s->last_use < free_slot->last_use)) free_slot = s;
    }
    return free_slot;
}

fmlp_status fmlp_plan_get(fmlp_mlp *m, fmlp_mode mode, int64_t rows, const fmlp_plan **out)
{
    *out = NULL;
    bool hit;
    pthread_mutex_lock(&m->plan_lock);
    fmlp_plan_slot *s = find_slot(m, mode, rows, &hit);
    if (hit) {
        s->refs++;
        s->last_use = ++m->plan_clock;
        *out = s->plan;
    }
    pthread_mutex_unlock(&m->plan_lock);
    if (hit) return FMLP_OK;

    fmlp_plan *p = fmlp_malloc(sizeof *p);
    if (!p) return fmlp_fail(FMLP_ERR_OUT_OF_MEMORY, "out of memory for the plan of a %lld-row forward", (long long)rows);
    fmlp_status st = fmlp_plan_build(m, mode, rows, p);
    if (st != FMLP_OK) {
        free(p);
        return st;
    }
    pthread_mutex_lock(&m->plan_lock);
    s = find_slot(m, mode, rows, &hit);
    if (s && !hit) {
        free(s->plan);
        s->plan = p;
        s->mode = mode;
        s->rows = rows;
        s->refs = 1;
        s->last_use = ++m->plan_clock;
    }
    pthread_mutex_unlock(&m->plan_lock);
    /* A plan another forward cached meanwhile, or no free slot: this one
     * stays private and fmlp_plan_release frees it. */
    *out = p;
    return FMLP_OK;
}

void fmlp_plan_release(fmlp_mlp *m, const fmlp_plan *p)
{
    if (!p) return;
    pthread_mutex_lock(&m->plan_lock);
    bool cached = false;
    for (int i = 0; i < FMLP_PLAN_SLOTS && !cached; i++) {
        if (m->plans[i].plan != p) continue;
        m->plans[i].refs--;
        cached = true;
    }
    pthread_mutex_unlock(&m->plan_lock);
    if (!cached) free((void *)p);
}
