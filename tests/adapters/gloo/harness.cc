/*
 * Rank runner of the Gloo conformance suite (see harness.h).
 */
#include "harness.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <typeinfo>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <glucx/gloo.h>

namespace glucx_test
{

namespace
{

const char kChildFlag[] = "--glucx-rank-child";

std::map<std::string, Body> &Registry()
{
    static std::map<std::string, Body> registry;
    return registry;
}

std::string ModeName(Mode m)
{
    return m == Mode::kProcesses ? "processes" : "threads";
}

/* A fresh private directory for one job. */
std::string MakeJobDir()
{
    const char *base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/glucx-gloo-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data()))
        throw std::runtime_error(Str("mkdtemp(", templ, "): ", std::strerror(errno)));
    return std::string(buf.data());
}

void RemoveJobDir(const std::string &dir)
{
    const char *keep = std::getenv("GLOO_TEST_KEEP");
    if (keep && *keep) {
        std::fprintf(stderr, "[harness] keeping job directory %s\n", dir.c_str());
        return;
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

std::string OutcomePath(const std::string &dir, int rank)
{
    return Str(dir, "/outcome.", rank);
}

/* Run a body, turning whatever it throws into an outcome. */
RankOutcome RunBody(const Body &body, RankEnv &env)
{
    RankOutcome o;
    try {
        body(env);
        o.ok = true;
    } catch (const CheckFailure &e) {
        o.text = e.what();
    } catch (const std::exception &e) {
        o.text = "unexpected exception " + Describe(e);
    } catch (...) {
        o.text = "unexpected exception of a non-standard type";
    }
    return o;
}

/* Apply the job's "env:NAME=value" parameters to this process. */
void ApplyEnv(const std::map<std::string, std::string> &kv,
              std::map<std::string, std::string> *saved)
{
    for (const auto &[k, v] : kv) {
        if (k.rfind("env:", 0) != 0)
            continue;
        std::string name = k.substr(4);
        if (saved) {
            const char *old = std::getenv(name.c_str());
            (*saved)[name] = old ? std::string("=") + old : std::string();
        }
        setenv(name.c_str(), v.c_str(), 1);
    }
}

std::map<std::string, std::string> ParseKv(const std::string &text)
{
    std::map<std::string, std::string> kv;
    std::istringstream is(text);
    std::string tok;
    while (is >> tok) {
        auto eq = tok.find('=');
        if (eq == std::string::npos)
            kv[tok] = "1";
        else
            kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
    return kv;
}

std::vector<RankOutcome> RunProcesses(const Job &job, const Body &, const std::string &dir)
{
    const pid_t parent = getpid();
    std::vector<pid_t> pids(job.size, -1);
    std::vector<RankOutcome> out(job.size);
    std::fflush(nullptr);
    for (int r = 0; r < job.size; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            out[r].text = Str("fork: ", std::strerror(errno));
            continue;
        }
        if (pid == 0) {
            /* The child dies with the runner (e.g. when ctest times the test out). */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(120);
            std::string rank = std::to_string(r), size = std::to_string(job.size);
            const char *argv[] = {"glucx-gloo-rank", kChildFlag,  job.body.c_str(),   rank.c_str(),
                                  size.c_str(),      dir.c_str(), job.params.c_str(), nullptr};
            execv("/proc/self/exe", const_cast<char *const *>(argv));
            std::fprintf(stderr, "execv(/proc/self/exe): %s\n", std::strerror(errno));
            _exit(121);
        }
        pids[r] = pid;
    }

    std::vector<int> status(job.size, 0);
    std::vector<bool> done(job.size, false);
    for (int r = 0; r < job.size; r++)
        done[r] = pids[r] < 0;
    const auto deadline = Clock::now() + Scaled(job.deadline);
    for (;;) {
        bool all = true;
        for (int r = 0; r < job.size; r++) {
            if (done[r])
                continue;
            pid_t w = waitpid(pids[r], &status[r], WNOHANG);
            if (w == pids[r])
                done[r] = true;
            else
                all = false;
        }
        if (all || Clock::now() >= deadline)
            break;
        std::this_thread::sleep_for(Ms(5));
    }
    std::vector<bool> hung(job.size, false);
    for (int r = 0; r < job.size; r++) {
        if (done[r])
            continue;
        hung[r] = true;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status[r], 0);
    }

    for (int r = 0; r < job.size; r++) {
        if (pids[r] < 0)
            continue;
        const bool meant_to_die =
            std::find(job.killed.begin(), job.killed.end(), r) != job.killed.end();
        std::string written;
        {
            std::ifstream f(OutcomePath(dir, r));
            std::stringstream ss;
            ss << f.rdbuf();
            written = ss.str();
        }
        if (hung[r]) {
            out[r].text = Str("did not finish within ", Scaled(job.deadline).count(),
                              " ms (SIGKILLed by the runner)",
                              written.empty() ? "" : "; it wrote: " + written);
        } else if (WIFSIGNALED(status[r])) {
            int sig = WTERMSIG(status[r]);
            if (meant_to_die && sig == SIGKILL) {
                out[r].ok = true;
                out[r].text = "killed as planned";
            } else {
                out[r].text = Str("ended by signal ", sig, " (", strsignal(sig), ")",
                                  written.empty() ? "" : "; it wrote: " + written);
            }
        } else if (WIFEXITED(status[r])) {
            int code = WEXITSTATUS(status[r]);
            if (meant_to_die) {
                out[r].text = Str("was meant to be killed but exited with ", code, ": ", written);
            } else if (code == 0 && written == "OK") {
                out[r].ok = true;
            } else if (written == "OK") {
                out[r].text = Str("its body succeeded but it exited with ", code,
                                  " (e.g. a sanitizer's report at exit; see its stderr)");
            } else {
                out[r].text =
                    written.empty() ? Str("exited with ", code, " and wrote no outcome") : written;
            }
        }
    }
    return out;
}

std::vector<RankOutcome> RunThreads(const Job &job, const Body &body, const std::string &dir)
{
    struct Shared {
        std::mutex m;
        std::condition_variable cv;
        int finished = 0;
        std::vector<RankOutcome> out;
        std::vector<bool> done;
    };
    auto shared = std::make_shared<Shared>();
    shared->out.resize(job.size);
    shared->done.assign(job.size, false);
    const Params params = Params::Parse(job.params);

    std::map<std::string, std::string> saved;
    ApplyEnv(ParseKv(job.params), &saved);

    std::vector<std::thread> threads;
    for (int r = 0; r < job.size; r++) {
        threads.emplace_back([shared, r, &job, body, dir, params] {
            RankOutcome o;
            {
                RankEnv env(r, job.size, Mode::kThreads, dir, params);
                o = RunBody(body, env);
            } /* the rank's contexts and device are torn down inside the deadline */
            std::lock_guard<std::mutex> lock(shared->m);
            shared->out[r] = o;
            shared->done[r] = true;
            shared->finished++;
            shared->cv.notify_all();
        });
    }
    {
        std::unique_lock<std::mutex> lock(shared->m);
        bool all = shared->cv.wait_until(lock, Clock::now() + Scaled(job.deadline),
                                         [&] { return shared->finished == job.size; });
        if (!all) {
            std::string which;
            for (int r = 0; r < job.size; r++)
                if (!shared->done[r])
                    which += Str(" ", r);
            std::fprintf(stderr,
                         "[harness] FATAL: %s: rank(s)%s did not finish within %lld ms; a thread "
                         "cannot be stopped, so the test program ends here\n",
                         JobName(job).c_str(), which.c_str(),
                         (long long)Scaled(job.deadline).count());
            for (int r = 0; r < job.size; r++)
                if (shared->done[r] && !shared->out[r].ok)
                    std::fprintf(stderr, "[harness] rank %d failed: %s\n", r,
                                 shared->out[r].text.c_str());
            std::fflush(nullptr);
            std::_Exit(3);
        }
    }
    for (auto &t : threads)
        t.join();
    for (const auto &[name, old] : saved) {
        if (old.empty())
            unsetenv(name.c_str());
        else
            setenv(name.c_str(), old.c_str() + 1, 1);
    }
    return shared->out;
}

} // namespace

