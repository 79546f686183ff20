/* Why: the limits of limits.h, measured with nothing of fmlp in the way:
 * graphs of empty kernels for the cost of a replay, and a streaming read
 * whose every word feeds a sum that is written out and checked against the
 * host's, so no load can be dropped and the byte count cannot be wrong. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "limits.h"
#include "word_sums.cuh"
extern "C" {
#include "core/clock.h"
}

#define THREADS READ_SUM_THREADS
#define REPLAYS 2000
#define READS 200

__global__ void empty_kernel(void) {}

typedef struct {
    cudaStream_t stream;
    cudaGraphExec_t graph[2]; /* one empty kernel; two */
    unsigned char *slab;      /* the copies of the weight bytes, `pitch` bytes apart */
    size_t pitch, n16;        /* a copy: n16 16-byte vectors, then n_tail halves */
    int n_tail, blocks;
    uint32_t *sums; /* (blocks) */
    uint32_t *host_sums;
    unsigned char *host_copy;
} res_t;

static bool ok(cudaError_t e, const char *what, char *err, size_t err_len)
{
    if (e == cudaSuccess) return true;
    snprintf(err, err_len, "%s: %s", what, cudaGetErrorString(e));
    return false;
}

static void read_copy(const res_t *r, int c)
{
    read_sum<<<r->blocks, THREADS, 0, r->stream>>>((const uint4 *)(r->slab + (size_t)c * r->pitch), r->n16, r->n_tail,
                                                   r->sums);
}

static bool graph_of(cudaStream_t s, int kernels, cudaGraphExec_t *out, char *err, size_t err_len)
{
    cudaGraph_t g = NULL;
    if (!ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture", err, err_len))
        return false;
    for (int k = 0; k < kernels; k++) empty_kernel<<<1, 1, 0, s>>>();
    bool good = ok(cudaStreamEndCapture(s, &g), "capturing the empty kernels", err, err_len) &&
                ok(cudaGraphInstantiate(out, g, 0), "cudaGraphInstantiate", err, err_len);
    if (g) cudaGraphDestroy(g);
    return good;
}

/* *us: the wall time per operation of `iters` operations, best of 3, after
 * a warm-up (100 replays, or three passes over the copies). An operation
 * replays `graph`, or, where it is NULL, reads copy i % copies. */
static bool time_ops(const res_t *r, cudaGraphExec_t graph, int copies, int iters, double *us, char *err,
                     size_t err_len)
{
    *us = 1e30;
    for (int rep = -1; rep < 3; rep++) {
        const int n = rep < 0 ? (graph ? 100 : 3 * copies) : iters;
        cudaError_t launched = cudaSuccess;
        const int64_t t0 = fmlp_now_ns();
        for (int i = 0; i < n; i++) {
            if (graph) {
                const cudaError_t e = cudaGraphLaunch(graph, r->stream);
                if (launched == cudaSuccess) launched = e;
            } else {
                read_copy(r, i % copies);
            }
        }
        if (!graph) launched = cudaGetLastError();
        if (!ok(launched, graph ? "cudaGraphLaunch" : "launching the read kernel", err, err_len) ||
            !ok(cudaStreamSynchronize(r->stream), graph ? "replaying a graph" : "running the read kernel", err,
                err_len))
            return false;
        const double t = (double)(fmlp_now_ns() - t0) / 1e3 / n;
        if (rep >= 0 && t < *us) *us = t;
    }
    return true;
}

/* Reads copy 0 once more and compares the blocks' sums with the host's sum
 * of the same bytes. */
static bool check_read(res_t *r, int64_t bytes, char *err, size_t err_len)
{
    r->host_copy = (unsigned char *)malloc((size_t)bytes);
    r->host_sums = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)r->blocks);
    if (!r->host_copy || !r->host_sums) {
        snprintf(err, err_len, "no host memory for the %lld-byte check of the read kernel", (long long)bytes);
        return false;
    }
    read_copy(r, 0);
    if (!ok(cudaGetLastError(), "launching the read kernel", err, err_len) ||
        !ok(cudaMemcpyAsync(r->host_sums, r->sums, sizeof(uint32_t) * (size_t)r->blocks, cudaMemcpyDeviceToHost,
                            r->stream),
            "copying the read kernel's sums", err, err_len) ||
        !ok(cudaMemcpyAsync(r->host_copy, r->slab, (size_t)bytes, cudaMemcpyDeviceToHost, r->stream),
            "copying the weight bytes back", err, err_len) ||
        !ok(cudaStreamSynchronize(r->stream), "running the read kernel", err, err_len))
        return false;
    uint32_t device_sum = 0, host_sum = 0;
    for (int b = 0; b < r->blocks; b++) device_sum += r->host_sums[b];
    for (size_t i = 0; i < r->n16 * 4; i++) {
        uint32_t v;
        memcpy(&v, r->host_copy + 4 * i, 4);
        host_sum += v;
    }
    for (int t = 0; t < r->n_tail; t++) {
        uint16_t v;
        memcpy(&v, r->host_copy + 16 * r->n16 + 2 * (size_t)t, 2);
        host_sum += v;
    }
    if (device_sum != host_sum) {
        snprintf(err, err_len,
                 "the read kernel's sum 0x%08x of %lld bytes is not the host's 0x%08x: it skipped or repeated data",
                 device_sum, (long long)bytes, host_sum);
        return false;
    }
    return true;
}

