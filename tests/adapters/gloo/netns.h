/*
 * Network namespaces and record sizes for the Gloo conformance suite (issue 14): a namespace
 * with lo and five veth interfaces, where a glucx record is larger than
 * gloo::transport::Address::kMaxByteSize, and process ranks that enter it. Used by the pair
 * address tests (test_address.cc) and the ContextFactory tests (test_factory.cc).
 */
#ifndef GLUCX_TEST_GLOO_NETNS_H
#define GLUCX_TEST_GLOO_NETNS_H

#include <cstddef>
#include <string>
#include <vector>

#include "harness.h"

namespace glucx_test
{

/* Length of the glucx address record this process would publish for a communicator of
 * @p size ranks on a context with @p net_devices ("" = UCX's default), made with the C API
 * directly: what Pair::address() would be without compact addresses. */
size_t RecordBytes(const std::string &net_devices, int size);

/* RecordBytes() for the network devices the job's device uses (params iface=...), checked to be
 * more than params record_over=BYTES when the job sets it (else not checked); rank 0 prints it
 * with @p tag. */
size_t CheckRecordOver(const RankEnv &env, const char *tag);

/* Enter the network namespace the job names (params netns=NAME, /var/run/netns/NAME) before
 * anything opens a socket or starts a thread; nothing without netns. Process ranks only. */
void EnterNetns(const RankEnv &env);

/* Root and iproute2, to create namespaces. */
bool CanCreateNamespaces();

/* Namespaces "glx-addr5-<pid>-a" (the ranks: lo + 5 veth ends with 10.233.<i>.1/24) and
 * "...-b" (the veth peers), deleted by the destructor whatever happened; those of runs whose
 * process is gone (killed at their deadline) are deleted first. */
class FiveInterfaces
{
  public:
    static constexpr int kInterfaces = 5;

    FiveInterfaces();
    ~FiveInterfaces();
    FiveInterfaces(const FiveInterfaces &) = delete;
    FiveInterfaces &operator=(const FiveInterfaces &) = delete;

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
    bool Running(const std::string &iface) const;
    static void Sweep();

    std::string a_, b_;
    bool ok_ = false;
    std::vector<std::string> ifaces_;
};

} // namespace glucx_test

#endif
