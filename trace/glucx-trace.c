/*
 * glucx-trace: capture an LTTng trace of the glucx events of a command.
 *
 *   glucx-trace record -o DIR [--level coll|full] [--events LIST] [--buffer-size SIZE]
 *                      [--rotate-size SIZE | --snapshot] -- CMD...
 *   glucx-trace list
 *
 * A C program rather than a shell script because it must (1) stop and destroy the session on
 * every path, including SIGINT/SIGTERM, while forwarding those signals to the command, (2) share
 * one session daemon with every other glucx-trace running at the same time, started and stopped
 * under a lock by pid and start time (see "the session daemon" below), and (3) read the number of
 * discarded events per channel, which liblttng-ctl gives as numbers (the lttng CLI only prints
 * them in warnings). liblttng-ctl is loaded with dlopen(), so a machine without LTTng gets a
 * clear message instead of a loader error.
 *
 * A trace whose files are not whole (a full disk: LTTng's consumer only logs its failed writes,
 * and still counts 0 events discarded) is reported as such, naming the full disk, and the exit
 * status is not 0: see "is the written trace whole?".
 *
 * Long jobs: --rotate-size archives the trace in chunks of about SIZE bytes (LTTng session
 * rotation; each chunk under DIR/archives/ is a complete trace, readable while the job runs, and
 * Babeltrace 2 reads them all as one trace when given DIR); --snapshot is a flight recorder
 * (overwrite-mode buffers; a snapshot of the latest events is written on SIGUSR1 and at the end).
 *
 * Concurrent jobs: LTTng-UST records every traced process of the user in every session, so a
 * trace made while another job records holds that job's glucx events too. record therefore
 * creates DIR/glucx-pids (empty) and gives the command GLUCX_TRACE_PIDS=<its absolute path>; the
 * provider (provider.c, "Process list") appends the pid of every process of the command to it,
 * and glucx-analyze leaves out the events of processes the file does not list. The file sits at
 * the top of DIR, beside the trace directories LTTng writes (ust/..., archives/<chunk>/...,
 * snapshot-N-.../), which hold only CTF files: Babeltrace 2 looks for traces below DIR and
 * ignores a regular file there, and session rotation moves only LTTng's own directories.
 */
#include <dlfcn.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lttng/lttng.h>

#ifndef GLUCX_TRACE_PROVIDER_NAME
#define GLUCX_TRACE_PROVIDER_NAME "libglucx-trace-provider.so"
#endif
#define CHANNEL_NAME "glucx"
#define PROVIDER "glucx"
#define PIDS_FILE "glucx-pids"      /* in DIR: the command's process list */
#define PIDS_ENV "GLUCX_TRACE_PIDS" /* its absolute path, for the provider (provider.c) */
/* LTTNG_UST_REGISTER_TIMEOUT given to the command unless set: how long (ms) a traced program
 * waits for the session daemon to register it before it runs (LTTng's default is 3000) */
#define REGISTER_TIMEOUT_MS "30000"

/* ---- the event catalog -------------------------------------------------------------------- */

enum level { LEVEL_COLL, LEVEL_FULL };

/* Names, levels and fields of every event; trace/EVENTS.md documents them (tests/trace checks
 * that this list, EVENTS.md and the events a trace contains agree). */
static const struct event_info {
    const char *name;
    enum level level; /* the smallest level that records it */
    const char *fields;
} catalog[] = {
    {"comm_init", LEVEL_COLL, "comm_id rank size package npackages name host topo_digest"},
    {"link", LEVEL_COLL, "comm_id rank link_id src dst dim bandwidth_Bps latency_ns transport"},
    {"phys_link", LEVEL_COLL,
     "comm_id rank phys_id dim a_kind a b_kind b bandwidth_Bps latency_ns"},
    {"route", LEVEL_COLL, "comm_id rank link dst phys_ids[] dirs[]"},
    {"select_map", LEVEL_COLL, "comm_id rank coll lo[] hi[] alg[] forced[]"},
    {"coll_begin", LEVEL_COLL, "comm_id rank seq coll bytes dtype op root alg status"},
    {"coll_end", LEVEL_COLL, "comm_id rank seq coll bytes dtype op root alg status"},
    {"sched_decision", LEVEL_COLL, "comm_id rank seq kind chosen alt_ids[] alt_cost_ns[] reason"},
    {"send_begin", LEVEL_FULL, "comm_id rank seq step peer link tag bytes"},
    {"send_end", LEVEL_FULL, "comm_id rank seq step peer link tag bytes"},
    {"recv_begin", LEVEL_FULL, "comm_id rank seq step peer link tag bytes"},
    {"recv_end", LEVEL_FULL, "comm_id rank seq step peer link tag bytes"},
    {"reduce_begin", LEVEL_FULL, "comm_id rank seq bytes dtype op"},
    {"reduce_end", LEVEL_FULL, "comm_id rank seq bytes dtype op"},
    {"wait_begin", LEVEL_FULL, "comm_id rank site seq req nreqs status"},
    {"wait_end", LEVEL_FULL, "comm_id rank site seq req nreqs status"},
    {"compute_begin", LEVEL_COLL, "comm_id rank phase id"},
    {"compute_end", LEVEL_COLL, "comm_id rank phase id"},
    {"iteration_begin", LEVEL_COLL, "comm_id rank iteration"},
    {"iteration_end", LEVEL_COLL, "comm_id rank iteration"},
    {"bucket_ready", LEVEL_COLL, "comm_id rank bucket bytes"},
    {"error", LEVEL_COLL, "comm_id rank status text"},
};
#define CATALOG_COUNT ((int)(sizeof(catalog) / sizeof(catalog[0])))

static const char *level_name(enum level l)
{
    return l == LEVEL_COLL ? "coll" : "full";
}