static bool measure(int device, int64_t bytes, int copies, bench_limits *out, res_t *r, char *err, size_t err_len)
{
    cudaDeviceProp prop;
    if (!ok(cudaSetDevice(device), "cudaSetDevice", err, err_len) ||
        !ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", err, err_len) ||
        !ok(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking), "cudaStreamCreate", err, err_len) ||
        !graph_of(r->stream, 1, &r->graph[0], err, err_len) || !graph_of(r->stream, 2, &r->graph[1], err, err_len))
        return false;
    snprintf(out->device, sizeof out->device, "%s", prop.name);
    r->n16 = (size_t)bytes / 16;
    r->n_tail = (int)((size_t)bytes % 16 / 2);
    r->pitch = ((size_t)bytes + 255) / 256 * 256;
    const size_t slab = r->pitch * (size_t)copies;
    if (!ok(cudaMalloc((void **)&r->slab, slab), "cudaMalloc", err, err_len)) {
        const size_t used = strlen(err);
        snprintf(err + used, err_len - used,
                 " (%zu bytes for %d copies of the weights; run with --no-limits to leave the limits out)", slab, copies);
        return false;
    }
    /* a full wave of blocks, fewer where the bytes do not need them */
    const size_t wave = (size_t)prop.multiProcessorCount * (size_t)(prop.maxThreadsPerMultiProcessor / THREADS);
    const size_t needed = r->n16 / THREADS + 1;
    r->blocks = (int)(needed < wave ? needed : wave);
    if (!ok(cudaMalloc((void **)&r->sums, sizeof(uint32_t) * (size_t)r->blocks), "cudaMalloc of the sums", err,
            err_len))
        return false;
    fill_words<<<(unsigned)wave, THREADS, 0, r->stream>>>((uint32_t *)r->slab, slab / 4);
    if (!ok(cudaGetLastError(), "launching the fill kernel", err, err_len) || !check_read(r, bytes, err, err_len) ||
        !time_ops(r, r->graph[0], 1, REPLAYS, &out->replay_one_us, err, err_len) ||
        !time_ops(r, r->graph[1], 1, REPLAYS, &out->replay_two_us, err, err_len))
        return false;
    for (int cold = 0; cold < 2; cold++) {
        out->copies[cold] = cold ? copies : 1;
        if (!time_ops(r, NULL, out->copies[cold], READS, &out->read_us[cold], err, err_len)) return false;
        out->read_gbps[cold] = (double)bytes / out->read_us[cold] / 1e3;
    }
    return true;
}

extern "C" int bench_limits_measure(int device, int64_t bytes, int copies, bench_limits *out, char *err, size_t err_len)
{
    if (bytes <= 0 || bytes % 2 || copies < 1) {
        snprintf(err, err_len, "%lld bytes in %d copies: the limits need a positive, even byte count and a copy",
                 (long long)bytes, copies);
        return -1;
    }
    memset(out, 0, sizeof *out);
    res_t r;
    memset(&r, 0, sizeof r);
    const bool good = measure(device, bytes, copies, out, &r, err, err_len);
    for (int k = 0; k < 2; k++)
        if (r.graph[k]) cudaGraphExecDestroy(r.graph[k]);
    cudaFree(r.slab);
    cudaFree(r.sums);
    if (r.stream) cudaStreamDestroy(r.stream);
    free(r.host_copy);
    free(r.host_sums);
    return good ? 0 : -1;
}
