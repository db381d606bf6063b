/*
 * floor.h: the floor every GGUF reader stands on. It maps the file and steps over the header
 * (counts, every key, every value, every array element's length, every tensor info) and does
 * nothing else: no checks beyond staying inside the file, no allocation, no index. String
 * arrays (a vocabulary: the bulk of every header) are stepped over in a tight loop of one length
 * load and one add per string, so no reader can open a file in less time than this walk takes.
 *
 * floor_walk returns the mapping and floor_release unmaps it, so that a benchmark can leave the
 * munmap outside its timed region, as it leaves the other readers' close/free.
 */
#ifndef LIBGGUF_BENCH_FLOOR_H
#define LIBGGUF_BENCH_FLOOR_H

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct floor_cursor {
    const unsigned char *p, *end;
};

static inline uint64_t floor_u64(struct floor_cursor *c) {
    uint64_t v = 0;
    if (c->end - c->p >= 8) memcpy(&v, c->p, 8);
    c->p += 8;
    return v;
}

static inline uint32_t floor_u32(struct floor_cursor *c) {
    uint32_t v = 0;
    if (c->end - c->p >= 4) memcpy(&v, c->p, 4);
    c->p += 4;
    return v;
}

static inline void floor_skip_string(struct floor_cursor *c) {
    uint64_t len = floor_u64(c);
    c->p += len;
}

static const unsigned floor_fixed_size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static void floor_skip_value(struct floor_cursor *c, uint32_t type) {
    if (c->p > c->end) return;
    if (type == 8) {
        floor_skip_string(c);
    } else if (type == 9) {
        uint32_t elem = floor_u32(c);
        uint64_t n = floor_u64(c);
        if (elem < 13 && floor_fixed_size[elem]) {
            c->p += n * floor_fixed_size[elem];
        } else if (elem == 8) {
            /* The loop that dominates: a vocabulary's strings, one length load and add each. */
            const unsigned char *p = c->p;
            for (uint64_t i = 0; i < n && c->end - p >= 8; i++) {
                uint64_t len;
                memcpy(&len, p, 8);
                p += 8 + len;
            }
            c->p = p;
        } else {
            for (uint64_t i = 0; i < n && c->p <= c->end; i++) floor_skip_value(c, elem);
        }
    } else if (type < 13) {
        c->p += floor_fixed_size[type];
    }
}

/* A mapping made by floor_walk; release it with floor_release (outside any timed region). */
struct floor_map {
    void *map;      /* NULL if the file could not be opened or mapped */
    size_t size;
    uint64_t end;   /* offset where the tensor infos end */
};

/* Maps `path` and walks its header; `end` is where the tensor infos end. The mapping stays
 * until floor_release, so a benchmark can time the walk without the munmap. */
static struct floor_map floor_walk(const char *path) {
    struct floor_map m = {NULL, 0, 0};
    int fd = open(path, O_RDONLY);
    if (fd < 0) return m;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return m;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return m;
    struct floor_cursor c = {map, (const unsigned char *)map + st.st_size};
    c.p += 8;
    uint64_t n_tensors = floor_u64(&c), n_kv = floor_u64(&c);
    for (uint64_t i = 0; i < n_kv && c.p <= c.end; i++) {
        floor_skip_string(&c);
        floor_skip_value(&c, floor_u32(&c));
    }
    for (uint64_t i = 0; i < n_tensors && c.p <= c.end; i++) {
        floor_skip_string(&c);
        uint32_t n_dims = floor_u32(&c);
        c.p += 8 * (uint64_t)n_dims + 4 + 8;
    }
    m.map = map;
    m.size = (size_t)st.st_size;
    m.end = (uint64_t)(c.p - (const unsigned char *)map);
    return m;
}

/* Unmaps what floor_walk mapped. */
static void floor_release(struct floor_map *m) {
    if (m->map) munmap(m->map, m->size);
    m->map = NULL;
}

#endif
