/*
 * glucx_comm_*: communicator creation through the rendezvous store, and its lifetime.
 *
 * Each rank publishes one record under "<name>/rank/<r>": its glucx version and selection
 * settings (the digest, compared on every rank so a mixed job fails at creation, naming the rank),
 * its host identity (ranks with equal identity form a package) and its UCX worker address.
 *
 * A host that carries only a few bytes per rank publishes a compact address instead
 * (glucx_comm_compact_address): format, rank, size, the record's length and digest, and the
 * socket address of the listener that serves the record; connect fetches the records of the
 * ranks it got compact addresses for (transport/ucx_boot.c) and checks each against its digest.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "util/error.h"
#include "util/fork.h"
#include "util/time.h"
#include "util/tracepoint.h"

#define RECORD_MAGIC "GLUCXR2"
#define RECORD_FIELDS 4

/* Record: magic, then four (u32 length, bytes) fields: digest, hostid, job rank (decimal, "-1"
 * when unknown), address. */
static glucx_status_t record_pack(const char *digest, const char *hostid, int job_rank,
                                  const void *addr, size_t addr_len, void **out_p, size_t *len_p)
{
    char job[16];
    snprintf(job, sizeof(job), "%d", job_rank);
    const void *fields[RECORD_FIELDS] = {digest, hostid, job, addr};
    size_t lens[RECORD_FIELDS] = {strlen(digest), strlen(hostid), strlen(job), addr_len};
    size_t total = sizeof(RECORD_MAGIC);
    for (int i = 0; i < RECORD_FIELDS; i++)
        total += 4 + lens[i];
    unsigned char *p = malloc(total);
    if (p == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "comm_create: cannot allocate %zu bytes", total);
    size_t off = 0;
    memcpy(p, RECORD_MAGIC, sizeof(RECORD_MAGIC));
    off += sizeof(RECORD_MAGIC);
    for (int i = 0; i < RECORD_FIELDS; i++) {
        uint32_t l = (uint32_t)lens[i];
        memcpy(p + off, &l, 4);
        memcpy(p + off + 4, fields[i], lens[i]);
        off += 4 + lens[i];
    }
    *out_p = p;
    *len_p = total;
    return GLUCX_OK;
}

/* Compact address (GLUCX_COMPACT_ADDRESS_BYTES, integers little-endian): magic (8), rank (4),
 * size (4), record length (4), IPv6 scope id (4), record digest (8), address family 4 or 6 (2),
 * port (2, network order), address (16; IPv4 in the first 4). */
#define COMPACT_MAGIC "GLUCXC1"
#define COMPACT_RANK 8
#define COMPACT_SIZE 12
#define COMPACT_LEN 16
#define COMPACT_SCOPE 20
#define COMPACT_DIGEST 24
#define COMPACT_FAMILY 32
#define COMPACT_PORT 34
#define COMPACT_ADDR 36
_Static_assert(COMPACT_ADDR + 16 == GLUCX_COMPACT_ADDRESS_BYTES, "compact address layout");

static void put_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* 64-bit digest of a record: FNV-1a, then the splitmix64 finaliser (FNV's low bits mix
 * poorly). It tells a record from another one (mix-ups), not from a forgery. */
static uint64_t record_digest(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
    return h ^ (h >> 31);
}

static void compact_pack(glucx_comm_t *comm, const struct sockaddr_storage *ss)
{
    unsigned char *c = comm->compact;
    memset(c, 0, GLUCX_COMPACT_ADDRESS_BYTES);
    memcpy(c, COMPACT_MAGIC, sizeof(COMPACT_MAGIC));
    put_le(c + COMPACT_RANK, (uint32_t)comm->rank, 4);
    put_le(c + COMPACT_SIZE, (uint32_t)comm->size, 4);
    put_le(c + COMPACT_LEN, (uint32_t)comm->record_len, 4);
    put_le(c + COMPACT_DIGEST, record_digest(comm->record, comm->record_len), 8);
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        put_le(c + COMPACT_SCOPE, a->sin6_scope_id, 4);
        put_le(c + COMPACT_FAMILY, 6, 2);
        memcpy(c + COMPACT_PORT, &a->sin6_port, 2);
        memcpy(c + COMPACT_ADDR, &a->sin6_addr, 16);
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        put_le(c + COMPACT_FAMILY, 4, 2);
        memcpy(c + COMPACT_PORT, &a->sin_port, 2);
        memcpy(c + COMPACT_ADDR, &a->sin_addr, 4);
    }
}

static int is_compact(const void *raw, size_t len)
{
    return len == GLUCX_COMPACT_ADDRESS_BYTES &&
           memcmp(raw, COMPACT_MAGIC, sizeof(COMPACT_MAGIC)) == 0;
}

