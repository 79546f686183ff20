/* Why: see idx_sort.h. Bottom-up merge sort over insertion-sorted blocks;
 * two neighbouring runs already in order are not merged at all, which is
 * what makes sorted input cost one comparison per block boundary. */
#include "core/idx_sort.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

enum { BLOCK = 32 };

static void insertion(uint32_t *v, size_t n, idx_cmp cmp, const void *ctx)
{
    for (size_t i = 1; i < n; i++) {
        uint32_t x = v[i];
        size_t j = i;
        while (j > 0 && cmp(ctx, v[j - 1], x) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

bool idx_sort(uint32_t *v, size_t n, idx_cmp cmp, const void *ctx)
{
    if (n <= BLOCK) {
        insertion(v, n, cmp, ctx);
        return true;
    }
    uint32_t *tmp = fmlp_malloc(n * sizeof *tmp);
    if (!tmp) return false;
    for (size_t i = 0; i < n; i += BLOCK) insertion(v + i, n - i < BLOCK ? n - i : BLOCK, cmp, ctx);
    for (size_t w = BLOCK; w < n; w *= 2) {
        for (size_t lo = 0; lo + w < n; lo += 2 * w) {
            size_t mid = lo + w, hi = n - mid < w ? n : mid + w;
            if (cmp(ctx, v[mid - 1], v[mid]) <= 0) continue;
            memcpy(tmp, v + lo, w * sizeof *tmp);
            size_t a = 0, b = mid, o = lo;
            while (a < w && b < hi) v[o++] = cmp(ctx, tmp[a], v[b]) <= 0 ? tmp[a++] : v[b++];
            while (a < w) v[o++] = tmp[a++];
        }
        if (w > n / 2) break; /* the next width would overflow nothing but time */
    }
    free(tmp);
    return true;
}
