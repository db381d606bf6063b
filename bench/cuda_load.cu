/*
 * cuda_load.cu: loading a model onto a GPU, two ways side by side, cold and warm
 * page cache:
 *
 *   staged   gguf_read_tensors (direct I/O) into pinned host memory (cudaHostAlloc), in batches
 *            of about 256 MiB, each uploaded with cudaMemcpyAsync while the next is read
 *   mmap     cudaMemcpy of every tensor straight from a fresh mapping (gguf_open,
 *            gguf_tensor_data): pageable memory, which the driver stages itself
 *
 * Cold rounds evict the file's pages first (posix_fadvise DONTNEED). Prints min and median GB/s
 * (1e9 bytes of tensor data per second, from the first read to the last byte on the device) and
 * checks that the device holds the file's bytes.
 *
 * Build (from the repository root, after `cargo build --release --lib`):
 *   nvcc -O2 bench/cuda_load.cu -Iinclude -Ltarget/release -lgguf -o target/bench/cuda_load
 * Run:
 *   LD_LIBRARY_PATH=target/release target/bench/cuda_load [-r ROUNDS] [-t THREADS] MODEL.gguf
 * It needs host memory (pinned) and device memory of the size of the model's data section.
 * A model to try: bench/load_bench.c writes one (`bench/load_run.sh` with KEEP_MODEL=1), or any
 * real GGUF model.
 */
#include "gguf.h"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#define CUDA(call)                                                                             \
    do {                                                                                       \
        cudaError_t err_ = (call);                                                             \
        if (err_ != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                      \
                    cudaGetErrorString(err_));                                                 \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static double now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "cuda_load: %s: %s\n", what, gguf_last_error());
    exit(1);
}

static void evict(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) {
        fprintf(stderr, "cuda_load: cannot evict %s\n", path);
        exit(1);
    }
    close(fd);
}

struct Model {
    GGUFFile f;
    std::vector<const GGUFTensorInfo *> infos;
    uint64_t base = 0, span = 0, total = 0;
};

/* Tensors laid out in the buffers as in the file, from the data section's page-aligned start
 * (so that direct reads land in place). */
static uint64_t where(const Model &m, const GGUFTensorInfo *info) {
    return info->file_offset - m.base;
}

static void staged(const Model &m, unsigned char *pinned, unsigned char *dev, uint32_t threads,
                   cudaStream_t stream) {
    const uint64_t batch_bytes = 256ull << 20;
    size_t k = 0;
    while (k < m.infos.size()) {
        size_t first = k;
        uint64_t bytes = 0;
        std::vector<void *> dsts;
        while (k < m.infos.size() && (bytes < batch_bytes || k == first)) {
            dsts.push_back(pinned + where(m, m.infos[k]));
            bytes += m.infos[k]->size_bytes;
            k++;
        }
        if (!gguf_read_tensors(m.f, &m.infos[first], dsts.data(), k - first, threads,
                               GGUF_READ_FLAG_DIRECT, NULL, NULL))
            die("gguf_read_tensors");
        /* The batch's bytes are contiguous in the layout, from its first tensor to its last. */
        uint64_t from = where(m, m.infos[first]);
        uint64_t to = where(m, m.infos[k - 1]) + m.infos[k - 1]->size_bytes;
        CUDA(cudaMemcpyAsync(dev + from, pinned + from, to - from, cudaMemcpyHostToDevice, stream));
    }
    CUDA(cudaStreamSynchronize(stream));
}

static void from_mapping(const Model &m, const char *path, unsigned char *dev) {
    GGUFFile f = gguf_open(path); /* a fresh mapping each time */
    if (!f) die("gguf_open");
    for (const GGUFTensorInfo *info : m.infos) {
        const GGUFTensorInfo *t = gguf_get_tensor_by_index(f, info->index);
        CUDA(cudaMemcpy(dev + where(m, t), gguf_tensor_data(f, t), t->size_bytes,
                        cudaMemcpyHostToDevice));
    }
    CUDA(cudaDeviceSynchronize());
    gguf_close(f);
}

