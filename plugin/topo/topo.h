/**
 * Internal: the topology model (glucx_topo_*) that the cost functions read.
 *
 * Ranks are grouped into packages (by default: ranks on one host form one package). Every
 * ordered pair of ranks (src, dst) is a link with id src * size + dst, a class (self, inside a
 * package, between packages) and nominal alpha-beta costs per class.
 *
 * With a topology file (GLUCX_TOPOLOGY, docs/topology.md) the communicator also carries the
 * physical network of the file (glucx_net_t): dimensions, rank coordinates, physical links and
 * dimension-order routes. See the glucx_net_* functions below.
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

/* ---- the physical network of a topology file ------------------------------------------------ */

/** The kind of one dimension, in ASTRA-sim's analytical-network vocabulary. */
typedef enum glucx_dim_kind {
    GLUCX_DIM_RING,            /**< "Ring": member i linked to i+1 mod n (n = 2: one link) */
    GLUCX_DIM_FULLY_CONNECTED, /**< "FullyConnected": one link per pair of members */
    GLUCX_DIM_SWITCH,          /**< "Switch": one link per member to the line's switch */
    GLUCX_DIM_KIND_COUNT
} glucx_dim_kind_t;

#define GLUCX_NET_MAX_DIMS 8
/** The most ranks a topology file may describe. */
#define GLUCX_NET_MAX_RANKS (1 << 20)
/** The range of a dimension's bandwidth, GB/s (1 kB/s to 1 PB/s), and the largest latency, ns
 *  (1000 s): beyond them a value is a typo or a unit mistake. */
#define GLUCX_NET_MIN_GBPS 1e-6
#define GLUCX_NET_MAX_GBPS 1e6
#define GLUCX_NET_MAX_LATENCY_NS 1e12

/** One dimension of a topology file. */
typedef struct glucx_net_dim {
    glucx_dim_kind_t kind;
    int size;              /**< npus_count: members along the dimension, >= 1 */
    double bandwidth_GBps; /**< per link and direction, 1e9 bytes/s, > 0 */
    double latency_ns;     /**< per link, >= 0 */
} glucx_net_dim_t;

/** What an endpoint of a physical link is. */
typedef enum glucx_node_kind {
    GLUCX_NODE_RANK,
    GLUCX_NODE_PACKAGE,
    GLUCX_NODE_SWITCH
} glucx_node_kind_t;

/** One physical link (bidirectional; bandwidth per direction). */
typedef struct glucx_net_link {
    int id;                           /**< index in glucx_net_t.links */
    int dim;                          /**< its dimension, 0 = inside a package */
    glucx_node_kind_t a_kind, b_kind; /**< dimension 0: ranks; outer: packages (b: or a switch) */
    int a, b;                         /**< rank, package or switch index; a < b for two of a kind */
} glucx_net_link_t;

/** The switch of one line of a Switch dimension. */
typedef struct glucx_net_switch {
    int dim;
    int first_link; /**< the links of its members are first_link .. first_link + size - 1 */
} glucx_net_switch_t;

/**
 * The network a topology file describes, innermost dimension first. Dimension 0 is the package
 * (the ranks of one host); rank r is member r % dim[0].size of package r / dim[0].size, and a
 * package's coordinates in the outer dimensions vary innermost fastest (ASTRA-sim's order).
 * Immutable once built: any thread may read it.
 */
typedef struct glucx_net {
    char path[512]; /**< the file it was read from */
    int ndims;
    glucx_net_dim_t dim[GLUCX_NET_MAX_DIMS];
    int nranks;            /**< product of the sizes */
    int ranks_per_package; /**< dim[0].size */
    int npackages;         /**< nranks / ranks_per_package */
    int nlinks;
    glucx_net_link_t *links; /**< [nlinks], numbered as docs/topology.md says */
    int nswitches;
    glucx_net_switch_t *switches;
    int link_base[GLUCX_NET_MAX_DIMS];  /**< id of the first link of each dimension */
    int pkg_stride[GLUCX_NET_MAX_DIMS]; /**< package-index stride of each outer dimension */
    /** [nlinks] each link's own rate in GB/s where glucx_net_set_link_rate gave one, else 0;
     *  NULL when no link has one (every link at its dimension's bandwidth_GBps). */
    double *link_rate_GBps;
} glucx_net_t;

