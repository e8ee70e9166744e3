/*
 * The Gloo device: a glucx context, the interface choice, the libgloo build check and the
 * slot-to-tag mapping.
 */
#include "shim.h"

#include <arpa/inet.h>
#include <elf.h>
#include <ifaddrs.h>
#include <link.h>
#include <net/if.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

namespace glucx
{
namespace gloo
{

std::string lastError()
{
    const char *t = glucx_last_error();
    return t != nullptr && t[0] != '\0' ? std::string(t) : std::string("(no message)");
}

/* ---- slot mapping ------------------------------------------------------------------------ */

std::uint64_t SlotToTag(std::uint64_t slot)
{
    const std::uint64_t kDirect = std::uint64_t(1) << 47;
    if (slot < kDirect)
        return slot;
    const std::uint64_t prefix = slot >> 56;
    const std::uint64_t middle = (slot >> 8) & 0xffff; /* bits 8-23: zero in gloo::Slot */
    GLOO_ENFORCE(prefix < 128 && middle == 0, "glucx: Gloo slot 0x", std::hex, slot,
                 " is neither below 2^47 nor a gloo::Slot (prefix < 128, bits 8-23 zero): it has "
                 "no 48-bit glucx tag");
    const std::uint64_t tag = (slot >> 24) & 0xffffffffu;
    return kDirect | (prefix << 40) | (tag << 8) | (slot & 0xff);
}

/* ---- libgloo build check ----------------------------------------------------------------- */

namespace
{

struct BuildIdSearch {
    std::string path;
    std::string id;
};

std::string hex(const unsigned char *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; i++) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

int findGloo(struct dl_phdr_info *info, size_t, void *arg)
{
    auto *out = static_cast<BuildIdSearch *>(arg);
    const char *name = info->dlpi_name != nullptr ? info->dlpi_name : "";
    const char *base = std::strrchr(name, '/');
    base = base != nullptr ? base + 1 : name;
    if (std::strncmp(base, "libgloo.so", 10) != 0)
        return 0;
    out->path = name;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_NOTE)
            continue;
        const unsigned char *p =
            reinterpret_cast<const unsigned char *>(info->dlpi_addr + ph.p_vaddr);
        size_t left = ph.p_memsz;
        while (left >= sizeof(ElfW(Nhdr))) {
            const auto *nh = reinterpret_cast<const ElfW(Nhdr) *>(p);
            size_t namesz = (nh->n_namesz + 3) & ~size_t(3);
            size_t descsz = (nh->n_descsz + 3) & ~size_t(3);
            size_t total = sizeof(*nh) + namesz + descsz;
            if (total > left)
                break;
            const char *nname = reinterpret_cast<const char *>(p + sizeof(*nh));
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                std::memcmp(nname, "GNU", 4) == 0) {
                out->id = hex(p + sizeof(*nh) + namesz, nh->n_descsz);
                return 1;
            }
            p += total;
            left -= total;
        }
    }
    return 1;
}

} // namespace

std::string CheckGlooBuild()
{
    BuildIdSearch found;
    dl_iterate_phdr(findGloo, &found);
    if (found.path.empty())
        return "libgloo is not loaded in this process (the glucx Gloo shim needs the libgloo "
               "it was built against: " GLUCX_GLOO_LIB ")";
    if (found.id != GLUCX_GLOO_BUILD_ID)
        return "the glucx Gloo shim was built against " GLUCX_GLOO_LIB
               " (build id " GLUCX_GLOO_BUILD_ID ") but this process runs " +
               found.path + " (build id " + (found.id.empty() ? "unknown" : found.id) +
               "): Gloo's transport classes differ between builds; rebuild glucx against the "
               "libgloo you run";
    return std::string();
}

/* ---- interface choice -------------------------------------------------------------------- */

namespace
{

/* Whether two addresses of one family are equal. */
bool sameAddress(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return reinterpret_cast<const struct sockaddr_in *>(a)->sin_addr.s_addr ==
               reinterpret_cast<const struct sockaddr_in *>(b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return std::memcmp(&reinterpret_cast<const struct sockaddr_in6 *>(a)->sin6_addr,
                           &reinterpret_cast<const struct sockaddr_in6 *>(b)->sin6_addr,
                           sizeof(struct in6_addr)) == 0;
    return false;
}

bool isLoopback(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET) /* any 127/8 address is routed through loopback */
        return (ntohl(reinterpret_cast<const struct sockaddr_in *>(a)->sin_addr.s_addr) >> 24) ==
               127;
    return a->sa_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const struct sockaddr_in6 *>(a)->sin6_addr);
}

/* The interfaces of this host with an IPv4 or IPv6 address, in getifaddrs order, once each;
 * @p ok is false when getifaddrs fails. */