/* Rank r's compact address: the listener to fetch from, the record's length and digest. */
static glucx_status_t compact_unpack(const glucx_comm_t *comm, int r, const unsigned char *c,
                                     struct sockaddr_storage *ss, size_t *len_p, uint64_t *digest_p)
{
    const uint32_t rank = (uint32_t)get_le(c + COMPACT_RANK, 4);
    const uint32_t size = (uint32_t)get_le(c + COMPACT_SIZE, 4);
    const unsigned family = (unsigned)get_le(c + COMPACT_FAMILY, 2);
    *len_p = (size_t)get_le(c + COMPACT_LEN, 4);
    *digest_p = get_le(c + COMPACT_DIGEST, 8);
    if (rank != (uint32_t)r || size != (uint32_t)comm->size)
        return glucx_error(GLUCX_ERR_MISMATCH,
                           "comm_connect '%s' on rank %d of %d: the compact address given for "
                           "rank %d is rank %u's of a communicator of %u ranks (mixed-up "
                           "addresses)",
                           comm->name, comm->rank, comm->size, r, rank, size);
    if ((family != 4 && family != 6) || *len_p == 0)
        return glucx_error(GLUCX_ERR_MISMATCH,
                           "comm_connect '%s' on rank %d: rank %d's compact address is malformed "
                           "(address family %u, record of %zu bytes)",
                           comm->name, comm->rank, r, family, *len_p);
    memset(ss, 0, sizeof(*ss));
    if (family == 6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_scope_id = (uint32_t)get_le(c + COMPACT_SCOPE, 4);
        memcpy(&a->sin6_port, c + COMPACT_PORT, 2);
        memcpy(&a->sin6_addr, c + COMPACT_ADDR, 16);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        memcpy(&a->sin_port, c + COMPACT_PORT, 2);
        memcpy(&a->sin_addr, c + COMPACT_ADDR, 4);
    }
    return GLUCX_OK;
}

typedef struct record {
    char digest[1400];
    char hostid[300];
    char job[16];     /* job rank, decimal; "-1" when the launcher set none */
    const void *addr; /* points into the record's bytes */
    size_t addr_len;
} record_t;

static int record_unpack(const void *raw, size_t len, record_t *r)
{
    const unsigned char *p = raw;
    size_t off = sizeof(RECORD_MAGIC);
    if (len < off || memcmp(p, RECORD_MAGIC, sizeof(RECORD_MAGIC)) != 0)
        return -1;
    char *strs[RECORD_FIELDS - 1] = {r->digest, r->hostid, r->job};
    size_t caps[RECORD_FIELDS - 1] = {sizeof(r->digest), sizeof(r->hostid), sizeof(r->job)};
    for (int i = 0; i < RECORD_FIELDS; i++) {
        uint32_t l;
        if (len - off < 4)
            return -1;
        memcpy(&l, p + off, 4);
        off += 4;
        if (len - off < l)
            return -1;
        if (i < RECORD_FIELDS - 1) {
            if (l >= caps[i])
                return -1;
            memcpy(strs[i], p + off, l);
            strs[i][l] = '\0';
        } else {
            r->addr = p + off;
            r->addr_len = l;
        }
        off += l;
    }
    return 0;
}

static void host_identity(char *buf, size_t len)
{
    const char *env = getenv("GLUCX_HOSTID");
    if (env != NULL && env[0] != '\0') {
        snprintf(buf, len, "%s", env);
        return;
    }
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, sizeof(boot), f) == NULL)
            boot[0] = '\0';
        fclose(f);
        boot[strcspn(boot, "\n")] = '\0';
    }
    snprintf(buf, len, "%s/%s", host, boot);
}

/* This process's rank in the job, from the variables launchers set (torchrun and glucx-cluster:
 * RANK; Open MPI: OMPI_COMM_WORLD_RANK; PMIx: PMIX_RANK; Slurm: SLURM_PROCID), or -1. It places
 * the ranks of a communicator smaller than the topology file on the file's ranks. */
static int job_rank(void)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (v == NULL || v[0] == '\0')
            continue;
        long r = strtol(v, &end, 10);
        if (*end == '\0' && r >= 0 && r < INT32_MAX)
            return (int)r;
    }
    return -1;
}

/* The settings every rank must share: version, GLUCX_TUNE, the link costs (calibration) and the
 * topology file's network. */
static void settings_digest(const glucx_context_t *ctx, char *buf, size_t len)
{
    snprintf(buf, len, "version=%s tune='%s' costs=%016" PRIx64 " topology=%016" PRIx64,
             glucx_version(), ctx->config.tune, glucx_topo_costs_digest(ctx->costs),
             ctx->net ? glucx_net_digest(ctx->net) : 0);
}