/** The most links a route crosses: a Switch hop is two, a Ring of n at most n/2 per dimension. */
#define GLUCX_NET_MAX_ROUTE 4096

/** "Ring", "FullyConnected", "Switch". */
const char *glucx_dim_kind_name(glucx_dim_kind_t kind);

/**
 * Read a topology file (YAML, ASTRA-sim's analytical network keys: topology, npus_count,
 * bandwidth, latency; docs/topology.md) and build its links.
 * @param path  the file; copied into the result
 * @param net_p receives a new network, owned by the caller (glucx_net_destroy)
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG with a message naming file, line and field for an
 *         unreadable or invalid file; GLUCX_ERR_NO_MEMORY.
 */
glucx_status_t glucx_net_load(const char *path, glucx_net_t **net_p);

/**
 * Build a network from its dimensions (what glucx_net_load does after parsing).
 * @param dims [ndims] innermost first, copied; @param path recorded as its source (may be "").
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG naming the bad dimension; GLUCX_ERR_NO_MEMORY.
 */
glucx_status_t glucx_net_create(const glucx_net_dim_t *dims, int ndims, const char *path,
                                glucx_net_t **net_p);

void glucx_net_destroy(glucx_net_t *net);

/**
 * Give link @p id of @p net its own rate, @p gbps GB/s (1e9 bytes/s) per direction, instead of its
 * dimension's: a degraded link (glucx-analyze whatif --link-rate). The cost model then sees it
 * through glucx_net_link_rate: the congestion-aware step costs (pattern.c) charge that link its
 * own beta, and glucx_topo_dim_cost charges a dimension its slowest link's. Not thread-safe for
 * @p net. @return GLUCX_OK; GLUCX_ERR_INVALID_ARG naming the link id or rate at fault;
 * GLUCX_ERR_NO_MEMORY.
 */
glucx_status_t glucx_net_set_link_rate(glucx_net_t *net, int id, double gbps);

/** The rate of link @p id in GB/s: its own (glucx_net_set_link_rate), else its dimension's. */
double glucx_net_link_rate(const glucx_net_t *net, int id);

/** The slowest rate of dimension @p dim's links in GB/s: its bandwidth_GBps unless a link of it
 *  has a lower rate of its own. */
double glucx_net_dim_min_rate(const glucx_net_t *net, int dim);

/** Coordinates of rank @p rank (0 <= rank < nranks): coords[0..ndims-1]. */
void glucx_net_coords(const glucx_net_t *net, int rank, int *coords);

/**
 * The links a message from rank @p src to rank @p dst crosses, in order: inside one package the
 * dimension-0 route; between packages the route of glucx_net_package_route (a message leaves its
 * host directly: no dimension-0 hop). Writes at most @p max link ids to @p links.
 * @return the route's length (0 for src == dst), or -1 for ranks out of range.
 */
int glucx_net_route(const glucx_net_t *net, int src, int dst, int *links, int max);

/**
 * Dimension-order route between packages: outer dimensions innermost first; along a Ring the
 * shorter direction (ties: increasing coordinate), a FullyConnected dimension is one hop, a Switch
 * two links (member to switch, switch to member). @return its length, or -1 (out of range).
 */
int glucx_net_package_route(const glucx_net_t *net, int src_pkg, int dst_pkg, int *links, int max);

/** Stable 64-bit digest of the dimensions (what ranks must agree on). */
uint64_t glucx_net_digest(const glucx_net_t *net);

/** The patterns of the flat algorithms' steps: every rank r sends one message to r XOR d
 *  (recursive doubling and halving), (r + d) mod n (ring, pairwise and Bruck's alltoall) or
 *  (r - d) mod n (Bruck's allgather). */
typedef enum glucx_pattern {
    GLUCX_PATTERN_XOR,
    GLUCX_PATTERN_SHIFT_UP,
    GLUCX_PATTERN_SHIFT_DOWN,
    GLUCX_PATTERN_COUNT
} glucx_pattern_t;

