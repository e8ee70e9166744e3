/*
 * Harness of the Gloo conformance suite: runs a "rank body" on n ranks, either as n processes
 * (fork + exec of this test program; the child never runs GoogleTest) or as n threads of this
 * process (each its own device and context), and reports every rank's outcome to GoogleTest.
 *
 * Rank bodies do not use GoogleTest assertions (a child process has no GoogleTest state worth
 * reporting and a thread's failure must stop only that rank): they use RANK_CHECK, which throws
 * CheckFailure; the runner turns a rank's CheckFailure or unexpected exception into a test
 * failure naming the rank. Every job has a wall-clock deadline: process ranks still running then
 * are SIGKILLed by PID; a thread rank that does not finish ends the test program (it cannot be
 * stopped otherwise), after printing which rank hung. Besides the glucx device, a rank can
 * create Gloo's own TCP device (on 127.0.0.1) as the reference a test compares glucx with.
 */
#ifndef GLUCX_TEST_GLOO_HARNESS_H
#define GLUCX_TEST_GLOO_HARNESS_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include "support/timescale.h"

namespace glucx_test
{

using Ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/** @p base scaled by the suite's time-scale factor (glucx_test_ms(), tests/README.md): every
 * deadline a rank body sets for another rank is Scaled(base value for a loaded 2-core machine). */
inline Ms Scaled(Ms base)
{
    return Ms(glucx_test_ms(base.count()));
}

inline Ms Since(Clock::time_point t0)
{
    return std::chrono::duration_cast<Ms>(Clock::now() - t0);
}

/** A RANK_CHECK failed in a rank body: the body stops and the runner reports the message. */
struct CheckFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <typename... A> std::string Str(const A &...a)
{
    std::ostringstream os;
    (os << ... << a);
    return os.str();
}

[[noreturn]] void Fail(const char *file, int line, const char *cond, const std::string &msg);

/** Check in a rank body; the optional arguments are streamed into the message. */
#define RANK_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ::glucx_test::Fail(__FILE__, __LINE__, #cond, ::glucx_test::Str("", ##__VA_ARGS__));   \
    } while (0)

/** "<demangled type>: <what()>" */
std::string Describe(const std::exception &e);

enum class Mode { kProcesses, kThreads };

/** GoogleTest's printer for test parameters. */
inline void PrintTo(Mode m, std::ostream *os)
{
    *os << (m == Mode::kProcesses ? "processes" : "threads");
}

/** The items of a comma-separated list ("1,2,3"), empty ones left out. */
std::vector<std::string> SplitList(const std::string &s);

/** key=value parameters of a job, separated by spaces ("op=allreduce count=3"). */
class Params
{
  public:
    static Params Parse(const std::string &text);
    bool Has(const std::string &key) const;
    std::string Get(const std::string &key, const std::string &dflt = "") const;
    long long GetInt(const std::string &key, long long dflt) const;

  private:
    std::map<std::string, std::string> kv_;
};

/** What a rank body sees. One per rank; not shared between ranks. */
class RankEnv
{
  public:
    RankEnv(int rank, int size, Mode mode, std::string dir, Params params);
    ~RankEnv();

    const int rank;
    const int size;
    const Mode mode;
    /** The job's private directory (shared by its ranks; removed after the job). */
    const std::string dir;
    const Params params;

    /** This rank's device (created on first use with glucx::gloo::CreateDevice()). */
    std::shared_ptr<::gloo::transport::Device> &Device();

    /** This rank's reference device: Gloo's own TCP transport on 127.0.0.1 (created on first
     *  use). */
    std::shared_ptr<::gloo::transport::Device> &TcpDevice();

    /**
     * A new context of all the job's ranks, connected through Gloo's own
     * rendezvous::Context::connectFullMesh and a FileStore in a fresh directory of the job (the
     * k-th call of every rank uses the k-th directory, so all ranks must call it equally often).
     * @param timeout the context's timeout (set before connecting, so the transport gets it).
     * @param dev the device; this rank's Device() when null.
     */
    std::shared_ptr<::gloo::Context> Connect(Ms timeout,
                                             std::shared_ptr<::gloo::transport::Device> dev = {});

