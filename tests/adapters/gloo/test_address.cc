/*
 * Pair addresses (issue 14): Pair::address() fits gloo::transport::Address::kMaxByteSize (192
 * bytes), which Gloo's rendezvous::ContextFactory relies on, although the glucx record it stands
 * for is larger (and grows with every network interface UCX uses): the pair address is the
 * rank's compact address, whose record the peers fetch from its listener.
 *
 * - in this process: every device choice gives 52-byte pair addresses while a glucx record made
 *   the same way is larger than 192 bytes; the device names where it serves records;
 * - ranks in a network namespace with lo and 5 veth interfaces (created and deleted by the test;
 *   skipped unless root): the record there is larger than 192 bytes, the pair addresses are not,
 *   and connectFullMesh + allreduce work, with every device and with one named interface;
 * - a mixed-up pair address (another digest) fails the last connect with gloo::IoException
 *   naming both ranks, promptly;
 * - UCX_TLS=shm,self (no network transport for the listener): the pair address is the whole
 *   record again, and connectFullMesh still works.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include <gloo/common/error.h>
#include <gloo/transport/address.h>
#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>

#include <glucx/glucx.h>
#include <glucx/gloo.h>

#include "harness.h"
#include "values.h"

extern char **environ;

namespace glucx_test
{
namespace
{

constexpr size_t kMax = ::gloo::transport::Address::kMaxByteSize;

/* Length of the glucx address record this process would publish for a communicator of
 * @p size ranks on a context with @p net_devices ("" = UCX's default), made with the C API
 * directly: what Pair::address() would be without compact addresses. */
size_t RecordBytes(const std::string &net_devices, int size)
{
    glucx_context_params_t cp;
    std::memset(&cp, 0, sizeof(cp));
    if (!net_devices.empty()) {
        cp.field_mask = GLUCX_CONTEXT_PARAM_NET_DEVICES;
        cp.net_devices = net_devices.c_str();
    }
    glucx_context_t *ctx = nullptr;
    RANK_CHECK(glucx_context_create(&cp, &ctx) == GLUCX_OK,
               "glucx_context_create: ", glucx_last_error());
    glucx_comm_params_t p;
    std::memset(&p, 0, sizeof(p));
    p.rank = 0;
    p.size = size;
    glucx_comm_t *comm = nullptr;
    const void *rec = nullptr;
    size_t len = 0;
    glucx_status_t st = glucx_comm_prepare(ctx, &p, &comm);
    if (st == GLUCX_OK)
        st = glucx_comm_address(comm, &rec, &len);
    std::string why = st == GLUCX_OK ? "" : glucx_last_error();
    glucx_comm_destroy(comm);
    glucx_context_destroy(ctx);
    RANK_CHECK(st == GLUCX_OK, "a glucx record: ", why);
    return len;
}

// ---- in this process ------------------------------------------------------------------------

TEST(PairAddress, FitsKMaxByteSizeWhereTheRecordDoesNot)
{
    struct Choice {
        const char *iface, *hostname, *served_at;
    };
    for (const Choice &c : {Choice{"", "", nullptr}, Choice{"lo", "", "127.0.0.1"},
                            Choice{"", "127.0.0.1", "127.0.0.1"}}) {
        const std::string what = Str("iface '", c.iface, "', hostname '", c.hostname, "'");
        glucx::gloo::attr a;
        a.iface = c.iface;
        a.hostname = c.hostname;
        std::shared_ptr<::gloo::transport::Device> dev;
        ASSERT_NO_THROW(dev = glucx::gloo::CreateDevice(a)) << what;
        if (c.served_at != nullptr) {
            EXPECT_NE(dev->str().find(Str("served at ", c.served_at, ";")), std::string::npos)
                << what << ": " << dev->str();
        }
        auto ctx = dev->createContext(1, 3);
        for (int peer : {0, 2}) {
            auto &pair = ctx->createPair(peer);
            ASSERT_NE(pair, nullptr) << what;
            const std::vector<char> bytes = pair->address().bytes();
            EXPECT_EQ(bytes.size(), size_t(GLUCX_COMPACT_ADDRESS_BYTES)) << what;
            EXPECT_LE(bytes.size(), kMax) << what;
            EXPECT_NE(pair->address().str().find("compact"), std::string::npos)
                << what << ": " << pair->address().str();
        }
        /* not vacuous: the record itself does not fit */
        size_t record = 0;
        ASSERT_NO_THROW(record = RecordBytes(c.iface, 3)) << what;
        EXPECT_GT(record, kMax) << what;
    }
}

// ---- rank bodies ------------------------------------------------------------------------------

Ms Timeout(const RankEnv &env)
{
    return Scaled(Ms(env.params.GetInt("timeout_ms", 30000)));
}