/** Distances 2^k, k below this, have a precomputed step cost (2^15 > GLUCX_COMM_SIZE_MAX). */
#define GLUCX_TOPO_PATTERN_STEPS 16
/** The largest communicator whose pairwise alltoall steps are costed on the routes (size - 1
 *  steps of size routes each, computed at communicator creation); larger: the class model. */
#define GLUCX_TOPO_PAIRWISE_MAX 512

typedef struct glucx_topo {
    int size;         /**< ranks */
    int npackages;    /**< distinct packages */
    int *package_of;  /**< [size]: package index of each rank, 0..npackages-1, numbered in
                           order of first appearance by rank */
    int package_size; /**< ranks per package when every package has as many, else 0 */
    glucx_link_cost_t cost[GLUCX_LINK_CLASS_COUNT];
    double gamma_ns_per_byte; /**< local reduction cost, ns per byte of one operand */
    double copy_ns_per_byte;  /**< local memcpy cost, ns per byte */
    /** Calibrated costs per dimension of a topology file (glucx-bench --calibrate under
     *  GLUCX_TOPOLOGY), innermost first; alpha_ns < 0 where not measured. */
    glucx_link_cost_t dim_cost[GLUCX_NET_MAX_DIMS];
    /** The nominal cost (the file's latency and 1/bandwidth) each calibrated dimension had when
     *  it was measured, so that the calibration carries to another link rate (see
     *  glucx_topo_dim_cost); alpha_ns < 0 where not recorded (then dim_cost applies as it is). */
    glucx_link_cost_t dim_nominal[GLUCX_NET_MAX_DIMS];
    const glucx_net_t *net; /**< the topology file's network, or NULL; not owned (the
                                 context's) */
    int *net_rank;          /**< [size] with net: each rank's rank in the file, else NULL */
    /** Congestion-aware step costs (plugin/topo/pattern.c), set by glucx_topo_place: for each
     *  pattern, the step at distance 2^k, k < GLUCX_TOPO_PATTERN_STEPS and 2^k < size; valid
     *  only with a network (else the class model stands in). Read through glucx_topo_step_cost. */
    int pattern_valid;
    glucx_link_cost_t pattern_step[GLUCX_PATTERN_COUNT][GLUCX_TOPO_PATTERN_STEPS];
    /** The sum of the steps at every distance d = 1 .. size-1 of GLUCX_PATTERN_SHIFT_UP (the
     *  pairwise alltoall), when pairwise_valid (a network and size <= GLUCX_TOPO_PAIRWISE_MAX). */
    int pairwise_valid;
    glucx_link_cost_t pairwise_sum;
} glucx_topo_t;

/**
 * Build a topology for @p size ranks from their host identities (@p hostids[r]: a string that
 * is equal for ranks on one host, e.g. hostname + boot id), with the link-class costs of
 * @p costs (its cost, gamma and copy fields; NULL: the defaults).
 * @return GLUCX_OK; GLUCX_ERR_NO_MEMORY; GLUCX_ERR_INVALID_ARG.
 */
glucx_status_t glucx_topo_create(int size, const char *const *hostids, const glucx_topo_t *costs,
                                 glucx_topo_t **topo_p);

/**
 * Place the ranks of @p t (built by glucx_topo_create) on the network @p net: rank r is the
 * file's rank @p net_ranks[r] (distinct, < net->nranks). Its packages become the file's (numbered
 * in order of first appearance, as before), and the link-class costs, unless @p keep_costs, the
 * file's nominal ones (inside a package: dimension 0; between packages: the slowest outer
 * dimension). Fails unless host identities fit the file: two ranks share a host exactly when they
 * share a package.
 * @return GLUCX_OK; GLUCX_ERR_INVALID_ARG naming the ranks, hosts and packages that do not fit;
 *         GLUCX_ERR_NO_MEMORY.
 */
glucx_status_t glucx_topo_place(glucx_topo_t *t, const glucx_net_t *net, const int *net_ranks,
                                const char *const *hostids, int keep_costs);

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

/**
 * The physical links between ranks @p src and @p dst of @p t (its net_rank mapping), as
 * glucx_net_route. @return the route's length, 0 without a network or for src == dst.
 */