void Fail(const char *file, int line, const char *cond, const std::string &msg)
{
    const char *base = std::strrchr(file, '/');
    throw CheckFailure(Str(base ? base + 1 : file, ":", line, ": check failed: ", cond,
                           msg.empty() ? "" : ": ", msg));
}

std::string Describe(const std::exception &e)
{
    const char *mangled = typeid(e).name();
    int st = 0;
    char *dem = abi::__cxa_demangle(mangled, nullptr, nullptr, &st);
    std::string type = (st == 0 && dem) ? dem : mangled;
    std::free(dem);
    return type + ": " + e.what();
}

std::vector<std::string> SplitList(const std::string &s)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        if (!item.empty())
            out.push_back(item);
    return out;
}

Params Params::Parse(const std::string &text)
{
    Params p;
    p.kv_ = ParseKv(text);
    return p;
}

bool Params::Has(const std::string &key) const
{
    return kv_.count(key) != 0;
}

std::string Params::Get(const std::string &key, const std::string &dflt) const
{
    auto it = kv_.find(key);
    return it == kv_.end() ? dflt : it->second;
}

long long Params::GetInt(const std::string &key, long long dflt) const
{
    auto it = kv_.find(key);
    return it == kv_.end() ? dflt : std::stoll(it->second);
}