static int catalog_find(const char *name)
{
    if (strncmp(name, PROVIDER ":", sizeof(PROVIDER)) == 0)
        name += sizeof(PROVIDER);
    for (int i = 0; i < CATALOG_COUNT; i++)
        if (strcmp(catalog[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- messages ------------------------------------------------------------------------------ */

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("glucx-trace: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("glucx-trace: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: glucx-trace record -o DIR [--level coll|full] [--events LIST]\n"
        "                          [--buffer-size SIZE] [--rotate-size SIZE | --snapshot]\n"
        "                          -- COMMAND [ARGS...]\n"
        "       glucx-trace list\n"
        "\n"
        "record  trace the glucx events of COMMAND (and of every process it starts) into DIR\n"
        "        (must not exist or be empty). Exits with COMMAND's exit status, or 1 if it\n"
        "        is 0 but the trace could not be written whole (e.g. no space left on device).\n"
        "  --level coll   communicators, collectives, decisions, errors and framework events\n"
        "  --level full   everything, including every send, receive, reduction and wait\n"
        "                 (default)\n"
        "  --events LIST  exactly these events (comma-separated names, see `list`);\n"
        "                 overrides --level\n"
        "  --buffer-size SIZE  ring buffer per CPU, e.g. 64M (K/M/G binary suffixes);\n"
        "                 default 16M for full, 4M for coll. Events that do not fit are\n"
        "                 discarded and counted.\n"
        "  --rotate-size SIZE  for long jobs: archive the trace whenever about SIZE bytes\n"
        "                 have been written; each chunk is a complete trace under\n"
        "                 DIR/archives/ (readable while the job runs); babeltrace2 and\n"
        "                 glucx-analyze read DIR as one trace. SIGUSR1 archives at once.\n"
        "  --snapshot     flight recorder: buffers keep only the latest events (the oldest\n"
        "                 are overwritten, never discarded); SIGUSR1 writes a snapshot of\n"
        "                 them into DIR, and one is written when the command ends.\n"
        "list    print the event catalog: name, level, fields (trace/EVENTS.md has units)\n"
        "\n"
        "DIR/" PIDS_FILE " lists the pid of every traced process of COMMAND, one per line\n"
        "(" PIDS_ENV " gives the command its path): LTTng records every traced process of\n"
        "the user in each session, and glucx-analyze leaves out the events of processes\n"
        "not listed (another job traced at the same time); babeltrace2 shows them all.\n"
        "\n"
        "Session daemon: if none answers, record starts lttng-sessiond; every glucx-trace\n"
        "running at the same time shares it, and the last one to end stops it. A daemon\n"
        "that was running already is used and never stopped. The choice is made under the\n"
        "lock STATE_DIR/sessiond.lock (flock); STATE_DIR/sessiond.state records the daemon\n"
        "glucx-trace started and the glucx-trace processes using it (pid and start time),\n"
        "STATE_DIR/sessiond.log its output. STATE_DIR is /run/glucx-trace for root,\n"
        "${LTTNG_HOME:-$HOME}/.lttng/glucx-trace otherwise. A glucx-trace that died\n"
        "(SIGKILL) is noticed by the next one, which closes its session and, when no one\n"
        "else uses the daemon it left, stops it. Sessions not made by glucx-trace keep the\n"
        "daemon running; it is stopped by the first glucx-trace to end after they are gone.\n"
        "\n"
        "Environment: GLUCX_TRACE_PROVIDER=PATH overrides the provider library "
        "(" GLUCX_TRACE_PROVIDER_NAME ").\n"
        "COMMAND gets LTTNG_UST_REGISTER_TIMEOUT=" REGISTER_TIMEOUT_MS " unless set: each traced\n"
        "program waits up to that many ms for the session daemon before it runs (LTTng's 3000\n"
        "loses a program's first events on a loaded machine).\n");
}

static void die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("glucx-trace: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n\n", stderr);
    va_end(ap);
    usage(stderr);
    exit(2);
}

/* ---- liblttng-ctl, loaded at run time ----------------------------------------------------- */

static struct {
    __typeof__(lttng_session_daemon_alive) *session_daemon_alive;
    __typeof__(lttng_create_session) *create_session;
    __typeof__(lttng_destroy_session) *destroy_session;
    __typeof__(lttng_create_handle) *create_handle;
    __typeof__(lttng_destroy_handle) *destroy_handle;
    __typeof__(lttng_channel_create) *channel_create;
    __typeof__(lttng_channel_destroy) *channel_destroy;
    __typeof__(lttng_enable_channel) *enable_channel;
    __typeof__(lttng_list_channels) *list_channels;
    __typeof__(lttng_channel_get_discarded_event_count) *channel_get_discarded_event_count;
    __typeof__(lttng_channel_get_lost_packet_count) *channel_get_lost_packet_count;
    __typeof__(lttng_add_context) *add_context;
    __typeof__(lttng_event_create) *event_create;
    __typeof__(lttng_event_destroy) *event_destroy;
    __typeof__(lttng_enable_event_with_exclusions) *enable_event_with_exclusions;
    __typeof__(lttng_start_tracing) *start_tracing;
    __typeof__(lttng_stop_tracing) *stop_tracing;
    __typeof__(lttng_list_sessions) *list_sessions;
    __typeof__(lttng_strerror) *strerror_;
    __typeof__(lttng_create_session_snapshot) *create_session_snapshot;
    __typeof__(lttng_snapshot_record) *snapshot_record;
    __typeof__(lttng_rotation_schedule_size_threshold_create) *rotation_size_create;
    __typeof__(lttng_rotation_schedule_size_threshold_set_threshold) *rotation_size_set;
    __typeof__(lttng_session_add_rotation_schedule) *add_rotation_schedule;
    __typeof__(lttng_rotation_schedule_destroy) *rotation_schedule_destroy;
    __typeof__(lttng_rotate_session) *rotate_session;
    __typeof__(lttng_rotation_handle_destroy) *rotation_handle_destroy;
} lt;

static int load_lttng_ctl(void)
{
    void *h = dlopen("liblttng-ctl.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        err("LTTng is not installed: cannot load its control library liblttng-ctl.so.0 (%s); "
            "install lttng-tools (Debian: apt-get install lttng-tools liblttng-ust-dev)",
            dlerror());
        return -1;
    }
    struct {
        void **slot;
        const char *name;
    } syms[] = {
#define SYM(field, name) {(void **)&lt.field, #name}
        SYM(session_daemon_alive, lttng_session_daemon_alive),
        SYM(create_session, lttng_create_session),
        SYM(destroy_session, lttng_destroy_session),
        SYM(create_handle, lttng_create_handle),
        SYM(destroy_handle, lttng_destroy_handle),
        SYM(channel_create, lttng_channel_create),
        SYM(channel_destroy, lttng_channel_destroy),
        SYM(enable_channel, lttng_enable_channel),
        SYM(list_channels, lttng_list_channels),
        SYM(channel_get_discarded_event_count, lttng_channel_get_discarded_event_count),
        SYM(channel_get_lost_packet_count, lttng_channel_get_lost_packet_count),
        SYM(add_context, lttng_add_context),
        SYM(event_create, lttng_event_create),
        SYM(event_destroy, lttng_event_destroy),
        SYM(enable_event_with_exclusions, lttng_enable_event_with_exclusions),
        SYM(start_tracing, lttng_start_tracing),
        SYM(stop_tracing, lttng_stop_tracing),
        SYM(list_sessions, lttng_list_sessions),
        SYM(strerror_, lttng_strerror),
        SYM(create_session_snapshot, lttng_create_session_snapshot),
        SYM(snapshot_record, lttng_snapshot_record),
        SYM(rotation_size_create, lttng_rotation_schedule_size_threshold_create),
        SYM(rotation_size_set, lttng_rotation_schedule_size_threshold_set_threshold),
        SYM(add_rotation_schedule, lttng_session_add_rotation_schedule),
        SYM(rotation_schedule_destroy, lttng_rotation_schedule_destroy),
        SYM(rotate_session, lttng_rotate_session),
        SYM(rotation_handle_destroy, lttng_rotation_handle_destroy),
#undef SYM
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (*syms[i].slot == NULL) {
            err("liblttng-ctl.so.0 lacks %s: LTTng-tools 2.13 or newer is needed", syms[i].name);
            return -1;
        }
    }
    return 0;
}

/* ---- signals ------------------------------------------------------------------------------ */

static volatile sig_atomic_t got_signal; /* last terminating signal received */
static volatile sig_atomic_t child_pid;  /* the command, once started */
static volatile sig_atomic_t got_usr1;   /* SIGUSR1: snapshot or rotate now */

/* Forward a signal another process sent us (kill, a job scheduler) to the command. A signal from
 * the terminal (Ctrl-C: si_code SI_KERNEL) already reached the command, which shares our
 * process group: forwarding it would deliver it twice. Setup and cleanup continue either way. */
static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    got_signal = sig;
    if (child_pid > 0 && info != NULL && info->si_code != SI_KERNEL)
        kill((pid_t)child_pid, sig);
}

static void on_usr1(int sig)
{
    (void)sig;
    got_usr1 = 1;
}

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid() returns EINTR and we look again */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
        sigaction(forwarded_signals[i], &sa, NULL);
    struct sigaction su;
    memset(&su, 0, sizeof(su));
    su.sa_handler = on_usr1; /* not forwarded: it is a request to glucx-trace */
    sigemptyset(&su.sa_mask);
    sigaction(SIGUSR1, &su, NULL);
}

/* The command and the session daemon start with default dispositions. */
static void reset_signal_handlers(void)
{
    for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
        signal(forwarded_signals[i], SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static int parse_size(const char *text, uint64_t *bytes_p)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return -1;
    uint64_t mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = UINT64_C(1) << 10;
    else if (*end == 'M' || *end == 'm')
        mult = UINT64_C(1) << 20;
    else if (*end == 'G' || *end == 'g')
        mult = UINT64_C(1) << 30;
    else if (*end != '\0')
        return -1;
    if (*end != '\0' && end[1] != '\0' && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0)
        return -1;
    if (v == 0 || v > UINT64_MAX / mult)
        return -1;
    *bytes_p = v * mult;
    return 0;
}

static uint64_t floor_pow2(uint64_t v)
{
    uint64_t p = 1;
    while (p <= v / 2)
        p *= 2;
    return p;
}

/* Directory of this executable, for finding the provider next to it (build tree) or in
 * ../lib* (install tree). */
static int exe_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return 0;
}

/* The provider as an absolute path (out: PATH_MAX bytes): GLUCX_TRACE_PROVIDER, else next to
 * this program (build tree), else ../lib* relative to it, else the configured install path. */
