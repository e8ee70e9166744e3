/**
 * Internal: the topology model (glucx_topo_*) that the cost functions read.
 *
 * Ranks are grouped into packages (by default: ranks on one host form one package). Every
 * ordered pair of ranks (src, dst) is a link with id src * size + dst, a class (self, inside a
 * package, between packages) and nominal alpha-beta costs per class. A later issue adds
 * torus/fully-connected dimensions; the link id scheme stays.
 */
#ifndef GLUCX_TOPO_H
#define GLUCX_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include <glucx/status.h>

typedef enum glucx_link_class {
    GLUCX_LINK_SELF,
    GLUCX_LINK_INTRA, /**< same package (shared memory) */
    GLUCX_LINK_INTER, /**< between packages (network) */
    GLUCX_LINK_CLASS_COUNT
} glucx_link_class_t;

/** Alpha-beta(-gamma) parameters of one link class. */
typedef struct glucx_link_cost {
    double alpha_ns;         /**< per-message latency, ns */
    double beta_ns_per_byte; /**< inverse bandwidth, ns per byte */
} glucx_link_cost_t;

typedef struct glucx_topo {
    int size;        /**< ranks */
    int npackages;   /**< distinct packages */
    int *package_of; /**< [size]: package index of each rank, 0..npackages-1, numbered in
                          order of first appearance by rank */
    glucx_link_cost_t cost[GLUCX_LINK_CLASS_COUNT];
    double gamma_ns_per_byte; /**< local reduction cost, ns per byte of one operand */
    double copy_ns_per_byte;  /**< local memcpy cost, ns per byte */
} glucx_topo_t;

/**
 * Build a topology for @p size ranks from their host identities (@p hostids[r]: a string that
 * is equal for ranks on one host, e.g. hostname + boot id), with the link-class costs of
 * @p costs (its cost, gamma and copy fields; NULL: the defaults).
 * @return GLUCX_OK; GLUCX_ERR_NO_MEMORY; GLUCX_ERR_INVALID_ARG.
 */
glucx_status_t glucx_topo_create(int size, const char *const *hostids, const glucx_topo_t *costs,
                                 glucx_topo_t **topo_p);

/** A topology of @p size ranks in @p npackages equal blocks (rank r in package r*np/size),
 *  default costs. For tests and cost tables. */
glucx_status_t glucx_topo_create_uniform(int size, int npackages, glucx_topo_t **topo_p);

void glucx_topo_destroy(glucx_topo_t *topo);

static inline int glucx_topo_link_id(const glucx_topo_t *t, int src, int dst)
{
    return src * t->size + dst;
}

static inline glucx_link_class_t glucx_topo_link_class(const glucx_topo_t *t, int src, int dst)
{
    if (src == dst)
        return GLUCX_LINK_SELF;
    return t->package_of[src] == t->package_of[dst] ? GLUCX_LINK_INTRA : GLUCX_LINK_INTER;
}

/**
 * The costs of the slowest link class present (inter-package if there are several packages):
 * what a topology-oblivious algorithm whose steps touch every class pays per step.
 */
glucx_link_cost_t glucx_topo_bottleneck(const glucx_topo_t *t);

/** Write / read the link-class costs (a small "key value" text file). */
glucx_status_t glucx_topo_calibration_save(const glucx_topo_t *t, const char *path);
glucx_status_t glucx_topo_calibration_load(glucx_topo_t *t, const char *path);

/** Stable 64-bit digest of the topology (package map and costs), for comm_init events. */
uint64_t glucx_topo_digest(const glucx_topo_t *t);

/** Stable 64-bit digest of the link-class costs alone (what ranks must agree on). */
uint64_t glucx_topo_costs_digest(const glucx_topo_t *t);

#endif
