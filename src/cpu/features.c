/* Why: which SIMD paths this CPU and OS can run, read once. AMX needs more
 * than CPUID: Linux only hands out the tile state after
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA). */
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

static const char *const path_names[CPU_PATH_COUNT] = {"scalar", "avx2", "avx512", "avx512bf16", "amx"};

const char *cpu_path_name(cpu_path p) { return p >= 0 && p < CPU_PATH_COUNT ? path_names[p] : "?"; }

bool cpu_path_parse(const char *s, cpu_path *out)
{
    for (int i = 0; i < CPU_PATH_COUNT; i++) {
        if (s && strcmp(s, path_names[i]) == 0) {
            *out = (cpu_path)i;
            return true;
        }
    }
    return false;
}

bool cpu_path_available(cpu_path p, const char **why)
{
    const cpu_features *f = cpu_features_get();
    const char *missing = NULL;
    switch (p) {
    case CPU_PATH_SCALAR: break;
    case CPU_PATH_AVX2:
        if (!f->avx2 || !f->fma) missing = "this CPU lacks AVX2/FMA";
        break;
    case CPU_PATH_AVX512:
        if (!(f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq)) missing = "this CPU lacks AVX-512 F/BW/VL/DQ";
        break;
    case CPU_PATH_AVX512BF16:
        if (!(f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq)) missing = "this CPU lacks AVX-512 F/BW/VL/DQ";
        else if (!f->avx512bf16) missing = "this CPU lacks AVX512_BF16";
        break;
    case CPU_PATH_AMX:
        if (!f->amx_tile || !f->amx_bf16) missing = "this CPU lacks AMX-BF16";
        else if (!(f->avx512f && f->avx512bw && f->avx512bf16)) missing = "this CPU lacks AVX-512 BF16";
        else if (!f->amx_granted) missing = "the OS refused AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)";
        break;
    default: missing = "no such path";
    }
    if (why) *why = missing ? missing : "";
    return missing == NULL;
}

cpu_path cpu_path_best(void)
{
    for (int p = CPU_PATH_COUNT - 1; p > 0; p--)
        if (cpu_path_available((cpu_path)p, NULL)) return (cpu_path)p;
    return CPU_PATH_SCALAR;
}

cpu_path cpu_path_for_dtype(cpu_path p, fmlp_dtype dtype)
{
    if (dtype != FMLP_BF16 && (p == CPU_PATH_AVX512BF16 || p == CPU_PATH_AMX)) return CPU_PATH_AVX512;
    return p;
}