static int find_provider(char *out)
{
    const char *env = getenv("GLUCX_TRACE_PROVIDER");
    if (env != NULL && env[0] != '\0') {
        if (realpath(env, out) == NULL) {
            err("GLUCX_TRACE_PROVIDER=%s: %s", env, strerror(errno));
            return -1;
        }
        return 0;
    }
    char cand[3][PATH_MAX + 128];
    int nc = 0;
    char dir[PATH_MAX];
    if (exe_dir(dir, sizeof(dir)) == 0) {
        snprintf(cand[nc++], sizeof(cand[0]), "%s/%s", dir, GLUCX_TRACE_PROVIDER_NAME);
#ifdef GLUCX_TRACE_PROVIDER_RELDIR
        snprintf(cand[nc++], sizeof(cand[0]), "%s/%s/%s", dir, GLUCX_TRACE_PROVIDER_RELDIR,
                 GLUCX_TRACE_PROVIDER_NAME);
#endif
    }
#ifdef GLUCX_TRACE_PROVIDER_INSTALL_PATH
    snprintf(cand[nc++], sizeof(cand[0]), "%s", GLUCX_TRACE_PROVIDER_INSTALL_PATH);
#endif
    for (int i = 0; i < nc; i++)
        if (access(cand[i], R_OK) == 0 && realpath(cand[i], out) != NULL)
            return 0;
    err("cannot find the glucx trace provider %s (looked in: %s%s%s%s%s); set "
        "GLUCX_TRACE_PROVIDER to its path",
        GLUCX_TRACE_PROVIDER_NAME, nc > 0 ? cand[0] : "", nc > 1 ? ", " : "", nc > 1 ? cand[1] : "",
        nc > 2 ? ", " : "", nc > 2 ? cand[2] : "");
    return -1;
}

static int find_fork_helper(char *out, size_t len)
{
    static const char *const dirs[] = {
#ifdef GLUCX_LTTNG_UST_LIBDIR
        GLUCX_LTTNG_UST_LIBDIR,
#endif
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(out, len, "%s/liblttng-ust-fork.so.1", dirs[i]);
        if (access(out, R_OK) == 0)
            return 0;
    }
    err("LTTng-UST is not installed: liblttng-ust-fork.so.1 not found (needed so that processes "
        "started with fork() are traced); install liblttng-ust1 (Debian: apt-get install "
        "liblttng-ust-dev)");
    return -1;
}

/* DIR must not exist (it is created) or be an empty directory; abs (PATH_MAX bytes) receives its
 * absolute path. */
