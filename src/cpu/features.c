/* Why: the CPU's instruction sets and the OS's grants, read once through
 * CPUID and XGETBV. AMX needs more than CPUID: Linux only hands out the tile
 * state after arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). */
#include "cpu/features.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#endif

static cpu_features g_feat;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static unsigned long long xgetbv0(void)
{
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static bool request_amx(void)
{
    enum { ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    unsigned long bitmask = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return false;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bitmask) != 0) return false;
    return (bitmask & (1ul << XFEATURE_XTILEDATA)) != 0;
}
#endif

static void detect(void)
{
    cpu_features *f = &g_feat;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    f->cores = n > 0 ? (int)n : 1;
    snprintf(f->brand, sizeof f->brand, "unknown");
#if defined(__x86_64__)
    unsigned a, b, c, d;
    unsigned max_ext = __get_cpuid_max(0x80000000, NULL);
    if (max_ext >= 0x80000004) {
        unsigned regs[12];
        for (unsigned i = 0; i < 3; i++) __get_cpuid(0x80000002 + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
        memcpy(f->brand, regs, 48);
        f->brand[48] = 0;
        char *s = f->brand;
        while (*s == ' ') s++;
        memmove(f->brand, s, strlen(s) + 1);
        for (size_t l = strlen(f->brand); l && f->brand[l - 1] == ' '; l--) f->brand[l - 1] = 0;
    }
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1;
    unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    bool ymm_os = (xcr0 & 0x6) == 0x6, zmm_os = (xcr0 & 0xe6) == 0xe6, tile_os = (xcr0 & 0x60000) == 0x60000;
    __cpuid_count(7, 0, a, b, c, d);
    f->fma = fma && ymm_os;
    f->avx2 = ((b >> 5) & 1) && ymm_os;
    f->avx512f = ((b >> 16) & 1) && zmm_os;
    f->avx512dq = ((b >> 17) & 1) && zmm_os;
    f->avx512bw = ((b >> 30) & 1) && zmm_os;
    f->avx512vl = ((b >> 31) & 1) && zmm_os;
    f->amx_bf16 = ((d >> 22) & 1) && tile_os;
    f->amx_tile = ((d >> 24) & 1) && tile_os;
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    f->avx512bf16 = ((a1 >> 5) & 1) && zmm_os;
    if (f->amx_tile && f->amx_bf16) f->amx_granted = request_amx();
#endif
}

const cpu_features *cpu_features_get(void)
{
    pthread_once(&g_once, detect);
    return &g_feat;
}