    /**
     * A new context of the job's ranks 0..size-1 (the caller must be one of them), connected as
     * Connect() does through a store directory named after @p name: every member passes the
     * same name, each name is used once per job, and ranks outside the group do not call.
     * @param base the context's base (gloo::Context::base, which AllreduceBcube uses).
     */
    std::shared_ptr<::gloo::Context> ConnectGroup(const std::string &name, int size, Ms timeout,
                                                  std::shared_ptr<::gloo::transport::Device> dev,
                                                  int base = 2);

    /** Out-of-band signalling between the job's ranks (a file in the job directory). */
    void Signal(const std::string &name);
    bool IsSignalled(const std::string &name) const;
    /** Wait until Signal(name) happened in some rank; false after limit (pass a Scaled() one). */
    bool Await(const std::string &name, Ms limit) const;

    /** End this rank by SIGKILL (process mode only). */
    [[noreturn]] void KillSelf();

  private:
    std::shared_ptr<::gloo::transport::Device> device_, tcp_device_;
    int connects_ = 0;
};

using Body = std::function<void(RankEnv &)>;
int RegisterBody(const char *name, Body fn);

/** Define a rank body registered under `name` (run by RunJob in every rank). */
#define GLUCX_RANK_BODY(name)                                                                      \
    static void name##_body(::glucx_test::RankEnv &env);                                           \
    static const int name##_registered = ::glucx_test::RegisterBody(#name, name##_body);           \
    static void name##_body(::glucx_test::RankEnv &env)

struct Job {
    std::string body;
    int size = 2;
    Mode mode = Mode::kProcesses;
    std::string params;
    /** Wall-clock bound for the whole job, ranks' teardown included (a base value: the runner
     * scales it, see Scaled()). */
    Ms deadline = Ms(60000);
    /** Ranks (process mode) that are meant to end by SIGKILL. */
    std::vector<int> killed;
};

struct RankOutcome {
    bool ok = false;
    std::string text;
};

/** Run job on its ranks; one outcome per rank. */
std::vector<RankOutcome> RunJob(const Job &job);

/** Run job and report (GoogleTest ADD_FAILURE) every rank that did not succeed. */
void ExpectJobOk(const Job &job);

/** The child side of process mode: returns -1 when argv is not a child command line. */
int ChildMain(int argc, char **argv);

/** Description of a job for messages ("body n=3 processes [params]"). */
std::string JobName(const Job &job);

// ---- expected failures ----------------------------------------------------------------------

struct Caught {
    bool threw = false;
    /** a gloo::Exception (IoException, ...) as the transport contract requires */
    bool gloo_exception = false;
    std::string description;
    std::string what;
    Ms elapsed{0};
};

/** Run f, timing it and catching what it throws. */
Caught CatchFrom(const std::function<void()> &f);

/** True when message names rank `peer` ("rank 2", "peer 2", "peer=2", ...). */
bool NamesRank(const std::string &message, int peer);

/** The rank numbers the message names (see NamesRank). */
std::vector<int> NamedRanks(const std::string &message);

/** Check that c is a gloo::Exception and its message names `peer` (any peer if peer < 0). */
void CheckGlooFailure(const Caught &c, const std::string &op, int peer);

/** Check that c's message names some rank other than `self`. */
void CheckNamesAPeer(const Caught &c, int self, const std::string &op);

/**
 * Run op on a failed context: it must throw a gloo::Exception naming a peer (not `self`), in
 * less than half of `timeout` (the context's, which it would wait on a healthy context).
 */
void CheckFailsPromptly(const std::function<void()> &op, const std::string &what, int self,
                        Ms timeout);

} // namespace glucx_test

#endif