RankEnv::RankEnv(int rank_, int size_, Mode mode_, std::string dir_, Params params_)
    : rank(rank_), size(size_), mode(mode_), dir(std::move(dir_)), params(std::move(params_))
{
}

RankEnv::~RankEnv() = default;

std::shared_ptr<::gloo::transport::Device> &RankEnv::Device()
{
    if (!device_) {
        glucx::gloo::attr a;
        a.iface = params.Get("iface");
        a.hostname = params.Get("hostname");
        device_ = glucx::gloo::CreateDevice(a);
        RANK_CHECK(device_ != nullptr, "CreateDevice returned null");
    }
    return device_;
}

std::shared_ptr<::gloo::transport::Device> &RankEnv::TcpDevice()
{
    if (!tcp_device_) {
        ::gloo::transport::tcp::attr a;
        a.hostname = "127.0.0.1";
        tcp_device_ = ::gloo::transport::tcp::CreateDevice(a);
        RANK_CHECK(tcp_device_ != nullptr, "gloo::transport::tcp::CreateDevice returned null");
    }
    return tcp_device_;
}

namespace
{

std::shared_ptr<::gloo::Context> ConnectIn(const std::string &store_dir, int rank, int size,
                                           int base, Ms timeout,
                                           std::shared_ptr<::gloo::transport::Device> dev)
{
    std::error_code ec;
    std::filesystem::create_directories(store_dir, ec); /* every rank may race to create it */
    RANK_CHECK(std::filesystem::is_directory(store_dir), "cannot create ", store_dir);
    ::gloo::rendezvous::FileStore store(store_dir);
    auto ctx = std::make_shared<::gloo::rendezvous::Context>(rank, size, base);
    ctx->setTimeout(timeout);
    ctx->connectFullMesh(store, dev);
    return ctx;
}

} // namespace

std::shared_ptr<::gloo::Context> RankEnv::Connect(Ms timeout,
                                                  std::shared_ptr<::gloo::transport::Device> dev)
{
    if (!dev)
        dev = Device();
    return ConnectIn(Str(dir, "/store", connects_++), rank, size, 2, timeout, dev);
}