int glucx_topo_route(const glucx_topo_t *t, int src, int dst, int *links, int max);

/**
 * Fill @p t's congestion-aware step costs from its network's routes (plugin/topo/pattern.c
 * explains the model); clears them without a network or when the routes cannot be built (no
 * memory): the class model then stands in. Called by glucx_topo_place; call again after
 * changing @p t's costs. Not thread-safe for @p t.
 */
void glucx_topo_patterns_compute(glucx_topo_t *t);

/**
 * The cost of one step of pattern @p p at distance 2^@p k in which every rank sends one message
 * of m bytes: alpha + m beta of the result, alpha being the longest route's summed link alphas
 * and beta the most loaded link direction's messages times its beta. Without step costs (no
 * network, or 2^k >= size): glucx_topo_bottleneck. Thread-safe (reads @p t).
 * Source: ASTRA-sim 2.0's congestion-aware analytical model (Won et al., ISPASS 2023), per step.
 */
glucx_link_cost_t glucx_topo_step_cost(const glucx_topo_t *t, glucx_pattern_t p, int k);

/**
 * The summed step costs of the pairwise alltoall (pattern SHIFT_UP at every distance 1 ..
 * size-1): its cost is alpha + b beta of the result for blocks of b bytes. Without them:
 * (size - 1) times glucx_topo_bottleneck. Thread-safe (reads @p t).
 */
glucx_link_cost_t glucx_topo_pairwise_cost(const glucx_topo_t *t);

/**
 * The topology of a whole topology file as one communicator over it sees it: every rank of
 * @p net, rank r being the file's rank r, one host per package, the file's nominal costs, or,
 * with @p calibration (a glucx-bench --calibrate file, or NULL), its costs kept over them as under
 * GLUCX_CALIBRATION (glucx_topo_place with keep_costs). What glucx-info --topology and the
 * analysis's what-if and export use. @p net is borrowed by the result (destroy the topology
 * first). @return GLUCX_OK; GLUCX_ERR_NO_MEMORY; GLUCX_ERR_INVALID_ARG (the calibration file,
 * named with its line, or the placement). Thread-safe for distinct outputs.
 */
glucx_status_t glucx_topo_from_net(const glucx_net_t *net, const char *calibration,
                                   glucx_topo_t **topo_p);

/**
 * The cost of one link of dimension @p dim. Without a calibration of that dimension: the file's
 * nominal latency (alpha, ns) and 1/bandwidth (beta, ns per byte). With one that recorded the
 * nominal cost it was measured against (dim_nominal): carried to this file's rates, alpha =
 * latency + (measured alpha - nominal alpha then), the software overhead kept (never below 0);
 * beta = (measured beta / nominal beta then) x this file's 1/bandwidth, the achieved fraction of
 * the nominal rate kept. With one that did not record it: as measured. {-1, -1} without a network
 * or for a dimension the network does not have. Thread-safe (reads @p t only).
 */
glucx_link_cost_t glucx_topo_dim_cost(const glucx_topo_t *t, int dim);

/**
 * Where glucx_topo_dim_cost's value for @p dim comes from, for reports: "nominal", "calibrated"
 * (no nominal rates recorded), "calibrated at these rates", or "calibrated at other rates,
 * carried". A static string; thread-safe.
 */
const char *glucx_topo_dim_cost_source(const glucx_topo_t *t, int dim);

/* ---- the physical links a trace announces ---------------------------------------------------- */

/**
 * The physical links of a communicator as its trace announces them (trace/EVENTS.md,
 * `phys_link` and `route`). With a topology file: the file's links (ids, endpoints in the file's
 * rank and package numbering) and dimension-order routes. Without one, the model glucx assumes
 * (docs/topology.md, "Physical links without a file"), endpoints in the communicator's numbering
 * (ranks, packages of glucx_topo_t): dimension 0, one link per pair of ranks of a package (ids
 * package by package, pairs (0,1), (0,2), .., (1,2), .. of its ranks in rank order); dimension 1,
 * when there are several packages, one link per package to switch 0 (ids after every dimension-0
 * link, in package order). Nominal values: the file's per dimension; else the link-class costs
 * (bandwidth 1e9 / beta bytes/s; latency alpha inside a package, alpha / 2 per uplink, so that a
 * route between hosts adds up to the class's alpha). Immutable once built.
 */