glucx_status_t glucx_comm_record_error(glucx_comm_t *comm, glucx_status_t status)
{
    /* not in a forked child: comm->lock may have been held by a thread fork did not copy */
    if (comm != NULL && status != GLUCX_OK && status != GLUCX_INPROGRESS && !glucx_fork_tainted()) {
        pthread_mutex_lock(&comm->lock);
        snprintf(comm->last_error, sizeof(comm->last_error), "%s", glucx_error_text());
        pthread_mutex_unlock(&comm->lock);
        GLUCX_TP(error, comm->trace_id, comm->rank, (int)status, glucx_error_text());
    }
    return status;
}

static glucx_status_t check_params(const glucx_context_t *ctx, const glucx_comm_params_t *p,
                                   glucx_comm_t **comm_p)
{
    if (ctx == NULL || p == NULL || comm_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "comm_create: NULL argument (context %p, params %p, comm_p %p)",
                           (const void *)ctx, (const void *)p, (void *)comm_p);
    if (p->size < 1 || p->size > GLUCX_COMM_SIZE_MAX || p->rank < 0 || p->rank >= p->size)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "comm_create: rank %d / size %d out of range (1 <= size <= %d)", p->rank,
                           p->size, GLUCX_COMM_SIZE_MAX);
    const uint64_t known = GLUCX_COMM_PARAM_NAME | GLUCX_COMM_PARAM_TIMEOUT;
    if (p->field_mask & ~known)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "comm_create: unknown field_mask bits 0x%llx (this glucx is %s)",
                           (unsigned long long)(p->field_mask & ~known), glucx_version());
    if ((p->field_mask & GLUCX_COMM_PARAM_TIMEOUT) && p->timeout_ms <= 0)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "comm_create: timeout_ms %" PRId64 " <= 0",
                           p->timeout_ms);
    if ((p->field_mask & GLUCX_COMM_PARAM_NAME) &&
        (p->name == NULL || p->name[0] == '\0' || strlen(p->name) > 100))
        return glucx_error(GLUCX_ERR_INVALID_ARG, "comm_create: name must be 1..100 characters");
    return GLUCX_OK;
}

static glucx_status_t check_record(glucx_comm_t *comm, int r, const void *raw, size_t len,
                                   record_t *rec)
{
    if (record_unpack(raw, len, rec) != 0)
        return glucx_error(GLUCX_ERR_MISMATCH,
                           "comm_connect '%s' on rank %d: rank %d's record (%zu bytes) is not "
                           "a glucx %s record",
                           comm->name, comm->rank, r, len, glucx_version());
    if (strcmp(rec->digest, comm->digest) != 0)
        return glucx_error(GLUCX_ERR_MISMATCH,
                           "comm_connect '%s': rank %d runs with %s but rank %d runs with %s "
                           "(glucx version, GLUCX_TUNE, GLUCX_CALIBRATION and GLUCX_TOPOLOGY "
                           "must be the same on every rank; rank %d's GLUCX_TOPOLOGY: '%s', "
                           "GLUCX_CALIBRATION: '%s')",
                           comm->name, r, rec->digest, comm->rank, comm->digest, comm->rank,
                           comm->context->config.topology, comm->context->config.calibration);
    return GLUCX_OK;
}

/* Read every rank's record from the store (own included) into raws/lens (malloc'd). */
static glucx_status_t exchange(glucx_comm_t *comm, glucx_store_t *store, int64_t deadline_ns,
                               void **raws, size_t *lens)
{
    char key[200];
    for (int r = 0; r < comm->size; r++) {
        snprintf(key, sizeof(key), "%s/rank/%d", comm->name, r);
        int64_t left_ms = (deadline_ns - glucx_now_ns()) / 1000000;
        glucx_status_t st =
            glucx_store_get(store, key, left_ms > 0 ? left_ms : 0, &raws[r], &lens[r]);
        if (st == GLUCX_ERR_TIMEOUT)
            return glucx_error(GLUCX_ERR_TIMEOUT,
                               "comm_create '%s' on rank %d of %d: Timed out waiting %" PRId64
                               "ms for rank %d to publish its address (store key '%s')",
                               comm->name, comm->rank, comm->size, comm->timeout_ms, r, key);
        if (st != GLUCX_OK)
            return glucx_error(st, "comm_create '%s' on rank %d: cannot read rank %d's record: %s",
                               comm->name, comm->rank, r, glucx_error_text());
    }
    return GLUCX_OK;
}

/* The phys_link events this rank announces and one route event per peer (EVENTS.md). Out of
 * memory, the trace lacks them (with a warning on stderr naming the communicator and rank): the
 * communicator itself works, and an error event would mark the run failed. */
