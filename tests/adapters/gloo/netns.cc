/*
 * Network namespaces and record sizes for the Gloo conformance suite (see netns.h).
 */
#include "netns.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <glucx/glucx.h>
#include <glucx/gloo.h>

extern char **environ;

namespace glucx_test
{

namespace
{

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

} // namespace

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

size_t CheckRecordOver(const RankEnv &env, const char *tag)
{
    std::string net;
    glucx::gloo::attr a;
    a.iface = env.params.Get("iface");
    const std::string why = glucx::gloo::ChooseNetDevices(a, &net);
    RANK_CHECK(why.empty(), "ChooseNetDevices: ", why);
    const size_t record = RecordBytes(net, env.size);
    const long long over = env.params.GetInt("record_over", 0);
    RANK_CHECK(over <= 0 || record > size_t(over), "the glucx record here has ", record,
               " bytes, not more than ", over);
    if (env.rank == 0)
        std::fprintf(stderr, "[%s] glucx record %zu bytes\n", tag, record);
    return record;
}

/* As `ip netns exec` does, /sys is mounted again in a private mount namespace: UCX lists network
 * devices from /sys/class/net, which otherwise still shows the namespace this process came from;
 * UCX's threads start inside the namespace since the rank enters it first. */
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
    RANK_CHECK(mount(name.c_str(), "/sys", "sysfs", 0, nullptr) == 0,
               "mount sysfs on /sys: ", std::strerror(errno));
}

bool CanCreateNamespaces()
{
    return geteuid() == 0 && Ip({"-V"}, true) == 0;
}

FiveInterfaces::FiveInterfaces()
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

FiveInterfaces::~FiveInterfaces()
{
    /* deleting a namespace deletes its veth ends, and so the pairs */
    Ip({"netns", "del", a_}, true);
    Ip({"netns", "del", b_}, true);
}

/* Whether @p iface in the ranks' namespace has its carrier (LOWER_UP). */
bool FiveInterfaces::Running(const std::string &iface) const
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

void FiveInterfaces::Sweep()
{
    std::error_code ec;
    const std::regex name("^glx-addr5-([0-9]+)-[ab]$");
    for (const auto &e : std::filesystem::directory_iterator("/var/run/netns", ec)) {
        std::smatch m;
        const std::string n = e.path().filename().string();
        if (std::regex_match(n, m, name) && kill(std::stoi(m[1].str()), 0) != 0 && errno == ESRCH)
            Ip({"netns", "del", n}, true);
    }
}

} // namespace glucx_test
