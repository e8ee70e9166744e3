/*
 * fork() without exec under a Gloo context on the glucx shim (issue 14; docs/architecture.md,
 * "Fork"). Two process ranks connect a context; rank 0 posts a receive from rank 1 and then
 * forks kForks children one after another. In each child:
 *  - a Gloo allreduce and an unbound-buffer send on the inherited context throw a
 *    gloo::Exception at once whose text names the fork and the spawn/forkserver start methods;
 *  - CreateDevice() (a new device: a new glucx context) throws the same way;
 *  - destroying the inherited buffer (with its pending receive), context and device returns
 *    without blocking and without telling rank 1 anything.
 * A child that does not finish by its deadline is SIGKILLed by PID and fails the test. Then both
 * ranks run an allreduce on the context (values checked) and rank 1 sends the message rank 0's
 * pending receive waits for, so the parent's context works and rank 1 saw nothing of the
 * children (a child's orderly leave would have failed the pending receive, a child's abort the
 * context).
 */
#include <csignal>
#include <cstring>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <gloo/allreduce.h>
#include <gloo/transport/unbound_buffer.h>

#include <glucx/gloo.h>

#include "harness.h"
#include "values.h"

namespace glucx_test
{
namespace
{

constexpr int kForks = 10;
constexpr uint64_t kSlot = 9;
constexpr size_t kBytes = 16;

/* A forked child dies with the rank that forked it (the harness kills ranks, not their
 * children). */
void DieWithParent(pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
}

/* Allreduce (sum) of 4 floats, rank r contributing r + 1 + salt; checked. */
void CheckedAllreduce(const std::shared_ptr<::gloo::Context> &ctx, uint32_t tag, float salt)
{
    std::vector<float> v(4, float(ctx->rank + 1) + salt);
    ::gloo::AllreduceOptions opts(ctx);
    opts.setOutput(v.data(), v.size());
    opts.setReduceFunction(Sum<float>);
    opts.setTag(tag);
    ::gloo::allreduce(opts);
    float want = 0;
    for (int r = 0; r < ctx->size; r++)
        want += float(r + 1) + salt;
    for (float x : v)
        RANK_CHECK(x == want, "allreduce (tag ", tag, "): got ", x, ", want ", want);
}

/* c threw a gloo::Exception naming the fork, this process and the exec-based start methods. */
void CheckRefused(const Caught &c, const std::string &what)
{
    RANK_CHECK(c.threw, what, " in a forked child returned");
    RANK_CHECK(c.gloo_exception, what, " in a forked child threw ", c.description,
               ", not a gloo::Exception");
    const std::string self = Str("process ", getpid(), " ");
    for (const std::string &word :
         {std::string("forked"), self, std::string("'spawn'"), std::string("'forkserver'")})
        RANK_CHECK(c.what.find(word) != std::string::npos, what, ": no \"", word,
                   "\" in: ", c.what);
}

/* The child's part; returns its exit code (it must not return into the harness). */
int ChildChecks(RankEnv &env, std::shared_ptr<::gloo::Context> &ctx,
                std::unique_ptr<::gloo::transport::UnboundBuffer> &pending)
{
    try {
        CheckRefused(CatchFrom([&] { CheckedAllreduce(ctx, 77, 0); }), "allreduce");
        std::vector<char> data(kBytes, 1);
        auto buf = ctx->createUnboundBuffer(data.data(), data.size());
        CheckRefused(CatchFrom([&] { buf->send(1, kSlot + 1, 0, kBytes); }), "send");
        CheckRefused(CatchFrom([] { glucx::gloo::CreateDevice(); }), "CreateDevice");
        buf.reset();
        pending.reset(); /* a receive the parent still waits for */
        ctx.reset();
        env.Device().reset();
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "[forked child %d of rank %d] %s\n", (int)getpid(), env.rank,
                     e.what());
        return 1;
    }
}

GLUCX_RANK_BODY(forked_child)
{
    auto ctx = env.Connect(Scaled(Ms(120000)));
    std::vector<char> got(kBytes, 0);
    std::unique_ptr<::gloo::transport::UnboundBuffer> pending;
    if (env.rank == 0) {
        pending = ctx->createUnboundBuffer(got.data(), got.size());
        pending->recv(1, kSlot, 0, kBytes);
    }
    CheckedAllreduce(ctx, 1, 0);
    if (env.rank == 0) {
        for (int i = 0; i < kForks; i++) {
            std::fflush(nullptr);
            const pid_t parent = getpid();
            const pid_t pid = fork();
            RANK_CHECK(pid >= 0, "fork: ", std::strerror(errno));
            if (pid == 0) {
                DieWithParent(parent);
                _exit(ChildChecks(env, ctx, pending));
            }
            const auto deadline = Clock::now() + Scaled(Ms(30000));
            int status = 0;
            pid_t w = 0;
            while ((w = waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < deadline)
                usleep(2000);
            if (w == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                RANK_CHECK(false, "forked child ", i, " (pid ", pid, ") hung and was killed");
            }
            RANK_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child ", i, " (pid ",
                       pid, ") failed: status ", status, " (its message is above)");
        }
    }
    CheckedAllreduce(ctx, 2, 10);
    if (env.rank == 1) {
        std::vector<char> msg(kBytes);
        for (size_t i = 0; i < kBytes; i++)
            msg[i] = char(i * 3 + 1);
        auto buf = ctx->createUnboundBuffer(msg.data(), msg.size());
        buf->send(0, kSlot, 0, kBytes);
        int peer = -1;
        RANK_CHECK(buf->waitSend(&peer) && peer == 0, "send to rank 0");
    } else {
        int peer = -1;
        RANK_CHECK(pending->waitRecv(&peer) && peer == 1, "the receive posted before the forks");
        for (size_t i = 0; i < kBytes; i++)
            RANK_CHECK(got[i] == char(i * 3 + 1), "byte ", i, " from rank 1: ", int(got[i]));
    }
    CheckedAllreduce(ctx, 3, 20);
}

TEST(Fork, ChildrenOfAContextAreRefusedAndTheParentsContextWorks)
{
    Job job;
    job.body = "forked_child";
    job.size = 2;
    job.mode = Mode::kProcesses;
    job.deadline = Ms(120000);
    ExpectJobOk(job);
}

} // namespace
} // namespace glucx_test