std::vector<std::string> addressedInterfaces(bool *ok)
{
    std::vector<std::string> names;
    struct ifaddrs *ifs = nullptr;
    *ok = getifaddrs(&ifs) == 0;
    if (!*ok)
        return names;
    for (struct ifaddrs *i = ifs; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr ||
            (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
            continue;
        if (std::find(names.begin(), names.end(), i->ifa_name) == names.end())
            names.push_back(i->ifa_name);
    }
    freeifaddrs(ifs);
    return names;
}

std::string listed(const std::vector<std::string> &names)
{
    std::string s;
    for (const auto &n : names)
        s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? "none" : s;
}

/* The numeric form of an address ("10.0.0.1", "fe80::1%eth0"); "" if it has none. */
std::string numeric(const struct sockaddr *sa)
{
    char host[NI_MAXHOST];
    socklen_t len =
        sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (getnameinfo(sa, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0)
        return "";
    return host;
}

/* The interface that holds @p host's address into @p out ("lo" for loopback), and that address
 * into @p address (if not NULL); "" or the reason it has none. */
std::string interfaceOfHost(const std::string &host, std::string *out,
                            std::string *address = nullptr)
{
    struct addrinfo hints;
    std::memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = nullptr;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0)
        return "glucx: cannot resolve host name '" + host + "': " + gai_strerror(rc) +
               " (set GLOO_SOCKET_IFNAME to name the network interface)";
    struct ifaddrs *ifs = nullptr;
    const bool have_ifs = getifaddrs(&ifs) == 0;
    std::string found, where;
    for (struct addrinfo *a = res; a != nullptr && found.empty(); a = a->ai_next) {
        if (isLoopback(a->ai_addr)) {
            found = "lo";
            where = numeric(a->ai_addr);
            break;
        }
        for (struct ifaddrs *i = have_ifs ? ifs : nullptr; i != nullptr; i = i->ifa_next) {
            if (i->ifa_addr != nullptr && sameAddress(i->ifa_addr, a->ai_addr)) {
                found = i->ifa_name;
                where = numeric(i->ifa_addr); /* with the interface's IPv6 scope */
                break;
            }
        }
    }
    if (have_ifs)
        freeifaddrs(ifs);
    freeaddrinfo(res);
    if (found.empty()) {
        bool ok = false;
        return "glucx: host name '" + host +
               "' does not resolve to an address of a local interface (interfaces with an "
               "address: " +
               listed(addressedInterfaces(&ok)) +
               "; set GLOO_SOCKET_IFNAME to name the network interface)";
    }
    *out = found;
    if (address != nullptr)
        *address = where;
    return "";
}

/* The first address of an interface accepted by @p take (IPv4 before IPv6, a link-local IPv6
 * one last), numeric; "" if none or getifaddrs fails. */
template <typename Take> std::string firstAddress(Take take)
{
    struct ifaddrs *ifs = nullptr;
    if (getifaddrs(&ifs) != 0)
        return "";
    std::string best;
    int rank = 3; /* 0: IPv4, 1: IPv6, 2: IPv6 link-local */
    for (struct ifaddrs *i = ifs; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr || !take(i))
            continue;
        int r;
        if (i->ifa_addr->sa_family == AF_INET)
            r = 0;
        else if (i->ifa_addr->sa_family == AF_INET6)
            r = IN6_IS_ADDR_LINKLOCAL(
                    &reinterpret_cast<const struct sockaddr_in6 *>(i->ifa_addr)->sin6_addr)
                    ? 2
                    : 1;
        else
            continue;
        if (r < rank) {
            std::string n = numeric(i->ifa_addr);
            if (!n.empty()) {
                best = n;
                rank = r;
            }
        }
    }
    freeifaddrs(ifs);
    return best;
}

} // namespace

std::string ChooseListenAddress(const attr &a, std::string *out)
{
    if (!a.iface.empty()) {
        /* the first listed interface (empty entries are ignored, as in ChooseNetDevices) */
        std::string first;
        std::istringstream names(a.iface);
        while (first.empty() && std::getline(names, first, ','))
            ;
        std::string found =
            firstAddress([&](const struct ifaddrs *i) { return first == i->ifa_name; });
        if (found.empty())
            return "glucx: network interface '" + first +
                   "' has no IPv4 or IPv6 address for the listener that serves this rank's "
                   "address record";
        *out = found;
        return "";
    }
    if (!a.hostname.empty()) {
        std::string iface;
        return interfaceOfHost(a.hostname, &iface, out);
    }
    char name[256] = "";
    std::string iface, found;
    if (gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0' &&
        interfaceOfHost(name, &iface, &found).empty() && iface != "lo" && !found.empty()) {
        *out = found;
        return "";
    }
    found = firstAddress([](const struct ifaddrs *i) {
        return (i->ifa_flags & IFF_UP) != 0 && (i->ifa_flags & IFF_LOOPBACK) == 0;
    });
    *out = found.empty() ? std::string("127.0.0.1") : found;
    return "";
}