static void trace_phys(const glucx_comm_t *comm)
{
    glucx_phys_t *phys = NULL;
    glucx_status_t st = glucx_phys_create(comm->topo, &phys);
    if (st != GLUCX_OK) {
        glucx_warn("comm_create '%s' on rank %d of %d: the trace gets no physical links or routes: "
                   "%s",
                   comm->name, comm->rank, comm->size, glucx_error_text());
        return;
    }
    for (int id = 0; id < phys->nlinks; id++) {
        if (glucx_phys_announcer(phys, id) != comm->rank)
            continue;
        const glucx_net_link_t *l = &phys->links[id];
        GLUCX_TP(phys_link, comm->trace_id, comm->rank, id, l->dim, (int)l->a_kind, l->a,
                 (int)l->b_kind, l->b, phys->bandwidth_Bps[id], phys->latency_ns[id]);
    }
    /* the longest route a network may have (GLUCX_NET_MAX_ROUTE links) and the direction of
     * each hop: on the heap, once */
    int32_t *hops = malloc(sizeof(int32_t) * GLUCX_NET_MAX_ROUTE);
    int *ids = malloc(sizeof(int) * GLUCX_NET_MAX_ROUTE);
    uint8_t *dirs = malloc(GLUCX_NET_MAX_ROUTE);
    if (hops == NULL || ids == NULL || dirs == NULL) {
        free(hops);
        free(ids);
        free(dirs);
        glucx_warn("comm_create '%s' on rank %d of %d: the trace gets no routes: out of memory "
                   "for a route of %d links",
                   comm->name, comm->rank, comm->size, GLUCX_NET_MAX_ROUTE);
        glucx_phys_destroy(phys);
        return;
    }
    for (int dst = 0; dst < comm->size; dst++) {
        if (dst == comm->rank)
            continue;
        int n = glucx_phys_route(phys, comm->rank, dst, ids, GLUCX_NET_MAX_ROUTE);
        if (n < 0)
            n = 0;
        if (n > GLUCX_NET_MAX_ROUTE)
            n = GLUCX_NET_MAX_ROUTE;
        if (glucx_phys_directions(phys, comm->rank, ids, n, dirs) != 0) {
            /* not a walk from this rank: a bug of the route; leave the pair without a route
             * (the analysis then charges its messages to no physical link) */
            glucx_warn("comm_create '%s' on rank %d of %d: the trace gets no route to rank %d: "
                       "its %d links are not a walk from this rank",
                       comm->name, comm->rank, comm->size, dst, n);
            continue;
        }
        for (int i = 0; i < n; i++)
            hops[i] = (int32_t)ids[i];
        GLUCX_TP(route, comm->trace_id, comm->rank, glucx_topo_link_id(comm->topo, comm->rank, dst),
                 dst, (uint32_t)n, hops, dirs);
    }
    free(hops);
    free(ids);
    free(dirs);
    glucx_phys_destroy(phys);
}

/* comm_init, one link event per outgoing link, the physical links this rank announces and its
 * routes, one select_map per collective (EVENTS.md). */
static void trace_comm_connected(const glucx_comm_t *comm, const char *hostid)
{
    const glucx_topo_t *t = comm->topo;
    GLUCX_TP(comm_init, comm->trace_id, comm->rank, comm->size, t->package_of[comm->rank],
             t->npackages, comm->name, hostid, glucx_topo_digest(t));
    if (GLUCX_TP_ON(link)) {
        for (int dst = 0; dst < comm->size; dst++) {
            if (dst == comm->rank)
                continue;
            glucx_link_class_t cls = glucx_topo_link_class(t, comm->rank, dst);
            const glucx_link_cost_t *c = &t->cost[cls];
            double bw = c->beta_ns_per_byte > 0 ? 1e9 / c->beta_ns_per_byte : 0.0;
            /* "sysv/memory, cma/memory" -> "sysv,cma": the UCX transports of the endpoint */
            char desc[256] = "", tls[128] = "";
            comm->tx->ops->describe_peer(comm->tx, dst, desc, sizeof(desc));
            size_t n = 0;
            for (const char *p = desc; *p != '\0' && n + 1 < sizeof(tls);) {
                while (*p == ' ' || *p == ',')
                    p++;
                if (*p == '\0')
                    break;
                if (n > 0)
                    tls[n++] = ',';
                while (*p != '\0' && *p != '/' && *p != ',' && *p != ' ' && n + 1 < sizeof(tls))
                    tls[n++] = *p++;
                while (*p != '\0' && *p != ',')
                    p++;
            }
            tls[n < sizeof(tls) ? n : sizeof(tls) - 1] = '\0';
            GLUCX_TP(link, comm->trace_id, comm->rank, glucx_topo_link_id(t, comm->rank, dst),
                     comm->rank, dst, cls == GLUCX_LINK_INTER ? 1 : 0, bw, c->alpha_ns, tls);
        }
    }
    if (GLUCX_TP_ON(phys_link) || GLUCX_TP_ON(route))
        trace_phys(comm);
    if (GLUCX_TP_ON(select_map)) {
        for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
            uint64_t lo[GLUCX_SELECT_MAX_RANGES], hi[GLUCX_SELECT_MAX_RANGES];
            int32_t alg[GLUCX_SELECT_MAX_RANGES];
            uint8_t forced[GLUCX_SELECT_MAX_RANGES];
            uint32_t n = 0;
            for (int i = 0; i < comm->select.nranges[c] && i < GLUCX_SELECT_MAX_RANGES; i++) {
                const glucx_select_range_t *r = &comm->select.ranges[c][i];
                lo[n] = r->lo;
                hi[n] = r->hi == SIZE_MAX ? UINT64_MAX : (uint64_t)r->hi;
                alg[n] = glucx_coll_tp_alg((glucx_coll_t)c, r->alg);
                forced[n] = (uint8_t)(r->forced != 0);
                n++;
            }
            GLUCX_TP(select_map, comm->trace_id, comm->rank, c, n, lo, hi, alg, forced);
        }
    }
}