std::shared_ptr<::gloo::Context>
RankEnv::ConnectGroup(const std::string &name, int group_size, Ms timeout,
                      std::shared_ptr<::gloo::transport::Device> dev, int base)
{
    RANK_CHECK(rank < group_size && group_size <= size, "rank ", rank,
               " cannot join the group of ranks 0..", group_size - 1, " of a ", size, "-rank job");
    RANK_CHECK(dev != nullptr, "ConnectGroup ", name, ": no device");
    return ConnectIn(Str(dir, "/group.", name), rank, group_size, base, timeout, dev);
}

void RankEnv::Signal(const std::string &name)
{
    std::string path = Str(dir, "/signal.", name);
    int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    RANK_CHECK(fd >= 0, "cannot create ", path, ": ", std::strerror(errno));
    close(fd);
}

bool RankEnv::IsSignalled(const std::string &name) const
{
    return access(Str(dir, "/signal.", name).c_str(), F_OK) == 0;
}

bool RankEnv::Await(const std::string &name, Ms limit) const
{
    const auto end = Clock::now() + limit;
    while (!IsSignalled(name)) {
        if (Clock::now() >= end)
            return false;
        std::this_thread::sleep_for(Ms(2));
    }
    return true;
}

void RankEnv::KillSelf()
{
    RANK_CHECK(mode == Mode::kProcesses, "KillSelf needs process mode");
    std::fflush(nullptr);
    raise(SIGKILL);
    kill(getpid(), SIGKILL);
    _exit(125); /* not reached */
}

int RegisterBody(const char *name, Body fn)
{
    Registry()[name] = std::move(fn);
    return 0;
}

std::string JobName(const Job &job)
{
    return Str(job.body, " n=", job.size, " ", ModeName(job.mode),
               job.params.empty() ? "" : " [" + job.params + "]");
}

std::vector<RankOutcome> RunJob(const Job &job)
{
    auto it = Registry().find(job.body);
    if (it == Registry().end())
        return std::vector<RankOutcome>(job.size, {false, "no rank body named " + job.body});
    const std::string dir = MakeJobDir();
    std::vector<RankOutcome> out = job.mode == Mode::kProcesses ? RunProcesses(job, it->second, dir)
                                                                : RunThreads(job, it->second, dir);
    RemoveJobDir(dir);
    return out;
}

void ExpectJobOk(const Job &job)
{
    auto t0 = Clock::now();
    std::vector<RankOutcome> out = RunJob(job);
    for (size_t r = 0; r < out.size(); r++)
        if (!out[r].ok)
            ADD_FAILURE() << JobName(job) << ": rank " << r << ": " << out[r].text;
    ::testing::Test::RecordProperty("job_ms", static_cast<int>(Since(t0).count()));
}

int ChildMain(int argc, char **argv)
{
    if (argc < 2 || std::strcmp(argv[1], kChildFlag) != 0)
        return -1;
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s %s BODY RANK SIZE DIR PARAMS\n", argv[0], kChildFlag);
        return 2;
    }
    const std::string name = argv[2], dir = argv[5], params_text = argv[6];
    const int rank = std::atoi(argv[3]), size = std::atoi(argv[4]);
    RankOutcome o;
    auto it = Registry().find(name);
    if (it == Registry().end()) {
        o.text = "no rank body named " + name;
    } else {
        const Params params = Params::Parse(params_text);
        ApplyEnv(ParseKv(params_text), nullptr);
        RankEnv env(rank, size, Mode::kProcesses, dir, params);
        o = RunBody(it->second, env);
    } /* contexts and device torn down before the outcome is written */
    const std::string path = OutcomePath(dir, rank), tmp = path + ".tmp";
    {
        std::ofstream f(tmp);
        f << (o.ok ? std::string("OK") : o.text);
    }
    std::rename(tmp.c_str(), path.c_str());
    if (!o.ok)
        std::fprintf(stderr, "[rank %d/%d %s] FAILED: %s\n", rank, size, name.c_str(),
                     o.text.c_str());
    return o.ok ? 0 : 1;
}