typedef struct glucx_phys {
    const glucx_topo_t *topo; /**< not owned */
    int nlinks;
    const glucx_net_link_t *links; /**< [nlinks]: the file's, or own_links */
    double *bandwidth_Bps;         /**< [nlinks] nominal, bytes/s per direction */
    double *latency_ns;            /**< [nlinks] nominal, ns */
    /* private */
    glucx_net_link_t *own_links; /* derived model only */
    int *member, *pkg_base, *count, uplink_base;
    int *rank_of, *pkg_first, nnodes_rank, nnodes_pkg;
} glucx_phys_t;

/**
 * Build the physical links of topology @p t (its file's network when it has one).
 * @param phys_p receives a new object, owned by the caller (glucx_phys_destroy); it borrows
 *               @p t (and its network), which must outlive it.
 * @return GLUCX_OK; GLUCX_ERR_NO_MEMORY or GLUCX_ERR_INVALID_ARG (too many links for the
 *         ranks), with a message naming the sizes.
 */
glucx_status_t glucx_phys_create(const glucx_topo_t *t, glucx_phys_t **phys_p);

void glucx_phys_destroy(glucx_phys_t *phys);

/**
 * The physical link ids a message from communicator rank @p src to rank @p dst crosses, in
 * order; writes at most @p max of them to @p links.
 * @return the route's length (0 for src == dst; every other pair has one of at least one link),
 *         or -1 for ranks out of range.
 */
int glucx_phys_route(const glucx_phys_t *phys, int src, int dst, int *links, int max);

/**
 * The direction a message from communicator rank @p src crosses each link of its route, by
 * walking the route from the sender's node: its rank for a dimension-0 link, its package for the
 * first outer link; each hop moves to the link's other endpoint (a Switch hop: member to switch,
 * then switch to member).
 * @param links the route, @p n link ids as glucx_phys_route wrote them (borrowed).
 * @param dirs  receives @p n values (caller's array): 0 when the message goes from endpoint `a`
 *              to `b`, 1 from `b` to `a`.
 * @return 0; -1 for @p src out of range, a link id out of range or a route that is not a walk
 *         from the sender (a link that does not touch the node the message is at), with
 *         @p dirs undefined.
 */
int glucx_phys_directions(const glucx_phys_t *phys, int src, const int *links, int n,
                          uint8_t *dirs);

/**
 * The communicator rank that announces physical link @p id in the trace: the lowest rank at
 * one of its endpoints (a rank endpoint, or a rank of a package endpoint), else rank 0 (a link
 * between packages that hold no rank of the communicator). -1 for an id out of range.
 */
int glucx_phys_announcer(const glucx_phys_t *phys, int id);

/** Write / read the link-class costs and the measured dimensions' costs (a small "key value"
 *  text file: "<class>.alpha_ns", "<class>.beta_ns_per_byte", "dim<d>.alpha_ns",
 *  "dim<d>.beta_ns_per_byte", "dim<d>.nominal_alpha_ns", "dim<d>.nominal_beta_ns_per_byte",
 *  "gamma_ns_per_byte", "copy_ns_per_byte"; '#' comments). Load sets the fields the file names
 *  and leaves the others. @return GLUCX_OK; GLUCX_ERR_INVALID_ARG (file unreadable/unwritable,
 *  an unknown key, a negative or non-finite value, a dimension with only one of its alpha/beta,
 *  or nominal costs without the measured ones; the message names the file and line). */
glucx_status_t glucx_topo_calibration_save(const glucx_topo_t *t, const char *path);
glucx_status_t glucx_topo_calibration_load(glucx_topo_t *t, const char *path);

/** Stable 64-bit digest of the topology (package map and costs), for comm_init events. */
uint64_t glucx_topo_digest(const glucx_topo_t *t);

/** Stable 64-bit digest of the link-class costs alone (what ranks must agree on). */
uint64_t glucx_topo_costs_digest(const glucx_topo_t *t);

#endif