static void comm_free(glucx_comm_t *comm)
{
    if (comm == NULL)
        return;
    if (comm->tx != NULL)
        comm->tx->ops->destroy(comm->tx);
    if (comm->trace_id != 0)
        glucx_p2p_trace_forget(comm->trace_id);
    glucx_topo_destroy(comm->topo);
    free(comm->record);
    pthread_cond_destroy(&comm->queue_cond);
    pthread_mutex_destroy(&comm->lock);
    free(comm);
}

glucx_status_t glucx_comm_prepare(glucx_context_t *ctx, const glucx_comm_params_t *p,
                                  glucx_comm_t **comm_p)
{
    glucx_status_t st = check_params(ctx, p, comm_p);
    if (st != GLUCX_OK)
        return st;
    if (glucx_fork_tainted())
        return glucx_fork_refuse("comm_prepare/comm_create '%s' (rank %d of %d)",
                                 (p->field_mask & GLUCX_COMM_PARAM_NAME) ? p->name : "glucx",
                                 p->rank, p->size);
    glucx_comm_t *comm = calloc(1, sizeof(*comm));
    if (comm == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "comm_prepare: out of memory");
    comm->context = ctx;
    comm->rank = p->rank;
    comm->size = p->size;
    comm->timeout_ms =
        (p->field_mask & GLUCX_COMM_PARAM_TIMEOUT) ? p->timeout_ms : ctx->config.timeout_ms;
    snprintf(comm->name, sizeof(comm->name), "%s",
             (p->field_mask & GLUCX_COMM_PARAM_NAME) ? p->name : "glucx");
    pthread_mutex_init(&comm->lock, NULL);
    pthread_cond_init(&comm->queue_cond, NULL);

    char hostid[GLUCX_HOSTID_MAX + 1]; /* GLUCX_HOSTID fits: glucx_config_read checked it */
    host_identity(hostid, sizeof(hostid));
    settings_digest(ctx, comm->digest, sizeof(comm->digest));
    const void *addr;
    size_t addr_len = 0;
    st = glucx_tx_ucx_create(ctx->ucx, p->rank, p->size, &comm->tx, &addr, &addr_len);
    if (st == GLUCX_OK)
        st = record_pack(comm->digest, hostid, job_rank(), addr, addr_len, &comm->record,
                         &comm->record_len);
    if (st != GLUCX_OK) {
        comm_free(comm);
        return st;
    }
    *comm_p = comm;
    return GLUCX_OK;
}

glucx_status_t glucx_comm_address(const glucx_comm_t *comm, const void **record_p, size_t *bytes_p)
{
    if (comm == NULL || record_p == NULL || bytes_p == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "comm_address: NULL argument");
    if (glucx_fork_tainted())
        return glucx_fork_refuse("comm_address '%s' (rank %d of %d)", comm->name, comm->rank,
                                 comm->size);
    if (comm->connected || comm->record == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "comm_address '%s' on rank %d: already connected",
                           comm->name, comm->rank);
    *record_p = comm->record;
    *bytes_p = comm->record_len;
    return GLUCX_OK;
}

glucx_status_t glucx_comm_compact_address(glucx_comm_t *comm, const char *listen_host, void *buf,
                                          size_t bytes)
{
    if (comm == NULL || listen_host == NULL || buf == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "comm_compact_address: NULL argument");
    if (bytes < GLUCX_COMPACT_ADDRESS_BYTES)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "comm_compact_address '%s' on rank %d: a buffer of %zu bytes, less "
                           "than %d",
                           comm->name, comm->rank, bytes, GLUCX_COMPACT_ADDRESS_BYTES);
    if (glucx_fork_tainted())
        return glucx_fork_refuse("comm_compact_address '%s' (rank %d of %d)", comm->name,
                                 comm->rank, comm->size);
    if (comm->connected || comm->record == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "comm_compact_address '%s' on rank %d: already connected", comm->name,
                           comm->rank);
    if (!comm->listening) {
        struct sockaddr_storage ss;
        glucx_status_t st =
            glucx_tx_ucx_listen(comm->tx, listen_host, comm->record, comm->record_len, &ss);
        if (st != GLUCX_OK)
            return glucx_error(st, "comm_compact_address '%s' on rank %d of %d: %s", comm->name,
                               comm->rank, comm->size, glucx_error_text());
        compact_pack(comm, &ss);
        comm->listening = 1;
    }
    memcpy(buf, comm->compact, GLUCX_COMPACT_ADDRESS_BYTES);
    return GLUCX_OK;
}