static int prepare_output_dir(const char *dir, char *abs)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            err("output %s exists and is not a directory", dir);
            return -1;
        }
        DIR *d = opendir(dir);
        if (d == NULL) {
            err("cannot open output directory %s: %s", dir, strerror(errno));
            return -1;
        }
        struct dirent *e;
        int entries = 0;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                entries++;
        closedir(d);
        if (entries > 0) {
            err("output directory %s is not empty (%d entries): choose a new -o DIR so traces "
                "of different runs are not mixed",
                dir, entries);
            return -1;
        }
    } else {
        /* mkdir -p */
        char tmp[PATH_MAX];
        if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp)) {
            err("output path too long: %s", dir);
            return -1;
        }
        for (char *p = tmp + 1; *p != '\0'; p++) {
            if (*p == '/') {
                *p = '\0';
                if (mkdir(tmp, 0775) != 0 && errno != EEXIST) {
                    err("cannot create %s: %s", tmp, strerror(errno));
                    return -1;
                }
                *p = '/';
            }
        }
        if (mkdir(tmp, 0775) != 0 && errno != EEXIST) {
            err("cannot create output directory %s: %s", tmp, strerror(errno));
            return -1;
        }
    }
    if (realpath(dir, abs) == NULL) {
        err("cannot resolve %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* mkdir -p @p path (each missing directory with @p mode); 0, or -1 with errno set. */
static int make_dirs(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, mode) != 0 && errno != EEXIST ? -1 : 0;
}

/* ---- the session daemon, shared by every glucx-trace -------------------------------------- */

/*
 * LTTng runs one session daemon per user (root's serves every root session), and a second
 * lttng-sessiond refuses to start. glucx-trace processes started at the same moment therefore
 * agree on the daemon under a lock, in STATE_DIR (/run/glucx-trace for root,
 * ${LTTNG_HOME:-$HOME}/.lttng/glucx-trace for other users, beside LTTng's own per-user files):
 *
 *   sessiond.lock   flock()ed while a glucx-trace chooses, starts or stops the daemon
 *   sessiond.state  the daemon glucx-trace started ("daemon PID START") and the glucx-trace
 *                   processes using it ("user PID START"); START is the starttime field of
 *                   /proc/PID/stat, so a reused pid is never taken for the process recorded
 *   sessiond.log    that daemon's output
 *
 * Rules, each applied under the lock:
 * - a recorded daemon that is gone is forgotten with its users; users that are gone are dropped;
 * - a recorded daemon that runs is used, even when its users are all gone (a glucx-trace killed
 *   by SIGKILL leaves it: the next glucx-trace adopts it and, its last user, stops it); sessions
 *   on it of glucx-trace processes that are gone are destroyed first, which closes their traces;
 * - otherwise a daemon that answers was started by someone else: used, never recorded, never
 *   stopped;
 * - otherwise glucx-trace starts one, recorded as soon as it is forked;
 * - the last user of the recorded daemon stops it (SIGTERM, then SIGKILL) and waits until it is
 *   gone, unless sessions not made by glucx-trace use it: it then stays recorded, and the first
 *   glucx-trace to end after they are gone stops it.
 */
#define LOCK_WAIT_MS 120000 /* a holder starts or stops a daemon: 30 s at worst */
#define READY_WAIT_MS 30000 /* for a daemon to answer once started (a loaded machine is slow) */
#define STOP_WAIT_MS 10000  /* after SIGTERM, and again after SIGKILL */
#define STATE_HEADER "glucx-trace sessiond state 1"

struct proc_id {
    pid_t pid;      /* 0: none */
    uint64_t start; /* starttime of /proc/PID/stat: clock ticks from boot to its start */
};

/* The starttime of process @p pid; 0 if there is no such process or it has ended (a zombie). */
static uint64_t proc_start(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* after the command name, which may hold ' ' and ')' */
    if (p == NULL || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
        return 0;
    p += 2; /* field 3, the state; starttime is field 22 */
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (p == NULL)
            return 0;
        p++;
    }
    return strtoull(p, NULL, 10);
}

static int proc_alive(const struct proc_id *id)
{
    return id->pid > 0 && id->start != 0 && proc_start(id->pid) == id->start;
}

static int same_proc(const struct proc_id *a, const struct proc_id *b)
{
    return a->pid == b->pid && a->start == b->start;
}

struct sessiond_state {
    struct proc_id daemon; /* pid 0: glucx-trace runs no daemon */
    struct proc_id *users;
    size_t nusers, cap;
};

static char state_dir[PATH_MAX];
static int lock_fd = -1;

static int state_path(char *buf, size_t len, const char *name)
{
    if (snprintf(buf, len, "%s/%s", state_dir, name) >= (int)len) {
        err("path too long: %s/%s", state_dir, name);
        return -1;
    }
    return 0;
}

static int state_dir_init(void)
{
    if (geteuid() == 0) {
        snprintf(state_dir, sizeof(state_dir), "/run/glucx-trace");
    } else {
        const char *home = getenv("LTTNG_HOME");
        if (home == NULL || home[0] == '\0')
            home = getenv("HOME");
        if (home == NULL || home[0] == '\0') {
            err("neither LTTNG_HOME nor HOME is set: no place for the session daemon's lock "
                "(LTTng needs one of them too)");
            return -1;
        }
        if (snprintf(state_dir, sizeof(state_dir), "%s/.lttng/glucx-trace", home) >=
            (int)sizeof(state_dir)) {
            err("path too long: %s/.lttng/glucx-trace", home);
            return -1;
        }
    }
    if (make_dirs(state_dir, 0700) != 0) {
        err("cannot create %s (glucx-trace's session daemon lock): %s", state_dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Take STATE_DIR/sessiond.lock, waiting at most LOCK_WAIT_MS (and, if @p interruptible, until a
 * terminating signal arrives). 0, or -1 after a message. */
static int state_lock(int interruptible)
{
    char path[PATH_MAX + 32];
    if (state_path(path, sizeof(path), "sessiond.lock") != 0)
        return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        err("cannot open the lock file %s: %s", path, strerror(errno));
        return -1;
    }
    const int64_t t0 = mono_ms();
    for (unsigned tries = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; tries++) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            err("cannot lock %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (interruptible && got_signal) {
            err("interrupted by signal %d while waiting for the lock %s", (int)got_signal, path);
            close(fd);
            return -1;
        }
        if (mono_ms() - t0 >= LOCK_WAIT_MS) {
            err("cannot lock %s within %d s: another glucx-trace holds it (it starts or stops the "
                "session daemon, which takes seconds) and did not let go: is it stopped or hung? "
                "(fuser -v %s shows it)",
                path, LOCK_WAIT_MS / 1000, path);
            close(fd);
            return -1;
        }
        sleep_ms(tries < 100 ? 10 : 50);
    }
    lock_fd = fd;
    return 0;
}

static void state_unlock(void)
{
    if (lock_fd < 0)
        return;
    flock(lock_fd, LOCK_UN);
    close(lock_fd);
    lock_fd = -1;
}

static int state_add_user(struct sessiond_state *s, struct proc_id id)
{
    if (s->nusers == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct proc_id *v = realloc(s->users, cap * sizeof(*v));
        if (v == NULL) {
            err("out of memory reading the session daemon's users (%zu)", s->nusers);
            return -1;
        }
        s->users = v;
        s->cap = cap;
    }
    s->users[s->nusers++] = id;
    return 0;
}

/* Read STATE_DIR/sessiond.state (a missing file: no daemon, no users). 0, or -1 after a message. */
static int state_read(struct sessiond_state *s)
{
    memset(s, 0, sizeof(*s));
    char path[PATH_MAX + 32];
    if (state_path(path, sizeof(path), "sessiond.state") != 0)
        return -1;
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        if (errno == ENOENT)
            return 0;
        err("cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char line[256];
    int header = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        char kind[16];
        int pid;
        unsigned long long start;
        if (strncmp(line, STATE_HEADER "\n", sizeof(STATE_HEADER)) == 0) {
            header = 1;
        } else if (header && sscanf(line, "%15s %d %llu", kind, &pid, &start) == 3 && pid > 0) {
            struct proc_id id = {(pid_t)pid, (uint64_t)start};
            if (strcmp(kind, "daemon") == 0)
                s->daemon = id;
            else if (strcmp(kind, "user") == 0)
                rc = state_add_user(s, id);
        }
    }
    fclose(f);
    return rc;
}

/* Replace STATE_DIR/sessiond.state (removed when empty). 0, or -1 after a message. */
static int state_write(const struct sessiond_state *s)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
    if (state_path(path, sizeof(path), "sessiond.state") != 0 ||
        state_path(tmp, sizeof(tmp), "sessiond.state.tmp") != 0)
        return -1;
    if (s->daemon.pid == 0 && s->nusers == 0) {
        if (unlink(path) != 0 && errno != ENOENT) {
            err("cannot remove %s: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    FILE *f = fopen(tmp, "we");
    if (f == NULL) {
        err("cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    fprintf(f, "%s\n", STATE_HEADER);
    if (s->daemon.pid != 0)
        fprintf(f, "daemon %d %" PRIu64 "\n", (int)s->daemon.pid, s->daemon.start);
    for (size_t i = 0; i < s->nusers; i++)
        fprintf(f, "user %d %" PRIu64 "\n", (int)s->users[i].pid, s->users[i].start);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        err("cannot write %s (%zu users): %s", tmp, s->nusers, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        err("cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Forget a recorded daemon that is gone (and its users), and users that are gone. */
static void state_prune(struct sessiond_state *s)
{
    if (s->daemon.pid != 0 && !proc_alive(&s->daemon)) {
        s->daemon.pid = 0;
        s->nusers = 0;
    }
    size_t w = 0;
    for (size_t i = 0; i < s->nusers; i++)
        if (proc_alive(&s->users[i]))
            s->users[w++] = s->users[i];
    s->nusers = w;
}

/* Seconds since the epoch at boot (/proc/stat btime); 0 if unknown. */
static long boot_time(void)
{
    FILE *f = fopen("/proc/stat", "re");
    char line[256];
    long btime = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "btime %ld", &btime) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return btime;
}

/* Whether session @p name was made by a glucx-trace that is gone: its name is
 * glucx-trace-PID-TIME (see cmd_record) and PID does not run, or runs a process started more than
 * a minute after TIME (a reused pid). In doubt, not stale: only a stale session is destroyed. */
static int session_is_stale(const char *name)
{
    int pid = 0, used = 0;
    long t = 0;
    if (sscanf(name, "glucx-trace-%d-%ld%n", &pid, &t, &used) != 2 || name[used] != '\0' ||
        pid <= 0 || pid == (int)getpid())
        return 0;
    uint64_t start = proc_start((pid_t)pid);
    if (start == 0)
        return 1;
    long hz = sysconf(_SC_CLK_TCK), btime = boot_time();
    return hz > 0 && btime > 0 && btime + (long)(start / (uint64_t)hz) > t + 60;
}

/* On the daemon that answers: destroy the sessions of glucx-trace processes that are gone (this
 * closes their traces), and count the others except this process's (names into @p names). */
static int sweep_sessions(char *names, size_t len)
{
    struct lttng_session *sessions = NULL;
    int n = lt.list_sessions(&sessions);
    int live = 0;
    char own[32];
    snprintf(own, sizeof(own), "glucx-trace-%d-", (int)getpid());
    names[0] = '\0';
    if (n < 0)
        msg("cannot list the sessions of the session daemon: %s", lt.strerror_(n));
    for (int i = 0; i < n; i++) {
        if (session_is_stale(sessions[i].name)) {
            int r = lt.destroy_session(sessions[i].name);
            if (r < 0)
                err("cannot destroy session %s, left by a glucx-trace that is gone: %s",
                    sessions[i].name, lt.strerror_(r));
            else
                msg("destroyed session %s, left by a glucx-trace that is gone (its trace: %s)",
                    sessions[i].name, sessions[i].path);
        } else if (strncmp(sessions[i].name, own, strlen(own)) != 0) {
            size_t l = strlen(names);
            snprintf(names + l, len - l, "%s%s", live ? ", " : "", sessions[i].name);
            live++;
        }
    }
    free(sessions);
    return live;
}

/* Stop process @p d (SIGTERM, then SIGKILL) and wait until it is gone; it is reaped if it is our
 * child. 0, or -1 after a message. */
static int stop_daemon(const struct proc_id *d)
{
    static const int sigs[] = {SIGTERM, SIGKILL};
    for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) {
        if (!proc_alive(d))
            break;
        if (k > 0)
            msg("lttng-sessiond (pid %d) did not stop within %d s of SIGTERM; sending SIGKILL",
                (int)d->pid, STOP_WAIT_MS / 1000);
        kill(d->pid, sigs[k]);
        for (const int64_t t0 = mono_ms(); mono_ms() - t0 < STOP_WAIT_MS;) {
            waitpid(d->pid, NULL, WNOHANG); /* reaps it if we started it */
            if (!proc_alive(d))
                break;
            sleep_ms(20);
        }
    }
    waitpid(d->pid, NULL, WNOHANG);
    if (proc_alive(d)) {
        err("lttng-sessiond (pid %d) still runs %d s after SIGKILL", (int)d->pid,
            STOP_WAIT_MS / 1000);
        return -1;
    }
    return 0;
}

/* Fork and exec `lttng-sessiond --no-kernel` in a new session (a terminal's Ctrl-C must not stop
 * it before the traces are flushed), not --daemonize, which would hide its pid; its output goes to
 * @p log. Its pid once the exec succeeded; -1 after a message. */
static pid_t spawn_sessiond(const char *log)
{
    int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (logfd < 0) {
        err("cannot create %s (lttng-sessiond's log): %s", log, strerror(errno));
        return -1;
    }
    int pipefd[2]; /* reports an exec failure to the parent */
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        err("cannot create a pipe to start lttng-sessiond: %s", strerror(errno));
        close(logfd);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        err("cannot fork to start lttng-sessiond: %s", strerror(errno));
        close(logfd);
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        reset_signal_handlers();
        setsid();
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        unsetenv("LD_PRELOAD");
        execlp("lttng-sessiond", "lttng-sessiond", "--no-kernel", (char *)NULL);
        int e = errno;
        if (write(pipefd[1], &e, sizeof(e)) < 0) {
        }
        _exit(127);
    }
    close(logfd);
    close(pipefd[1]);
    int child_errno = 0;
    ssize_t n;
    while ((n = read(pipefd[0], &child_errno, sizeof(child_errno))) < 0 && errno == EINTR) {
    }
    close(pipefd[0]);
    if (n == (ssize_t)sizeof(child_errno)) {
        waitpid(pid, NULL, 0);
        if (child_errno == ENOENT)
            err("LTTng is not installed: lttng-sessiond not found in PATH; install lttng-tools "
                "(Debian: apt-get install lttng-tools)");
        else
            err("cannot run lttng-sessiond: %s", strerror(child_errno));
        return -1;
    }
    return pid;
}

static void show_log(const char *log)
{
    FILE *f = fopen(log, "re");
    char line[512];
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        fprintf(stderr, "  %s", line);
    if (f != NULL)
        fclose(f);
}

/* A daemon this process uses: recorded (started by a glucx-trace) or not. */
struct daemon_use {
    int registered;        /* listed as a user of the recorded daemon */
    struct proc_id daemon; /* that daemon */
    struct proc_id self;
};

/* Start a daemon and record it with this process as its user (s: the state, lock held). 0 once
 * it answers, or when one started by someone else meanwhile answers instead (not recorded); -1
 * after a message. */
static int start_recorded_daemon(struct sessiond_state *s, struct daemon_use *u)
{
    char log[PATH_MAX + 32];
    if (state_path(log, sizeof(log), "sessiond.log") != 0)
        return -1;
    pid_t pid = spawn_sessiond(log);
    if (pid < 0)
        return -1;
    /* recorded at once: if this process dies from here on, the next glucx-trace stops it */
    s->daemon.pid = pid;
    s->daemon.start = proc_start(pid);
    s->nusers = 0;
    if (state_add_user(s, u->self) != 0 || state_write(s) != 0) {
        stop_daemon(&s->daemon);
        s->daemon.pid = 0;
        s->nusers = 0;
        return -1;
    }
    u->daemon = s->daemon;
    u->registered = 1;
    int64_t t0 = mono_ms(), exited_at = -1;
    int status = 0;
    for (;;) {
        const int answers = lt.session_daemon_alive() == 1;
        if (exited_at < 0 && waitpid(pid, &status, WNOHANG) == pid)
            exited_at = mono_ms(); /* another daemon may be starting: LTTng allows one */
        if (answers)
            break;
        if (got_signal || mono_ms() - t0 >= READY_WAIT_MS ||
            (exited_at >= 0 && mono_ms() - exited_at >= 5000)) {
            if (got_signal)
                err("interrupted by signal %d while lttng-sessiond (pid %d) started",
                    (int)got_signal, (int)pid);
            else if (exited_at >= 0)
                err("lttng-sessiond (pid %d) exited with status %d before becoming ready; its "
                    "log (%s):",
                    (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                    log);
            else
                err("lttng-sessiond (pid %d) did not answer within %d s; its log (%s):", (int)pid,
                    READY_WAIT_MS / 1000, log);
            if (!got_signal)
                show_log(log);
            if (exited_at < 0)
                stop_daemon(&s->daemon);
            s->daemon.pid = 0;
            s->nusers = 0;
            u->registered = 0;
            state_write(s);
            return -1;
        }
        sleep_ms(50);
    }
    if (exited_at >= 0) {
        msg("another lttng-sessiond started at the same time and answers: using it (glucx-trace "
            "does not stop it)");
        s->daemon.pid = 0;
        s->nusers = 0;
        u->registered = 0;
        return state_write(s);
    }
    msg("started lttng-sessiond (pid %d); the last glucx-trace using it stops it (log: %s)",
        (int)pid, log);
    return 0;
}

/* Wait until a session daemon answers, at most READY_WAIT_MS; 0 if one does. */
static int wait_answer(const struct proc_id *d)
{
    for (const int64_t t0 = mono_ms(); mono_ms() - t0 < READY_WAIT_MS;) {
        if (lt.session_daemon_alive() == 1)
            return 0;
        if (!proc_alive(d))
            return -1;
        sleep_ms(50);
    }
    return -1;
}

/* Make sure a session daemon answers, by the rules above; 0, or -1 after a message. */
static int daemon_acquire(struct daemon_use *u)
{
    memset(u, 0, sizeof(*u));
    u->self.pid = getpid();
    u->self.start = proc_start(u->self.pid);
    if (state_dir_init() != 0 || state_lock(1) != 0)
        return -1;
    struct sessiond_state s;
    int rc = state_read(&s);
    if (rc != 0)
        goto out;
    state_prune(&s);
    if (s.daemon.pid != 0 && wait_answer(&s.daemon) != 0) {
        if (s.nusers > 0) {
            err("lttng-sessiond (pid %d), started by glucx-trace and used by %zu other "
                "glucx-trace process(es), does not answer within %d s",
                (int)s.daemon.pid, s.nusers, READY_WAIT_MS / 1000);
            rc = -1;
            goto out;
        }
        msg("lttng-sessiond (pid %d), left by a glucx-trace that is gone, does not answer: "
            "stopping it",
            (int)s.daemon.pid);
        if (stop_daemon(&s.daemon) != 0) {
            rc = -1;
            goto out;
        }
        s.daemon.pid = 0;
    }
    if (s.daemon.pid != 0) {
        if (s.nusers == 0)
            msg("using lttng-sessiond (pid %d), left running by a glucx-trace that is gone; the "
                "last glucx-trace using it stops it",
                (int)s.daemon.pid);
        char names[512];
        sweep_sessions(names, sizeof(names));
        rc = state_add_user(&s, u->self);
        if (rc == 0)
            rc = state_write(&s);
        if (rc == 0) {
            u->daemon = s.daemon;
            u->registered = 1;
        }
    } else if (lt.session_daemon_alive() == 1) {
        rc = state_write(&s); /* a daemon glucx-trace did not start: never stopped by it */
    } else {
        rc = start_recorded_daemon(&s, u);
    }
out:
    state_unlock();
    free(s.users);
    return rc;
}

/* This process no longer uses the daemon: if it was the recorded daemon's last user, stop it. */
static void daemon_release(struct daemon_use *u)
{
    if (!u->registered)
        return;
    u->registered = 0;
    if (state_lock(0) != 0) {
        msg("lttng-sessiond (pid %d) may be left running: the next glucx-trace stops it when no "
            "one uses it",
            (int)u->daemon.pid);
        return;
    }
    struct sessiond_state s;
    if (state_read(&s) == 0) {
        state_prune(&s);
        size_t w = 0;
        for (size_t i = 0; i < s.nusers; i++)
            if (!same_proc(&s.users[i], &u->self))
                s.users[w++] = s.users[i];
        s.nusers = w;
        if (same_proc(&s.daemon, &u->daemon) && s.nusers == 0) {
            char names[512];
            int others = sweep_sessions(names, sizeof(names));
            if (others > 0)
                msg("lttng-sessiond (pid %d) left running: %d session(s) that glucx-trace did not "
                    "make use it (%s); the first glucx-trace to end after they are gone stops it",
                    (int)s.daemon.pid, others, names);
            else if (stop_daemon(&s.daemon) == 0)
                s.daemon.pid = 0;
        }
        state_write(&s);
    }
    state_unlock();
    free(s.users);
}

/* ---- record ------------------------------------------------------------------------------- */

/* Create DIR/glucx-pids, empty (see the header comment); its absolute path into @p path. 0, or
 * -1 after a warning: the command then runs unlisted and glucx-analyze keeps every process. */
static int create_pids_file(const char *dir, char *path, size_t len)
{
    if (snprintf(path, len, "%s/%s", dir, PIDS_FILE) >= (int)len) {
        msg("WARNING: %s/%s: path too long; no process list, so glucx-analyze cannot leave out "
            "the events of jobs traced at the same time",
            dir, PIDS_FILE);
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        msg("WARNING: cannot create %s: %s; no process list, so glucx-analyze cannot leave out "
            "the events of jobs traced at the same time",
            path, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
}

struct record_opts {
    const char *out;
    enum level level;
    const char *events; /* NULL: by level */
    uint64_t buffer_bytes;
    uint64_t rotate_bytes; /* 0: no rotation */
    int snapshot;          /* flight-recorder mode */
    char **command;
};

static int enable_events(struct lttng_handle *h, const struct record_opts *o, char *desc,
                         size_t desc_len)
{
    int selected[CATALOG_COUNT] = {0};
    int all = 0;
    if (o->events != NULL) {
        char list[4096];
        snprintf(list, sizeof(list), "%s", o->events);
        char *save = NULL;
        for (char *tok = strtok_r(list, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save)) {
            int i = catalog_find(tok);
            if (i < 0) {
                err("--events: unknown event '%s' (glucx-trace list shows the catalog)", tok);
                return -1;
            }
            selected[i] = 1;
        }
    } else if (o->level == LEVEL_FULL) {
        all = 1;
    } else {
        for (int i = 0; i < CATALOG_COUNT; i++)
            selected[i] = catalog[i].level == LEVEL_COLL;
    }
    struct lttng_event *ev = lt.event_create();
    if (ev == NULL) {
        err("out of memory");
        return -1;
    }
    int n = 0, rc = 0;
    for (int i = -1; i < CATALOG_COUNT; i++) {
        if ((i < 0 && !all) || (i >= 0 && (all || !selected[i])))
            continue;
        memset(ev->name, 0, sizeof(ev->name));
        snprintf(ev->name, sizeof(ev->name), "%s:%s", PROVIDER, i < 0 ? "*" : catalog[i].name);
        ev->type = LTTNG_EVENT_TRACEPOINT;
        ev->loglevel_type = LTTNG_EVENT_LOGLEVEL_ALL;
        ev->loglevel = -1;
        int r = lt.enable_event_with_exclusions(h, ev, CHANNEL_NAME, NULL, 0, NULL);
        if (r < 0) {
            err("cannot enable event %s: %s", ev->name, lt.strerror_(r));
            rc = -1;
            break;
        }
        n++;
    }
    lt.event_destroy(ev);
    if (all)
        snprintf(desc, desc_len, "all %d glucx events (level full)", CATALOG_COUNT);
    else
        snprintf(desc, desc_len, "%d glucx events (%s)", n,
                 o->events != NULL ? "--events" : "level coll");
    return rc;
}

/* LTTng-UST records every registered process of the user in every session that enables the
 * event: a trace made while another one records also holds the other command's events
 * (glucx-analyze leaves them out with DIR/glucx-pids). Say so when other sessions that record
 * glucx events are active. */
static int concurrent_sessions(const char *session)
{
    struct lttng_session *sessions = NULL;
    int n = lt.list_sessions(&sessions);
    int others = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(sessions[i].name, session) != 0 && sessions[i].enabled &&
            strncmp(sessions[i].name, "glucx-trace-", 12) == 0)
            others++;
    free(sessions);
    return others;
}

static int concurrent_seen; /* another glucx-trace session recorded while this one did */

static void warn_concurrent_sessions(const char *session)
{
    int others = concurrent_sessions(session);
    if (others > 0)
        msg("note: %d other glucx-trace session(s) are recording on this session daemon; "
            "LTTng records every traced process of the user in each session, so this trace will "
            "also hold their commands' events: glucx-analyze leaves them out (" PIDS_FILE
            " lists this command's processes), babeltrace2 shows them",
            others);
    concurrent_seen |= others > 0;
}

/* Archive the session's trace chunk whenever about @p bytes have been written. */
static int add_size_rotation(const char *session, uint64_t bytes)
{
    struct lttng_rotation_schedule *sched = lt.rotation_size_create();
    if (sched == NULL) {
        err("out of memory");
        return -1;
    }
    enum lttng_rotation_status st = lt.rotation_size_set(sched, bytes);
    if (st == LTTNG_ROTATION_STATUS_OK)
        st = lt.add_rotation_schedule(session, sched);
    lt.rotation_schedule_destroy(sched);
    if (st != LTTNG_ROTATION_STATUS_OK) {
        err("cannot set a size rotation of %" PRIu64 " bytes on session %s (rotation status %d)",
            bytes, session, (int)st);
        return -1;
    }
    return 0;
}

/* SIGUSR1 while the command runs: a snapshot (flight recorder) or an immediate rotation. */
static void on_request(const char *session, const struct record_opts *o)
{
    static unsigned snapshots;
    if (o->snapshot) {
        int r = lt.snapshot_record(session, NULL, 1);
        if (r < 0)
            err("cannot record a snapshot of session %s: %s", session, lt.strerror_(r));
        else
            msg("snapshot %u written into %s", ++snapshots, o->out);
    } else if (o->rotate_bytes > 0) {
        struct lttng_rotation_handle *rh = NULL;
        int r = lt.rotate_session(session, NULL, &rh);
        if (r < 0)
            err("cannot rotate session %s: %s", session, lt.strerror_(r));
        else
            msg("rotation requested: the current chunk goes to %s/archives/", o->out);
        if (rh != NULL)
            lt.rotation_handle_destroy(rh);
    } else {
        msg("SIGUSR1 ignored: it writes a snapshot with --snapshot, rotates with --rotate-size");
    }
}

/* The ring buffer per CPU: 4 sub-buffers (2 when small), sizes powers of two, >= one page. */
static void subbuffers(const struct record_opts *o, uint64_t *nsub_p, uint64_t *sub_p)
{
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    *nsub_p = o->buffer_bytes >= 4 * page ? 4 : 2;
    *sub_p = floor_pow2(o->buffer_bytes / *nsub_p);
    if (*sub_p < page)
        *sub_p = page;
}

static int setup_session(const char *session, const char *dir, const struct record_opts *o,
                         struct lttng_handle **handle_p)
{
    char url[PATH_MAX + 16];
    snprintf(url, sizeof(url), "file://%s", dir);
    int r =
        o->snapshot ? lt.create_session_snapshot(session, url) : lt.create_session(session, url);
    if (r < 0) {
        err("cannot create LTTng %ssession %s writing to %s: %s", o->snapshot ? "snapshot " : "",
            session, dir, lt.strerror_(r));
        return -1;
    }
    struct lttng_domain domain;
    memset(&domain, 0, sizeof(domain));
    domain.type = LTTNG_DOMAIN_UST;
    domain.buf_type = LTTNG_BUFFER_PER_UID;
    struct lttng_handle *h = lt.create_handle(session, &domain);
    if (h == NULL) {
        err("cannot create a handle on session %s", session);
        return -2;
    }
    *handle_p = h;

    uint64_t nsub, sub;
    subbuffers(o, &nsub, &sub);
    struct lttng_channel *chan = lt.channel_create(&domain);
    if (chan == NULL) {
        err("out of memory");
        return -2;
    }
    snprintf(chan->name, sizeof(chan->name), "%s", CHANNEL_NAME);
    /* discard (and count) what does not fit; a flight recorder overwrites the oldest instead */
    chan->attr.overwrite = o->snapshot ? 1 : 0;
    chan->attr.subbuf_size = sub;
    chan->attr.num_subbuf = nsub;
    r = lt.enable_channel(h, chan);
    lt.channel_destroy(chan);
    if (r < 0) {
        err("cannot create channel %s (%" PRIu64 " x %" PRIu64 " bytes per CPU) in session %s: %s",
            CHANNEL_NAME, nsub, sub, session, lt.strerror_(r));
        return -2;
    }
    const enum lttng_event_context_type ctxs[] = {LTTNG_EVENT_CONTEXT_VPID,
                                                  LTTNG_EVENT_CONTEXT_VTID};
    for (size_t i = 0; i < sizeof(ctxs) / sizeof(ctxs[0]); i++) {
        struct lttng_event_context ctx;
        memset(&ctx, 0, sizeof(ctx));
        ctx.ctx = ctxs[i];
        r = lt.add_context(h, &ctx, NULL, CHANNEL_NAME);
        if (r < 0) {
            err("cannot add the %s context to channel %s: %s", i == 0 ? "vpid" : "vtid",
                CHANNEL_NAME, lt.strerror_(r));
            return -2;
        }
    }
    char desc[128];
    if (enable_events(h, o, desc, sizeof(desc)) != 0)
        return -2;
    if (o->rotate_bytes > 0 && add_size_rotation(session, o->rotate_bytes) != 0)
        return -2;
    r = lt.start_tracing(session);
    if (r < 0) {
        err("cannot start tracing session %s: %s", session, lt.strerror_(r));
        return -2;
    }
    warn_concurrent_sessions(session);
    msg("recording %s into %s (%" PRIu64 " x %" PRIu64 " KiB buffers per CPU)", desc, dir, nsub,
        sub >> 10);
    if (o->rotate_bytes > 0)
        msg("rotating every %" PRIu64 " KiB into %s/archives/ (SIGUSR1 to pid %d: rotate now)",
            o->rotate_bytes >> 10, dir, (int)getpid());
    if (o->snapshot)
        msg("flight recorder: the latest events are kept; SIGUSR1 to pid %d writes a snapshot, "
            "one is written at the end",
            (int)getpid());
    return 0;
}

/* Run the command with the provider and the fork helper preloaded; its exit status as a shell
 * reports it (128+N when killed by signal N). */
static int run_command(char **argv, const char *provider, const char *fork_helper,
                       const char *pids_path, const char *session, const struct record_opts *o)
{
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(provider) + strlen(fork_helper) + (old ? strlen(old) : 0) + 3;
    char *preload = malloc(len);
    if (preload == NULL) {
        err("out of memory");
        return 127;
    }
    snprintf(preload, len, "%s:%s%s%s", provider, fork_helper, old && *old ? ":" : "",
             old ? old : "");
    pid_t pid = fork();
    if (pid < 0) {
        err("cannot fork to run %s: %s", argv[0], strerror(errno));
        free(preload);
        return 127;
    }
    if (pid == 0) {
        reset_signal_handlers();
        setenv("LD_PRELOAD", preload, 1);
        if (pids_path != NULL)
            setenv(PIDS_ENV, pids_path, 1);
        else
            unsetenv(PIDS_ENV); /* an outer glucx-trace's list is not this trace's */
        /* LTTng-UST lets a program run untraced once 3 s pass without its registration being
         * done, and drops the events it emits until then: on a loaded machine, or while several
         * glucx-trace start at once, that is the start of the command. Wait longer (bounded). */
        setenv("LTTNG_UST_REGISTER_TIMEOUT", REGISTER_TIMEOUT_MS, 0);
        /* AddressSanitizer refuses to start when a preloaded library precedes its runtime;
         * the provider is safe to load first, so let sanitized programs run traced */
        const char *asan = getenv("ASAN_OPTIONS");
        if (asan == NULL || strstr(asan, "verify_asan_link_order") == NULL) {
            char opts[4096];
            snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", asan ? asan : "",
                     asan && *asan ? ":" : "");
            setenv("ASAN_OPTIONS", opts, 1);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "glucx-trace: error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(preload);
    child_pid = pid;
    int status = 0;
    for (unsigned polls = 0;; polls++) {
        /* poll, so that a session started by another glucx-trace meanwhile is noticed */
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (got_usr1) {
            got_usr1 = 0;
            on_request(session, o);
        }
        if (r == 0) {
            if (!concurrent_seen && polls % 10 == 9)
                warn_concurrent_sessions(session); /* once, when one appears */
            sleep_ms(100);
            continue;
        }
        if (r < 0 && errno != EINTR) {
            err("waitpid(%d): %s", (int)pid, strerror(errno));
            child_pid = 0;
            return 127;
        }
    }
    child_pid = 0;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 127;
}

/* Stop (flushing the buffers), write the final snapshot in flight-recorder mode, read the loss
 * counters, destroy (which archives the last chunk of a rotating session). 0 on success. */
static int finish_session(const char *session, struct lttng_handle *h, int started,
                          const struct record_opts *o, uint64_t *discarded_p, uint64_t *lost_p,
                          int *have_counts_p)
{
    int rc = 0;
    *have_counts_p = 0;
    if (started && h != NULL) {
        int r = lt.stop_tracing(session);
        if (r < 0) {
            err("cannot stop tracing session %s: %s", session, lt.strerror_(r));
            rc = -1;
        }
        if (o->snapshot) {
            r = lt.snapshot_record(session, NULL, 1);
            if (r < 0) {
                err("cannot record the final snapshot of session %s: %s", session, lt.strerror_(r));
                rc = -1;
            }
        }
        struct lttng_channel *chans = NULL;
        int n = lt.list_channels(h, &chans);
        for (int i = 0; i < n; i++) {
            if (strcmp(chans[i].name, CHANNEL_NAME) != 0)
                continue;
            uint64_t d = 0, l = 0;
            if (lt.channel_get_discarded_event_count(&chans[i], &d) == 0 &&
                lt.channel_get_lost_packet_count(&chans[i], &l) == 0) {
                *discarded_p = d;
                *lost_p = l;
                *have_counts_p = 1;
            }
        }
        if (n < 0)
            err("cannot list the channels of session %s: %s", session, lt.strerror_(n));
        free(chans);
    }
    if (h != NULL)
        lt.destroy_handle(h);
    int r = lt.destroy_session(session);
    if (r < 0) {
        err("cannot destroy session %s: %s (remove it with: lttng destroy %s)", session,
            lt.strerror_(r), session);
        rc = -1;
    }
    return rc;
}

/* Whether DIR holds at least one CTF metadata file, i.e. some process registered. */
static int has_metadata(const char *dir, int depth)
{
    if (depth > 8)
        return 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
            continue;
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            found = has_metadata(path, depth + 1);
        else if (strcmp(e->d_name, "metadata") == 0)
            found = 1;
    }
    closedir(d);
    return found;
}

/* ---- is the written trace whole? ---------------------------------------------------------- */

/*
 * The consumer daemon writes each sub-buffer as one CTF packet, and stopping the session flushes
 * one more (possibly empty) packet per stream, so a trace written whole has a metadata file of
 * whole packets and stream files of whole packets, at least one each, holding every packet their
 * index lists. A write that failed (a full disk above all: the consumer only logs it, and LTTng
 * still counts 0 events discarded) leaves an empty or cut file instead.
 */
struct trace_check {
    int problems;
    uint64_t largest_packet; /* bytes */
    char text[2048];         /* the problems, "; "-separated */
};

static void check_note(struct trace_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void check_note(struct trace_check *c, const char *fmt, ...)
{
    if (c->problems++ >= 3)
        return; /* the first three are described, the others counted */
    size_t l = strlen(c->text);
    if (l > 0)
        l += (size_t)snprintf(c->text + l, sizeof(c->text) - l, "; ");
    if (l + 1 >= sizeof(c->text))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->text + l, sizeof(c->text) - l, fmt, ap);
    va_end(ap);
}

static uint64_t get_uint(const unsigned char *p, int bytes, int big_endian)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[big_endian ? i : bytes - 1 - i];
    return v;
}

/* Bytes at the start of the file @p fd (@p size bytes) made of whole packets; the largest into
 * *largest_p. Data stream packets: magic 0xc1fc1fc1 (in the trace's byte order) and LTTng's packet
 * context with packet_size in bits at byte 56. Metadata packets (@p metadata): magic 0x75d11d57,
 * packet_size in bits at byte 28. */
static uint64_t whole_packets(int fd, uint64_t size, int metadata, uint64_t *largest_p)
{
    const uint32_t magic = metadata ? 0x75d11d57u : 0xc1fc1fc1u;
    const size_t at = metadata ? 28 : 56, width = metadata ? 4 : 8;
    unsigned char h[64];
    uint64_t off = 0;
    while (off + at + width <= size) {
        if (pread(fd, h, at + width, (off_t)off) != (ssize_t)(at + width))
            break;
        int big;
        if (get_uint(h, 4, 0) == magic)
            big = 0;
        else if (get_uint(h, 4, 1) == magic)
            big = 1;
        else
            break;
        uint64_t bits = get_uint(h + at, (int)width, big);
        if (bits == 0 || bits % 8 != 0 || bits / 8 > size - off)
            break;
        if (bits / 8 > *largest_p)
            *largest_p = bits / 8;
        off += bits / 8;
    }
    return off;
}

/* TDIR/index/NAME.idx (CTF index, big-endian: magic 0xc1f1dcc1, versions, entry length; entries
 * begin with the packet's offset and its size in bits) must list only packets that the stream
 * file (@p size bytes) holds. */
static void check_index(const char *tdir, const char *name, const char *rel, uint64_t size,
                        struct trace_check *c)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/index/%s.idx", tdir, name) >= (int)sizeof(path))
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* no index: nothing more to compare */
    unsigned char h[16];
    struct stat st;
    if (fstat(fd, &st) == 0 && pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
        get_uint(h, 4, 1) == 0xc1f1dcc1u && get_uint(h + 12, 4, 1) >= 16) {
        const uint64_t len = get_uint(h + 12, 4, 1);
        const uint64_t n = ((uint64_t)st.st_size - sizeof(h)) / len;
        uint64_t listed = 0; /* bytes of the packets listed */
        int outside = 0;
        for (uint64_t i = 0; i < n; i++) {
            if (pread(fd, h, sizeof(h), (off_t)(sizeof(h) + i * len)) != (ssize_t)sizeof(h))
                break;
            const uint64_t off = get_uint(h, 8, 1), bytes = get_uint(h + 8, 8, 1) / 8;
            outside |= off > size || bytes > size - off;
            listed = bytes > UINT64_MAX - listed ? UINT64_MAX : listed + bytes;
        }
        if (outside)
            check_note(c,
                       "%s holds %" PRIu64 " bytes but its index lists %" PRIu64
                       " packets of %" PRIu64 " bytes",
                       rel, size, n, listed);
    }
    close(fd);
}

/* One trace directory (it holds the metadata file): its metadata and stream files. */
static void check_trace_dir(const char *tdir, const char *top, struct trace_check *c)
{
    DIR *d = opendir(tdir);
    if (d == NULL) {
        check_note(c, "cannot open %s: %s", tdir, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", tdir, e->d_name) >= (int)sizeof(path))
            continue;
        const char *rel = path + strlen(top) + 1;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            if (fd >= 0)
                close(fd);
            continue; /* index/ and anything not a file */
        }
        const int metadata = strcmp(e->d_name, "metadata") == 0;
        const uint64_t size = (uint64_t)st.st_size;
        const uint64_t whole = whole_packets(fd, size, metadata, &c->largest_packet);
        close(fd);
        if (size == 0)
            check_note(c, "%s is empty (0 bytes)", rel);
        else if (whole < size)
            check_note(c,
                       "%s ends inside a packet (%" PRIu64 " bytes, %" PRIu64 " in whole packets)",
                       rel, size, whole);
        if (!metadata)
            check_index(tdir, e->d_name, rel, size, c);
    }
    closedir(d);
}

/* Every trace directory under @p dir (LTTng's ust/uid/..., archives/<chunk>/..., snapshot-N-...).
 */
static void check_trace_tree(const char *dir, const char *top, int depth, struct trace_check *c)
{
    if (depth > 8)
        return;
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/metadata", dir) < (int)sizeof(path) &&
        access(path, F_OK) == 0)
        check_trace_dir(dir, top, c);
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "index") == 0)
            continue;
        struct stat st;
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path) &&
            lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            check_trace_tree(path, top, depth + 1, c);
    }
    closedir(d);
}

/* Bytes the session daemon may still write in @p dir's file system (root's: reserved blocks too).
 */
static int free_bytes(const char *dir, uint64_t *bytes_p)
{
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0)
        return -1;
    *bytes_p = (uint64_t)(geteuid() == 0 ? sv.f_bfree : sv.f_bavail) * sv.f_frsize;
    return 0;
}