std::string ChooseNetDevices(const attr &a, std::string *net)
{
    if (a.iface.empty()) {
        if (a.hostname.empty()) {
            *net = "";
            return "";
        }
        return interfaceOfHost(a.hostname, net);
    }
    const std::string from =
        a.source.empty() ? std::string() : " (from " + a.source + "='" + a.iface + "')";
    std::vector<std::string> names;
    size_t pos = 0;
    while (pos <= a.iface.size()) {
        size_t comma = a.iface.find(',', pos);
        if (comma == std::string::npos)
            comma = a.iface.size();
        std::string name = a.iface.substr(pos, comma - pos);
        pos = comma + 1;
        if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
            names.push_back(name);
    }
    if (names.empty())
        return "glucx: '" + a.iface + "'" + from + " names no network interface";
    bool ok = false;
    const std::vector<std::string> have = addressedInterfaces(&ok);
    std::string joined;
    for (const auto &name : names) {
        if (if_nametoindex(name.c_str()) == 0)
            return "glucx: network interface '" + name + "'" + from +
                   " does not exist on this host (interfaces with an address: " + listed(have) +
                   ")";
        /* getifaddrs failing: cannot tell, let UCX decide */
        if (ok && std::find(have.begin(), have.end(), name) == have.end())
            return "glucx: network interface '" + name + "'" + from +
                   " has no IPv4 or IPv6 address (is it up and configured? interfaces with an "
                   "address: " +
                   listed(have) + ")";
        joined += (joined.empty() ? "" : ",") + name;
    }
    *net = joined;
    return "";
}

/* ---- device ------------------------------------------------------------------------------ */

Device::Device(glucx_context_t *ctx, std::string netDevices, std::string listenAddress,
               bool syncSends)
    : ctx_(ctx), netDevices_(std::move(netDevices)), listenAddress_(std::move(listenAddress)),
      syncSends_(syncSends)
{
}

bool SyncSends()
{
    const char *v = std::getenv("GLUCX_SYNC_SEND");
    if (v == nullptr || std::strcmp(v, "1") == 0)
        return true;
    if (std::strcmp(v, "0") == 0)
        return false;
    throw ::gloo::EnforceNotMet(__FILE__, __LINE__, "GLUCX_SYNC_SEND is 0 or 1",
                                ::gloo::MakeString("glucx: GLUCX_SYNC_SEND='", v,
                                                   "': expected 1 (sends complete once the "
                                                   "receiver matched them, as Gloo's TCP "
                                                   "transport) or 0"));
}

Device::~Device()
{
    glucx_context_destroy(ctx_);
}

std::string Device::str() const
{
    return "glucx " + std::string(glucx_version()) +
           " (UCX; network devices: " + (netDevices_.empty() ? "all" : netDevices_) +
           "; address records served at " + listenAddress_ +
           (syncSends_ ? "; synchronous sends)" : "; sends complete locally)");
}

const std::string &Device::getPCIBusID() const
{
    return busId_;
}

std::shared_ptr<::gloo::transport::Context> Device::createContext(int rank, int size)
{
    GLOO_ENFORCE(size >= 1 && size <= GLUCX_COMM_SIZE_MAX && rank >= 0 && rank < size,
                 "glucx: createContext: rank ", rank, " / size ", size, " out of range");
    return std::make_shared<Context>(shared_from_this(), rank, size);
}

std::shared_ptr<::gloo::transport::Device> CreateDevice(const attr &a)
{
    std::string why = CheckGlooBuild();
    if (!why.empty())
        GLOO_THROW_IO_EXCEPTION("glucx: ", why);
    const bool sync = SyncSends();
    std::string net, listen;
    std::string refused = ChooseNetDevices(a, &net);
    if (refused.empty())
        refused = ChooseListenAddress(a, &listen);
    if (!refused.empty())
        throw ::gloo::EnforceNotMet(__FILE__, __LINE__, "the network interface choice is valid",
                                    refused);
    glucx_context_params_t params;
    std::memset(&params, 0, sizeof(params));
    if (!net.empty()) {
        params.field_mask = GLUCX_CONTEXT_PARAM_NET_DEVICES;
        params.net_devices = net.c_str();
    }
    glucx_context_t *ctx = nullptr;
    glucx_status_t st = glucx_context_create(&params, &ctx);
    if (st != GLUCX_OK)
        GLOO_THROW_IO_EXCEPTION("glucx: cannot create a context (network devices: ",
                                net.empty() ? "all" : net, "): ", lastError());
    return std::make_shared<Device>(ctx, net, listen, sync);
}

/* ---- address ----------------------------------------------------------------------------- */

std::string Address::str() const
{
    std::ostringstream s;
    s << (bytes_.size() == GLUCX_COMPACT_ADDRESS_BYTES ? "glucx compact address ("
                                                       : "glucx address record (")
      << bytes_.size() << " bytes)";
    return s.str();
}

} // namespace gloo
} // namespace glucx