/* The records of the ranks whose entry is a compact address, fetched from their listeners and
 * checked against it: fetched[r] (malloc'd, fetched_len[r] bytes), NULL for the other ranks. */
static glucx_status_t fetch_compact(glucx_comm_t *comm, const void *const *records,
                                    const size_t *bytes, int64_t deadline, void **fetched,
                                    size_t *fetched_len)
{
    const int size = comm->size;
    int n = 0;
    for (int r = 0; r < size; r++)
        if (r != comm->rank && records[r] != NULL && is_compact(records[r], bytes[r]))
            n++;
    if (n == 0)
        return GLUCX_OK;
    struct sockaddr_storage *from = calloc((size_t)size, sizeof(*from)); /* AF_UNSPEC: 0 */
    uint64_t *digest = calloc((size_t)size, sizeof(*digest));
    glucx_status_t st = GLUCX_OK;
    if (from == NULL || digest == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "comm_connect: out of memory for %d ranks", size);
        goto out;
    }
    for (int r = 0; r < size && st == GLUCX_OK; r++)
        if (r != comm->rank && records[r] != NULL && is_compact(records[r], bytes[r]))
            st = compact_unpack(comm, r, records[r], &from[r], &fetched_len[r], &digest[r]);
    if (st == GLUCX_OK) {
        st = glucx_tx_ucx_fetch(comm->tx, from, fetched_len, fetched, deadline);
        if (st != GLUCX_OK)
            st = glucx_error(st, "comm_connect '%s': %s", comm->name, glucx_error_text());
    }
    for (int r = 0; r < size && st == GLUCX_OK; r++) {
        if (fetched[r] == NULL)
            continue;
        uint64_t got = record_digest(fetched[r], fetched_len[r]);
        if (got != digest[r])
            st = glucx_error(GLUCX_ERR_MISMATCH,
                             "comm_connect '%s' on rank %d: the address record rank %d's "
                             "listener served (%zu bytes, digest %016" PRIx64
                             ") is not the one rank %d's compact address announces (digest "
                             "%016" PRIx64 "): a mixed-up or stale address",
                             comm->name, comm->rank, r, fetched_len[r], got, r, digest[r]);
    }
out:
    free(from);
    free(digest);
    return st;
}

/* With GLUCX_TOPOLOGY: rank r of a communicator as large as the file is the file's rank r; in a
 * smaller one, its job rank (job_rank()). Every rank decides from the same records. */
static glucx_status_t place_on_net(glucx_comm_t *comm, const record_t *recs,
                                   const char *const *hostids)
{
    const glucx_net_t *net = comm->context->net;
    int *map = calloc((size_t)comm->size, sizeof(int));
    if (map == NULL)
        return glucx_error(GLUCX_ERR_NO_MEMORY, "comm_connect: out of memory");
    glucx_status_t st = GLUCX_OK;
    if (comm->size > net->nranks)
        st = glucx_error(GLUCX_ERR_INVALID_ARG,
                         "comm_connect '%s' on rank %d: GLUCX_TOPOLOGY %s describes %d ranks, the "
                         "communicator has %d",
                         comm->name, comm->rank, net->path, net->nranks, comm->size);
    for (int r = 0; r < comm->size && st == GLUCX_OK; r++) {
        map[r] = comm->size == net->nranks ? r : atoi(recs[r].job);
        if (map[r] < 0) {
            st = glucx_error(GLUCX_ERR_INVALID_ARG,
                             "comm_connect '%s' on rank %d: GLUCX_TOPOLOGY %s describes %d ranks, "
                             "the communicator has %d, and rank %d has no job rank to place it "
                             "(RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK or SLURM_PROCID)",
                             comm->name, comm->rank, net->path, net->nranks, comm->size, r);
            break;
        }
    }
    if (st == GLUCX_OK) {
        st = glucx_topo_place(comm->topo, net, map, hostids,
                              comm->context->config.calibration[0] != '\0');
        if (st != GLUCX_OK)
            st = glucx_error(st, "comm_connect '%s' on rank %d of %d: %s", comm->name, comm->rank,
                             comm->size, glucx_error_text());
    }
    free(map);
    return st;
}