Caught CatchFrom(const std::function<void()> &f)
{
    Caught c;
    const auto t0 = Clock::now();
    try {
        f();
    } catch (const CheckFailure &) {
        throw;
    } catch (const ::gloo::Exception &e) {
        c.threw = true;
        c.gloo_exception = true;
        c.description = Describe(e);
        c.what = e.what();
    } catch (const std::exception &e) {
        c.threw = true;
        c.description = Describe(e);
        c.what = e.what();
    } catch (...) {
        c.threw = true;
        c.description = "exception of a non-standard type";
    }
    c.elapsed = Since(t0);
    static const bool verbose = std::getenv("GLOO_TEST_VERBOSE") != nullptr;
    if (verbose)
        std::fprintf(stderr, "[harness pid %d] %s after %lld ms%s%s\n", (int)getpid(),
                     c.threw ? "caught" : "returned", (long long)c.elapsed.count(),
                     c.threw ? ": " : "", c.description.c_str());
    return c;
}

std::vector<int> NamedRanks(const std::string &message)
{
    /* "rank 2", "ranks 2", "peer=2", "peer: 2", "rank #2" (case-insensitive) */
    std::string m = message;
    for (char &ch : m)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::vector<int> ranks;
    for (const char *word : {"rank", "peer"}) {
        for (size_t at = m.find(word); at != std::string::npos; at = m.find(word, at + 1)) {
            size_t i = at + 4;
            if (i < m.size() && m[i] == 's')
                i++;
            while (i < m.size() && m[i] == ' ')
                i++;
            if (i < m.size() && (m[i] == '=' || m[i] == ':' || m[i] == '#'))
                i++;
            while (i < m.size() && m[i] == ' ')
                i++;
            size_t j = i;
            while (j < m.size() && std::isdigit(static_cast<unsigned char>(m[j])))
                j++;
            if (j > i && j - i < 9)
                ranks.push_back(std::stoi(m.substr(i, j - i)));
        }
    }
    return ranks;
}

bool NamesRank(const std::string &message, int peer)
{
    for (int r : NamedRanks(message))
        if (r == peer)
            return true;
    return false;
}

void CheckGlooFailure(const Caught &c, const std::string &op, int peer)
{
    RANK_CHECK(c.threw, op, " did not throw (it returned after ", c.elapsed.count(), " ms)");
    RANK_CHECK(c.gloo_exception, op, " threw ", c.description, ", not a gloo::Exception");
    if (peer >= 0)
        RANK_CHECK(NamesRank(c.what, peer), op, ": the message does not name rank ", peer, ": ",
                   c.what);
    else
        RANK_CHECK(!NamedRanks(c.what).empty(), op, ": the message names no peer rank: ", c.what);
}

void CheckNamesAPeer(const Caught &c, int self, const std::string &op)
{
    for (int r : NamedRanks(c.what))
        if (r != self)
            return;
    RANK_CHECK(false, op, ": the message names no peer rank: ", c.what);
}

void CheckFailsPromptly(const std::function<void()> &op, const std::string &what, int self,
                        Ms timeout)
{
    Caught c = CatchFrom(op);
    RANK_CHECK(c.threw, what, " on the failed context did not throw (returned after ",
               c.elapsed.count(), " ms)");
    RANK_CHECK(c.gloo_exception, what, " on the failed context threw ", c.description,
               ", not a gloo::Exception");
    CheckNamesAPeer(c, self, what + " on the failed context");
    RANK_CHECK(c.elapsed < timeout / 2, what, " on the failed context took ", c.elapsed.count(),
               " ms, not less than half the timeout (", timeout.count(), " ms)");
}

} // namespace glucx_test
