/*
 * glucx-trace: capture an LTTng trace of the glucx events of a command.
 *
 *   glucx-trace record -o DIR [--level coll|full] [--events LIST] [--buffer-size SIZE]
 *                      [--rotate-size SIZE | --snapshot] -- CMD...
 *   glucx-trace list
 *
 * A C program rather than a shell script because it must (1) stop and destroy the session on
 * every path, including SIGINT/SIGTERM, while forwarding those signals to the command, (2) know
 * the PID of a session daemon it starts so it stops exactly that one, and (3) read the number of
 * discarded events per channel, which liblttng-ctl gives as numbers (the lttng CLI only prints
 * them in warnings). liblttng-ctl is loaded with dlopen(), so a machine without LTTng gets a
 * clear message instead of a loader error.
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
#include <sys/stat.h>
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
        f, "usage: glucx-trace record -o DIR [--level coll|full] [--events LIST]\n"
           "                          [--buffer-size SIZE] [--rotate-size SIZE | --snapshot]\n"
           "                          -- COMMAND [ARGS...]\n"
           "       glucx-trace list\n"
           "\n"
           "record  trace the glucx events of COMMAND (and of every process it starts) into DIR\n"
           "        (must not exist or be empty). Starts an LTTng session daemon if none runs and\n"
           "        stops it afterwards. Exits with COMMAND's exit status.\n"
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
           "Environment: GLUCX_TRACE_PROVIDER=PATH overrides the provider library "
           "(" GLUCX_TRACE_PROVIDER_NAME ").\n");
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

/* ---- the session daemon ------------------------------------------------------------------- */

static pid_t sessiond_pid; /* the daemon we started, 0 if we use one that was running */
static char sessiond_log[64];

/* Start `lttng-sessiond --no-kernel` as our own child in a new session (so a Ctrl-C in the
 * terminal does not reach it before the trace is flushed), not --daemonize: that would hide the
 * PID we must stop. Its output goes to a temporary log shown on failure. */
static int start_sessiond(void)
{
    snprintf(sessiond_log, sizeof(sessiond_log), "/tmp/glucx-trace-sessiond-XXXXXX");
    int logfd = mkstemp(sessiond_log);
    if (logfd < 0) {
        err("cannot create a log file for lttng-sessiond: %s", strerror(errno));
        return -1;
    }
    int pipefd[2]; /* reports an exec failure to the parent */
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        err("pipe: %s", strerror(errno));
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
    ssize_t n = read(pipefd[0], &child_errno, sizeof(child_errno));
    close(pipefd[0]);
    if (n == (ssize_t)sizeof(child_errno)) {
        waitpid(pid, NULL, 0);
        if (child_errno == ENOENT)
            err("LTTng is not installed: lttng-sessiond not found in PATH; install lttng-tools "
                "(Debian: apt-get install lttng-tools)");
        else
            err("cannot run lttng-sessiond: %s", strerror(child_errno));
        unlink(sessiond_log);
        return -1;
    }
    sessiond_pid = pid;
    /* ready once it answers; bounded */
    for (int i = 0; i < 200; i++) {
        if (lt.session_daemon_alive() == 1)
            return 0;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            sessiond_pid = 0;
            err("lttng-sessiond (pid %d) exited with status %d before becoming ready; its log "
                "(%s):",
                (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                sessiond_log);
            FILE *f = fopen(sessiond_log, "r");
            char line[512];
            while (f != NULL && fgets(line, sizeof(line), f) != NULL)
                fprintf(stderr, "  %s", line);
            if (f != NULL)
                fclose(f);
            return -1;
        }
        sleep_ms(50);
    }
    err("lttng-sessiond (pid %d) did not become ready within 10 s (log: %s)", (int)pid,
        sessiond_log);
    return -1;
}

static void stop_sessiond(void)
{
    if (sessiond_pid <= 0)
        return;
    /* someone else created sessions on "our" daemon meanwhile: do not destroy them */
    struct lttng_session *sessions = NULL;
    int others = lt.list_sessions(&sessions);
    free(sessions);
    if (others > 0) {
        msg("lttng-sessiond (pid %d) left running: %d other recording session(s) use it; stop "
            "it with: kill %d",
            (int)sessiond_pid, others, (int)sessiond_pid);
        return;
    }
    kill(sessiond_pid, SIGTERM);
    int status;
    for (int i = 0; i < 200; i++) { /* 10 s, then force */
        pid_t r = waitpid(sessiond_pid, &status, WNOHANG);
        if (r == sessiond_pid || (r < 0 && errno == ECHILD)) {
            sessiond_pid = 0;
            unlink(sessiond_log);
            return;
        }
        sleep_ms(50);
    }
    msg("lttng-sessiond (pid %d) did not stop within 10 s of SIGTERM; sending SIGKILL",
        (int)sessiond_pid);
    kill(sessiond_pid, SIGKILL);
    waitpid(sessiond_pid, &status, 0);
    sessiond_pid = 0;
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

    /* ring buffer per CPU: 4 sub-buffers (2 when small), sizes powers of two, >= one page */
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t total = o->buffer_bytes;
    uint64_t nsub = total >= 4 * page ? 4 : 2;
    uint64_t sub = floor_pow2(total / nsub);
    if (sub < page)
        sub = page;
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
    if (lt.session_daemon_alive() != 1) {
        if (start_sessiond() != 0) {
            stop_sessiond();
            return 127;
        }
        msg("started lttng-sessiond (pid %d); it is stopped at the end", (int)sessiond_pid);
    }
    char session[64];
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
    stop_sessiond();
    if (!started)
        return status;

    if (!has_metadata(dir, 0))
        msg("the trace is empty: no process of the command registered with LTTng (a static or "
            "setuid program, or one that clears LD_PRELOAD?)");
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