static int cmd_record(int argc, char **argv)
{
    struct record_opts o = {NULL, LEVEL_FULL, NULL, 0, 0, 0, NULL};
    int i;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        const char *val = NULL;
#define OPT(name)                                                                                  \
    (strcmp(a, name) == 0 &&                                                                       \
     (i + 1 < argc ? (val = argv[++i], 1) : (die_usage("%s needs a value", name), 0)))
        if (OPT("-o") || OPT("--output")) {
            o.out = val;
        } else if (OPT("--level")) {
            if (strcmp(val, "coll") == 0)
                o.level = LEVEL_COLL;
            else if (strcmp(val, "full") == 0)
                o.level = LEVEL_FULL;
            else
                die_usage("--level takes coll or full, not '%s'", val);
        } else if (OPT("--events")) {
            o.events = val;
        } else if (OPT("--buffer-size")) {
            if (parse_size(val, &o.buffer_bytes) != 0)
                die_usage("--buffer-size: '%s' is not a size such as 4096, 512K or 64M", val);
        } else if (OPT("--rotate-size")) {
            if (parse_size(val, &o.rotate_bytes) != 0 || o.rotate_bytes == 0)
                die_usage("--rotate-size: '%s' is not a size such as 64M or 1G", val);
        } else if (strcmp(a, "--snapshot") == 0) {
            o.snapshot = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            die_usage("record: unknown option '%s' (the command follows `--`)", a);
        }
#undef OPT
    }
    if (o.out == NULL)
        die_usage("record: -o DIR is required");
    if (o.snapshot && o.rotate_bytes > 0)
        die_usage("record: --snapshot and --rotate-size exclude each other");
    if (i >= argc)
        die_usage("record: no command given after `--`");
    o.command = argv + i;
    if (o.buffer_bytes == 0)
        o.buffer_bytes = (o.level == LEVEL_FULL || o.events != NULL) ? (UINT64_C(16) << 20)
                                                                     : (UINT64_C(4) << 20);
    if (o.events != NULL) { /* validate before touching LTTng */
        char list[4096];
        snprintf(list, sizeof(list), "%s", o.events);
        char *save = NULL;
        int count = 0;
        for (char *tok = strtok_r(list, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save), count++)
            if (catalog_find(tok) < 0)
                die_usage("--events: unknown event '%s' (glucx-trace list shows the catalog)", tok);
        if (count == 0)
            die_usage("--events: empty list");
    }

    char provider[PATH_MAX], fork_helper[PATH_MAX], dir[PATH_MAX];
    if (load_lttng_ctl() != 0 || find_provider(provider) != 0 ||
        find_fork_helper(fork_helper, sizeof(fork_helper)) != 0)
        return 127;
    if (prepare_output_dir(o.out, dir) != 0)
        return 127;
    char pids_path[PATH_MAX + sizeof(PIDS_FILE) + 1];
    const int pids_ok = create_pids_file(dir, pids_path, sizeof(pids_path)) == 0;

    install_signal_handlers();
    int status = 127;
    struct daemon_use daemon;
    if (daemon_acquire(&daemon) != 0)
        return 127;
    char session[64]; /* session_is_stale() parses this name */
    snprintf(session, sizeof(session), "glucx-trace-%d-%ld", (int)getpid(), (long)time(NULL));
    struct lttng_handle *h = NULL;
    int setup = got_signal ? -1 : setup_session(session, dir, &o, &h);
    int started = setup == 0;
    if (setup == 0 && !got_signal) {
        status =
            run_command(o.command, provider, fork_helper, pids_ok ? pids_path : NULL, session, &o);
    } else if (got_signal) {
        msg("interrupted by signal %d before the command started", (int)got_signal);
        status = 128 + got_signal;
    }
    uint64_t discarded = 0, lost = 0;
    int have_counts = 0;
    int finish_rc = 0;
    if (setup != -1) /* the session exists */
        finish_rc = finish_session(session, h, started, &o, &discarded, &lost, &have_counts);
    daemon_release(&daemon);
    if (!started)
        return status;

    if (!has_metadata(dir, 0))
        msg("the trace is empty: no process of the command registered with LTTng (a static or "
            "setuid program, or one that clears LD_PRELOAD?)");
    /* never report a trace as written when its files are not whole */
    struct trace_check tc;
    memset(&tc, 0, sizeof(tc));
    check_trace_tree(dir, dir, 0, &tc);
    uint64_t nsub, sub, avail = 0;
    subbuffers(&o, &nsub, &sub);
    const uint64_t packet = tc.largest_packet > sub ? tc.largest_packet : sub;
    const int full = free_bytes(dir, &avail) == 0 && avail < packet;
    if (tc.problems > 0 || (finish_rc != 0 && full)) {
        char more[64] = "";
        if (tc.problems > 3)
            snprintf(more, sizeof(more), "; %d more problems", tc.problems - 3);
        if (full)
            err("the trace in %s could not be written: no space left on device (ENOSPC): its "
                "file system has %" PRIu64 " KiB free, less than one %" PRIu64 " KiB packet%s%s%s; "
                "free some space or record into another -o DIR",
                dir, avail >> 10, packet >> 10, tc.problems > 0 ? "; " : "", tc.text, more);
        else
            err("the trace in %s is incomplete: %s%s: the session daemon could not write it all "
                "(a full disk at the time, a quota or an I/O error; lttng-sessiond's log may say "
                "which)",
                dir, tc.text, more);
        return status == 0 ? 1 : status;
    }
    if (finish_rc != 0)
        msg("the trace in %s may be incomplete: the session did not end cleanly (above)", dir);
    else
        msg("trace written to %s (read it with: babeltrace2 %s)", dir, dir);
    if (concurrent_seen)
        msg("note: other glucx-trace sessions recorded at the same time: this trace may hold "
            "events of their commands too; glucx-analyze leaves out the processes that "
            "%s/" PIDS_FILE " does not list",
            dir);
    if (o.snapshot) {
        /* overwritten sub-buffers are not counted by LTTng as discarded or lost */
        msg("flight recorder: the snapshots hold the latest events that fit in %" PRIu64
            " KiB per CPU; older ones were overwritten (a larger --buffer-size keeps more)",
            o.buffer_bytes >> 10);
    } else if (have_counts) {
        if (discarded > 0 || lost > 0)
            msg("WARNING: %" PRIu64 " events discarded and %" PRIu64 " packets lost because the "
                "buffers were full: rerun with a larger --buffer-size (now %" PRIu64 " KiB per "
                "CPU) or --level coll",
                discarded, lost, o.buffer_bytes >> 10);
        else
            msg("0 events discarded, 0 packets lost");
    } else {
        msg("the number of discarded events is unknown (the session daemon did not report it)");
    }
    if (finish_rc != 0 && status == 0)
        status = 1;
    return status;
}

static int cmd_list(void)
{
    printf("# glucx events (LTTng provider `glucx`); units and meanings: trace/EVENTS.md\n");
    printf("# %-16s %-5s %s\n", "event", "level", "fields (after the vpid/vtid contexts)");
    for (int i = 0; i < CATALOG_COUNT; i++)
        printf("%-18s %-5s %s\n", catalog[i].name, level_name(catalog[i].level), catalog[i].fields);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die_usage("a subcommand is required");
    if (strcmp(argv[1], "record") == 0)
        return cmd_record(argc - 2, argv + 2);
    if (strcmp(argv[1], "list") == 0)
        return cmd_list();
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    die_usage("unknown subcommand '%s'", argv[1]);
}