int main(int argc, char **argv) {
    int rounds = 5, opt;
    uint32_t threads = 0;
    while ((opt = getopt(argc, argv, "r:t:")) != -1) {
        if (opt == 'r') rounds = atoi(optarg);
        else if (opt == 't') threads = (uint32_t)atoi(optarg);
        else return 2;
    }
    if (optind + 1 != argc || rounds < 1) {
        fprintf(stderr, "usage: cuda_load [-r ROUNDS] [-t THREADS] MODEL.gguf\n");
        return 2;
    }
    const char *path = argv[optind];
    Model m;
    m.f = gguf_open(path);
    if (!m.f) die("gguf_open");
    m.base = gguf_data_offset(m.f) / 4096 * 4096;
    uint64_t end = 0;
    for (uint64_t k = 0; k < gguf_tensor_count(m.f); k++) {
        const GGUFTensorInfo *info = gguf_get_tensor_by_index(m.f, k);
        m.infos.push_back(info);
        m.total += info->size_bytes;
        end = std::max(end, info->file_offset + info->size_bytes);
    }
    /* gguf_read_tensors merges reads of neighbours: give it the tensors in file order. */
    std::sort(m.infos.begin(), m.infos.end(),
              [](const GGUFTensorInfo *a, const GGUFTensorInfo *b) {
                  return a->file_offset < b->file_offset;
              });
    m.span = end - m.base;
    unsigned char *pinned = NULL, *dev = NULL;
    CUDA(cudaHostAlloc((void **)&pinned, m.span, cudaHostAllocDefault));
    CUDA(cudaMalloc((void **)&dev, m.span));
    cudaStream_t stream;
    CUDA(cudaStreamCreate(&stream));
    cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, 0));
    printf("model: %s, %zu tensors, %.3f GB of tensor data; GPU %s; %d rounds\n", path,
           m.infos.size(), (double)m.total / 1e9, prop.name, rounds);
    for (int warm = 0; warm <= 1; warm++) {
        std::vector<double> a, b;
        if (warm) staged(m, pinned, dev, threads, stream), from_mapping(m, path, dev);
        for (int r = 0; r < rounds; r++) {
            if (!warm) evict(path);
            double t0 = now();
            staged(m, pinned, dev, threads, stream);
            a.push_back(now() - t0);
            if (!warm) evict(path);
            t0 = now();
            from_mapping(m, path, dev);
            b.push_back(now() - t0);
        }
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        double gb = (double)m.total / 1e9;
        printf("%s cache: staged (gguf_read_tensors direct + cudaMemcpyAsync) min %.2f median %.2f "
               "GB/s; cudaMemcpy from mmap min %.2f median %.2f GB/s; median ratio %.2f\n",
               warm ? "warm" : "cold", gb / a.back(), gb / a[a.size() / 2], gb / b.back(),
               gb / b[b.size() / 2], b[b.size() / 2] / a[a.size() / 2]);
    }
    /* The device holds the file's bytes (checked on a sample of tensors). */
    for (size_t k = 0; k < m.infos.size(); k += 13) {
        const GGUFTensorInfo *info = m.infos[k];
        std::vector<unsigned char> back(info->size_bytes);
        CUDA(cudaMemcpy(back.data(), dev + where(m, info), info->size_bytes, cudaMemcpyDeviceToHost));
        if (memcmp(back.data(), gguf_tensor_data(m.f, info), info->size_bytes) != 0) {
            fprintf(stderr, "cuda_load: tensor %zu differs on the device\n", k);
            return 1;
        }
    }
    CUDA(cudaStreamDestroy(stream));
    CUDA(cudaFree(dev));
    CUDA(cudaFreeHost(pinned));
    gguf_close(m.f);
    return 0;
}