glucx_status_t glucx_comm_connect(glucx_comm_t *comm, const void *const *records,
                                  const size_t *bytes)
{
    if (comm == NULL || records == NULL || bytes == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "comm_connect: NULL argument");
    if (glucx_fork_tainted())
        return glucx_fork_refuse("comm_connect '%s' (rank %d of %d)", comm->name, comm->rank,
                                 comm->size);
    if (comm->connected || comm->record == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "comm_connect '%s' on rank %d: already connected (or failed)",
                           comm->name, comm->rank);
    int size = comm->size;
    int64_t deadline = glucx_deadline_ns(comm->timeout_ms);
    glucx_status_t st = GLUCX_OK;
    record_t *recs = calloc((size_t)size, sizeof(*recs));
    const void **addrs = calloc((size_t)size, sizeof(*addrs));
    size_t *lens = calloc((size_t)size, sizeof(*lens));
    const char **hostids = calloc((size_t)size, sizeof(*hostids));
    /* every rank's record, this rank's own substituted when the caller passed NULL */
    const void **raw = calloc((size_t)size, sizeof(*raw));
    size_t *raw_len = calloc((size_t)size, sizeof(*raw_len));
    /* records fetched for compact addresses */
    void **fetched = calloc((size_t)size, sizeof(*fetched));
    size_t *fetched_len = calloc((size_t)size, sizeof(*fetched_len));
    if (recs == NULL || addrs == NULL || lens == NULL || hostids == NULL || raw == NULL ||
        raw_len == NULL || fetched == NULL || fetched_len == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "comm_connect: out of memory for %d ranks", size);
        goto out;
    }
    st = fetch_compact(comm, records, bytes, deadline, fetched, fetched_len);
    for (int r = 0; r < size && st == GLUCX_OK; r++) {
        const void *rec = records[r];
        size_t len = bytes[r];
        if (r == comm->rank && (rec == NULL || is_compact(rec, len))) {
            rec = comm->record;
            len = comm->record_len;
        } else if (fetched[r] != NULL) {
            rec = fetched[r];
            len = fetched_len[r];
        }
        if (rec == NULL) {
            st = glucx_error(GLUCX_ERR_INVALID_ARG,
                             "comm_connect '%s' on rank %d: no record for rank %d", comm->name,
                             comm->rank, r);
            break;
        }
        raw[r] = rec;
        raw_len[r] = len;
        st = check_record(comm, r, rec, len, &recs[r]);
        addrs[r] = recs[r].addr;
        lens[r] = recs[r].addr_len;
        hostids[r] = recs[r].hostid;
    }
    if (st == GLUCX_OK)
        comm->trace_id = glucx_tp_comm_id(comm->name, size, raw, raw_len);
    if (st == GLUCX_OK)
        st = glucx_topo_create(size, hostids, comm->context->costs, &comm->topo);
    if (st == GLUCX_OK && comm->context->net != NULL)
        st = place_on_net(comm, recs, hostids);
    if (st == GLUCX_OK)
        st = glucx_tx_ucx_connect(comm->tx, addrs, lens, deadline);
    if (st == GLUCX_OK)
        st = glucx_select_build(comm->topo, &comm->context->tune, &comm->select);
    if (st == GLUCX_OK) {
        comm->connected = 1;
        glucx_stats_add_comm();
        if (GLUCX_TP_ON(comm_init) || GLUCX_TP_ON(link) || GLUCX_TP_ON(select_map))
            trace_comm_connected(comm, hostids[comm->rank]);
        if (GLUCX_LOG_ON(GLUCX_LOG_INFO) && comm->rank == 0) {
            for (int c = 0; c < GLUCX_COLL_COUNT; c++) {
                char map[1024];
                glucx_select_format(&comm->select, (glucx_coll_t)c, map, sizeof(map));
                glucx_info("comm '%s' (ranks: %d, packages: %d): %s: %s", comm->name, comm->size,
                           comm->topo->npackages, glucx_coll_name((glucx_coll_t)c), map);
            }
        }
    }
out:
    /* Every peer that fetched this rank's record has it (its hello followed its fetch), or
     * the communicator failed: the listener and its connections go. */
    if (comm->listening)
        glucx_tx_ucx_unlisten(comm->tx);
    if (fetched != NULL)
        for (int r = 0; r < size; r++)
            free(fetched[r]);
    free(fetched);
    free(fetched_len);
    free(raw);
    free(raw_len);
    free(recs);
    free(addrs);
    free(lens);
    free(hostids);
    /* Connected or failed: the record is not needed any more (a failed comm is only destroyed). */
    free(comm->record);
    comm->record = NULL;
    return st;
}