/* Enter the network namespace the job names (params netns=NAME, /var/run/netns/NAME) before
 * anything opens a socket or starts a thread: UCX's threads then start inside it. As
 * `ip netns exec` does, /sys is mounted again in a private mount namespace: UCX lists network
 * devices from /sys/class/net, which otherwise still shows the namespace this process came from. */
void EnterNetns(const RankEnv &env)
{
    const std::string name = env.params.Get("netns");
    if (name.empty())
        return;
    RANK_CHECK(env.mode == Mode::kProcesses, "netns needs process ranks");
    const std::string path = "/var/run/netns/" + name;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    RANK_CHECK(fd >= 0, "open ", path, ": ", std::strerror(errno));
    int rc = setns(fd, CLONE_NEWNET);
    int err = errno;
    close(fd);
    RANK_CHECK(rc == 0, "setns(", path, "): ", std::strerror(err));
    RANK_CHECK(unshare(CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS): ", std::strerror(errno));
    RANK_CHECK(mount("none", "/", nullptr, MS_REC | MS_SLAVE, nullptr) == 0,
               "making / a slave mount: ", std::strerror(errno));
    RANK_CHECK(umount2("/sys", MNT_DETACH) == 0, "umount /sys: ", std::strerror(errno));
    RANK_CHECK(mount(name.c_str(), "/sys", "sysfs", 0, nullptr) == 0, "mount sysfs on /sys: ",
               std::strerror(errno));
}

/* params: [netns=NAME] [iface=...] [record_over=BYTES] [compact=0|1]
 * connectFullMesh, then: every pair address fits kMaxByteSize (and is the compact address, or
 * with compact=0 the whole record, longer), a record made here is longer than record_over, and
 * allreduces and a point-to-point ring are right. */
GLUCX_RANK_BODY(address_fits)
{
    EnterNetns(env);
    const bool compact = env.params.GetInt("compact", 1) != 0;
    auto ctx = env.Connect(Timeout(env));
    for (int peer = 0; peer < env.size; peer++) {
        if (peer == env.rank)
            continue;
        const size_t n = ctx->getPair(peer)->address().bytes().size();
        if (compact)
            RANK_CHECK(n == size_t(GLUCX_COMPACT_ADDRESS_BYTES) && n <= kMax, "pair ", peer,
                       ": address of ", n, " bytes, expected the ", GLUCX_COMPACT_ADDRESS_BYTES,
                       "-byte compact address");
        else
            RANK_CHECK(n > size_t(GLUCX_COMPACT_ADDRESS_BYTES), "pair ", peer, ": address of ", n,
                       " bytes, expected the whole record");
    }
    const long long over = env.params.GetInt("record_over", 0);
    if (over > 0) {
        std::string net;
        glucx::gloo::attr a;
        a.iface = env.params.Get("iface");
        RANK_CHECK(glucx::gloo::ChooseNetDevices(a, &net).empty(), "ChooseNetDevices");
        const size_t record = RecordBytes(net, env.size);
        RANK_CHECK(record > size_t(over), "the glucx record here has ", record,
                   " bytes, not more than ", over);
        if (env.rank == 0)
            std::fprintf(stderr, "[address_fits] record %zu bytes, pair address %d bytes\n", record,
                         compact ? GLUCX_COMPACT_ADDRESS_BYTES : -1);
    }
    AllreduceLoop(ctx, 140, 3);
    /* a ring of point-to-point messages: values from (sender, receiver) */
    const int right = (env.rank + 1) % env.size, left = (env.rank + env.size - 1) % env.size;
    std::vector<int64_t> s(513), r(513, -1);
    for (size_t i = 0; i < s.size(); i++)
        s[i] = int64_t(env.rank) * 1000003 + int64_t(right) * 7919 + int64_t(i);
    auto sb = ctx->createUnboundBuffer(s.data(), s.size() * sizeof(int64_t));
    auto rb = ctx->createUnboundBuffer(r.data(), r.size() * sizeof(int64_t));
    rb->recv(left, 141);
    sb->send(right, 141);
    RANK_CHECK(rb->waitRecv(), "ring receive from rank ", left);
    RANK_CHECK(sb->waitSend(), "ring send to rank ", right);
    for (size_t i = 0; i < r.size(); i++)
        RANK_CHECK(r[i] == int64_t(left) * 1000003 + int64_t(env.rank) * 7919 + int64_t(i),
                   "ring element ", i, " from rank ", left, ": ", r[i]);
}

/* Publish @p bytes as this rank's entry @p tag in the job directory; read every rank's. */
std::vector<std::vector<char>> ExchangeFiles(RankEnv &env, const std::string &tag,
                                             const std::vector<char> &bytes)
{
    const std::string mine = Str(env.dir, "/", tag, ".", env.rank);
    {
        std::ofstream f(mine + ".tmp", std::ios::binary);
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    RANK_CHECK(std::rename((mine + ".tmp").c_str(), mine.c_str()) == 0, "rename ", mine);
    env.Signal(Str(tag, ".", env.rank));
    std::vector<std::vector<char>> all(env.size);
    for (int r = 0; r < env.size; r++) {
        RANK_CHECK(env.Await(Str(tag, ".", r), Scaled(Ms(30000))), "rank ", r, " did not publish ",
                   tag);
        std::ifstream f(Str(env.dir, "/", tag, ".", r), std::ios::binary);
        all[r].assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    return all;
}

/* Rank 0 connects with one bit of rank 1's digest flipped (a mixed-up address): its last
 * Pair::connect throws gloo::IoException naming ranks 0 and 1, well before the timeout; the
 * other ranks' connect fails too (rank 0 never takes part), within the timeout. */
GLUCX_RANK_BODY(address_mixed_up)
{
    const Ms timeout = Timeout(env);
    auto tctx = env.Device()->createContext(env.rank, env.size);
    tctx->setTimeout(timeout);
    std::vector<char> mine;
    for (int peer = 0; peer < env.size; peer++)
        if (peer != env.rank)
            mine = tctx->createPair(peer)->address().bytes();
    RANK_CHECK(mine.size() == size_t(GLUCX_COMPACT_ADDRESS_BYTES), "address of ", mine.size(),
               " bytes");
    auto all = ExchangeFiles(env, "addr", mine);
    if (env.rank == 0)
        all[1][24 + 2] ^= 0x04; /* the digest (glucx.h: the compact address layout in comm.c) */
    Caught c = CatchFrom([&] {
        for (int peer = 0; peer < env.size; peer++)
            if (peer != env.rank)
                tctx->getPair(peer)->connect(all[peer]);
    });
    if (env.rank == 0) {
        CheckGlooFailure(c, "connect with rank 1's address mixed up", 1);
        RANK_CHECK(NamesRank(c.what, 0), "the message does not name rank 0: ", c.what);
        RANK_CHECK(c.what.find("digest") != std::string::npos, "no 'digest' in: ", c.what);
        RANK_CHECK(c.elapsed < timeout / 2, "the mixed-up address failed after ", c.elapsed.count(),
                   " ms (timeout ", timeout.count(), " ms)");
    } else {
        CheckGlooFailure(c, "connect while rank 0 fails", -1);
        RANK_CHECK(c.elapsed < timeout + Scaled(Ms(10000)), "failed only after ", c.elapsed.count(),
                   " ms");
    }
}

// ---- jobs -------------------------------------------------------------------------------------

void RunAddress(const std::string &body, int size, Mode mode, const std::string &params)
{
    Job job;
    job.body = body;
    job.size = size;
    job.mode = mode;
    job.params = params;
    job.deadline = Ms(90000);
    ExpectJobOk(job);
}

TEST(PairAddress, ConnectFullMeshN3Processes)
{
    RunAddress("address_fits", 3, Mode::kProcesses, "record_over=192");
}

TEST(PairAddress, ConnectFullMeshN4Threads)
{
    RunAddress("address_fits", 4, Mode::kThreads, "");
}

TEST(PairAddress, TcpLoopbackN3Processes)
{
    RunAddress("address_fits", 3, Mode::kProcesses,
               "iface=lo env:UCX_TLS=tcp env:UCX_NET_DEVICES=lo record_over=192");
}

/* No network transport: the listener cannot be reached, the whole record is the address. */
TEST(PairAddress, ShmOnlyFallsBackToTheRecordN3Processes)
{
    RunAddress("address_fits", 3, Mode::kProcesses, "compact=0 env:UCX_TLS=shm,self");
}

TEST(PairAddress, MixedUpAddressNamesBothRanksN2Threads)
{
    RunAddress("address_mixed_up", 2, Mode::kThreads, "timeout_ms=5000");
}

TEST(PairAddress, MixedUpAddressNamesBothRanksN3Processes)
{
    RunAddress("address_mixed_up", 3, Mode::kProcesses, "timeout_ms=5000");
}

// ---- a network namespace with five interfaces --------------------------------------------------

/* Run "ip ARGS..." (at most a scaled 30 s) with its output into @p out (NULL: inherited,
 * "/dev/null": dropped); the exit code, -1 if it could not run or hung. */
int IpTo(const std::vector<std::string> &args, const char *out)
{
    std::vector<std::string> argv = {"ip"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char *> cargv;
    for (auto &s : argv)
        cargv.push_back(s.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out != nullptr) {
        posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_TRUNC, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, "ip", &fa, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    const auto end = Clock::now() + Scaled(Ms(30000));
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (w < 0 || Clock::now() >= end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(Ms(5));
    }
}

int Ip(const std::vector<std::string> &args, bool quiet = false)
{
    return IpTo(args, quiet ? "/dev/null" : nullptr);
}

bool CanCreateNamespaces()
{
    return geteuid() == 0 && Ip({"-V"}, true) == 0;
}

/* Namespaces "glx-addr5-<pid>-a" (the ranks: lo + 5 veth ends) and "...-b" (the veth peers),
 * deleted by the destructor whatever happened; those of runs whose process is gone (killed at
 * their deadline) are deleted first. */
class FiveInterfaces
{
  public:
    static constexpr int kInterfaces = 5;

    FiveInterfaces()
    {
        Sweep();
        const std::string pid = std::to_string(getpid());
        a_ = "glx-addr5-" + pid + "-a";
        b_ = "glx-addr5-" + pid + "-b";
        ok_ = Ip({"netns", "add", a_}) == 0;
        ok_ = ok_ && Ip({"netns", "add", b_}) == 0;
        ok_ = ok_ && Ip({"-n", a_, "link", "set", "lo", "up"}) == 0;
        for (int i = 1; ok_ && i <= kInterfaces; i++) {
            /* created inside the namespaces: nothing is left in this one */
            const std::string va = Str("gx", i, "a", pid), vb = Str("gx", i, "b", pid);
            ok_ = Ip({"link", "add", va, "netns", a_, "type", "veth", "peer", "name", vb, "netns",
                      b_}) == 0;
            ok_ = ok_ && Ip({"-n", a_, "addr", "add", Str("10.233.", i, ".1/24"), "dev", va}) == 0;
            ok_ = ok_ && Ip({"-n", b_, "addr", "add", Str("10.233.", i, ".2/24"), "dev", vb}) == 0;
            ok_ = ok_ && Ip({"-n", a_, "link", "set", va, "up"}) == 0;
            ok_ = ok_ && Ip({"-n", b_, "link", "set", vb, "up"}) == 0;
            ifaces_.push_back(va);
        }
        /* UCX leaves out an interface that is not running yet (a veth end gets its carrier a
         * moment after both ends are up) */
        const auto end = Clock::now() + Scaled(Ms(30000));
        for (size_t i = 0; ok_ && i < ifaces_.size();) {
            if (Running(ifaces_[i]))
                i++;
            else if (Clock::now() >= end)
                ok_ = false;
            else
                std::this_thread::sleep_for(Ms(10));
        }
    }

    ~FiveInterfaces()
    {
        /* deleting a namespace deletes its veth ends, and so the pairs */
        Ip({"netns", "del", a_}, true);
        Ip({"netns", "del", b_}, true);
    }

    bool ok() const
    {
        return ok_;
    }
    const std::string &ns() const
    {
        return a_;
    }
    const std::vector<std::string> &ifaces() const
    {
        return ifaces_;
    }

  private:
    /* Whether @p iface in the ranks' namespace has its carrier (LOWER_UP). */
    bool Running(const std::string &iface) const
    {
        char tmpl[] = "/tmp/glucx-addr5-XXXXXX";
        int fd = mkstemp(tmpl);
        if (fd < 0)
            return false;
        close(fd);
        std::vector<std::string> argv = {"-n", a_, "-o", "link", "show", "dev", iface};
        bool up = false;
        if (IpTo(argv, tmpl) == 0) {
            std::ifstream f(tmpl);
            std::string line;
            std::getline(f, line);
            up = line.find("LOWER_UP") != std::string::npos;
        }
        unlink(tmpl);
        return up;
    }

    static void Sweep()
    {
        std::error_code ec;
        const std::regex name("^glx-addr5-([0-9]+)-[ab]$");
        for (const auto &e : std::filesystem::directory_iterator("/var/run/netns", ec)) {
            std::smatch m;
            const std::string n = e.path().filename().string();
            if (std::regex_match(n, m, name) && kill(std::stoi(m[1].str()), 0) != 0 &&
                errno == ESRCH)
                Ip({"netns", "del", n}, true);
        }
    }

    std::string a_, b_;
    bool ok_ = false;
    std::vector<std::string> ifaces_;
};

TEST(PairAddress, FiveInterfacesNamespaceN3Processes)
{
    if (!CanCreateNamespaces())
        GTEST_SKIP() << "needs root and iproute2 to create network namespaces";
    FiveInterfaces ns;
    ASSERT_TRUE(ns.ok()) << "cannot set up the namespace " << ns.ns();
    /* every device (UCX uses lo and the 5 veth ends), then one named veth end */
    RunAddress("address_fits", 3, Mode::kProcesses, "netns=" + ns.ns() + " record_over=192");
    RunAddress("address_fits", 3, Mode::kProcesses,
               "netns=" + ns.ns() + " iface=" + ns.ifaces()[2] + " record_over=192");
}

} // namespace
} // namespace glucx_test