glucx_status_t glucx_comm_create(glucx_context_t *ctx, const glucx_comm_params_t *p,
                                 glucx_comm_t **comm_p)
{
    if (p != NULL && p->store == NULL)
        return glucx_error(GLUCX_ERR_INVALID_ARG, "comm_create: rank %d: NULL store", p->rank);
    glucx_comm_t *comm = NULL;
    glucx_status_t st = glucx_comm_prepare(ctx, p, &comm);
    if (st != GLUCX_OK)
        return st;
    int size = comm->size;
    int64_t deadline = glucx_deadline_ns(comm->timeout_ms);
    void **raws = calloc((size_t)size, sizeof(*raws));
    size_t *lens = calloc((size_t)size, sizeof(*lens));
    if (raws == NULL || lens == NULL) {
        st = glucx_error(GLUCX_ERR_NO_MEMORY, "comm_create: out of memory for %d ranks", size);
        goto out;
    }
    char key[200];
    snprintf(key, sizeof(key), "%s/rank/%d", comm->name, comm->rank);
    st = glucx_store_set(p->store, key, comm->record, comm->record_len);
    if (st != GLUCX_OK) {
        st = glucx_error(st, "comm_create '%s' on rank %d: cannot publish key '%s': %s", comm->name,
                         comm->rank, key, glucx_error_text());
        goto out;
    }
    st = exchange(comm, p->store, deadline, raws, lens);
    if (st == GLUCX_OK)
        st = glucx_comm_connect(comm, (const void *const *)raws, lens);
out:
    if (raws != NULL)
        for (int r = 0; r < size; r++)
            free(raws[r]);
    free(raws);
    free(lens);
    if (st != GLUCX_OK) {
        comm_free(comm);
        return st;
    }
    *comm_p = comm;
    return GLUCX_OK;
}

void glucx_comm_destroy(glucx_comm_t *comm)
{
    if (comm == NULL)
        return;
    if (glucx_fork_tainted()) {
        /* The parent's: no leave, no UCX call, no lock or thread of the parent (util/fork.h). */
        glucx_fork_retain(comm);
        return;
    }
    glucx_comm_stop_thread(comm, GLUCX_ERR_ABORTED);
    glucx_window_detach_all(comm);
    comm_free(comm);
}

int glucx_comm_rank(const glucx_comm_t *comm)
{
    return comm == NULL ? -1 : comm->rank;
}

int glucx_comm_size(const glucx_comm_t *comm)
{
    return comm == NULL ? -1 : comm->size;
}

size_t glucx_comm_last_error(glucx_comm_t *comm, char *buf, size_t len)
{
    if (comm == NULL)
        return 0;
    if (glucx_fork_tainted()) { /* comm->lock may have been held by a parent thread */
        glucx_fork_refuse("communicator '%s' (rank %d of %d)", comm->name, comm->rank, comm->size);
        int n = snprintf(buf, buf == NULL ? 0 : len, "%s", glucx_error_text());
        return n < 0 ? 0 : (size_t)n;
    }
    pthread_mutex_lock(&comm->lock);
    int n = snprintf(buf, buf == NULL ? 0 : len, "%s", comm->last_error);
    pthread_mutex_unlock(&comm->lock);
    return n < 0 ? 0 : (size_t)n;
}

glucx_status_t glucx_comm_peer_transport(glucx_comm_t *comm, int peer, char *buf, size_t len)
{
    if (comm == NULL || buf == NULL || len == 0)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "comm_peer_transport: NULL communicator or empty buffer (%zu bytes)",
                           len);
    if (peer < 0 || peer >= comm->size)
        return glucx_error(GLUCX_ERR_INVALID_ARG,
                           "comm_peer_transport: peer %d out of range [0, %d)", peer, comm->size);
    if (glucx_fork_tainted())
        return glucx_fork_refuse("comm_peer_transport '%s' (rank %d of %d) to rank %d", comm->name,
                                 comm->rank, comm->size, peer);
    comm->tx->ops->describe_peer(comm->tx, peer, buf, len);
    return GLUCX_OK;
}

void glucx_comm_abort(glucx_comm_t *comm, const char *reason)
{
    /* In a forked child the communicator is the parent's: its peers must hear nothing. */
    if (comm == NULL || glucx_fork_tainted())
        return;
    char text[400];
    snprintf(text, sizeof(text), "communicator '%s' aborted on rank %d: %s", comm->name, comm->rank,
             reason != NULL ? reason : "no reason given");
    comm->tx->ops->fail(comm->tx, GLUCX_ERR_ABORTED, text);
}

const char *glucx_comm_algorithm(glucx_comm_t *comm, glucx_coll_t coll, size_t bytes)
{
    if (comm == NULL || (unsigned)coll >= GLUCX_COLL_COUNT)
        return NULL;
    const glucx_select_range_t *r = glucx_select_lookup(&comm->select, coll, bytes);
    const glucx_coll_table_t *t = glucx_coll_tables[coll];
    return (r->alg >= 0 && r->alg < t->count) ? t->algs[r->alg].name : NULL;
}
