/*
 * In-process checks of the shim's public helpers (glucx/gloo.h): the slot-to-tag mapping, the
 * libgloo build check, device creation arguments and pair addresses.
 */
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include <gloo/common/logging.h>
#include <gloo/transport/address.h>
#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/types.h>

#include <glucx/gloo.h>

namespace
{

constexpr uint64_t kBit47 = uint64_t(1) << 47;

uint64_t Build(uint8_t prefix, uint32_t tag, uint8_t delta)
{
    return static_cast<uint64_t>(::gloo::Slot::build(prefix, tag) + delta);
}

std::string Hex(uint64_t v)
{
    std::ostringstream os;
    os << std::hex << v;
    return os.str();
}

TEST(SlotToTag, IdentityBelow2Pow47)
{
    std::vector<uint64_t> slots = {0,          1,         2,        255,         256,
                                   65535,      65536,     1u << 24, 0xffffffffu, uint64_t(1) << 40,
                                   kBit47 - 2, kBit47 - 1};
    std::mt19937_64 rng(47);
    for (int i = 0; i < 1000; i++)
        slots.push_back(rng() & (kBit47 - 1));
    for (uint64_t s : slots)
        EXPECT_EQ(glucx::gloo::SlotToTag(s), s) << "slot 0x" << Hex(s);
}

TEST(SlotToTag, GlooCollectiveSlotsMapOneToOneIntoTheUpperHalf)
{
    const uint8_t prefixes[] = {::gloo::kGatherSlotPrefix,
                                ::gloo::kAllgatherSlotPrefix,
                                ::gloo::kReduceSlotPrefix,
                                ::gloo::kAllreduceSlotPrefix,
                                ::gloo::kScatterSlotPrefix,
                                ::gloo::kBroadcastSlotPrefix,
                                ::gloo::kBarrierSlotPrefix,
                                ::gloo::kAlltoallSlotPrefix,
                                0x09,
                                0x42,
                                0x7f};
    std::vector<uint32_t> tags = {0,          1,           2,           255,        256,
                                  0x7fffffff, 0x80000000u, 0xfffffffeu, 0xffffffffu};
    std::mt19937 rng(48);
    for (int i = 0; i < 20; i++)
        tags.push_back(rng());
    const uint8_t deltas[] = {0, 1, 2, 7, 128, 254, 255};

    std::map<uint64_t, uint64_t> slot_of; /* tag -> slot */
    for (uint8_t p : prefixes)
        for (uint32_t t : tags)
            for (uint8_t d : deltas) {
                const uint64_t slot = Build(p, t, d);
                uint64_t tag = 0;
                ASSERT_NO_THROW(tag = glucx::gloo::SlotToTag(slot)) << "slot 0x" << Hex(slot);
                /* the documented layout: bit 47 | prefix << 40 | tag << 8 | delta */
                const uint64_t expect = kBit47 | (uint64_t(p) << 40) | (uint64_t(t) << 8) | d;
                EXPECT_EQ(tag, expect) << "slot 0x" << Hex(slot) << " (prefix " << int(p)
                                       << ", tag " << t << ", delta " << int(d) << ")";
                EXPECT_LT(tag, uint64_t(1) << 48) << "slot 0x" << Hex(slot);
                EXPECT_GE(tag, kBit47) << "slot 0x" << Hex(slot) << " lands in the identity range";
                auto [it, fresh] = slot_of.emplace(tag, slot);
                EXPECT_TRUE(fresh || it->second == slot)
                    << "slots 0x" << Hex(it->second) << " and 0x" << Hex(slot)
                    << " both map to tag 0x" << Hex(tag);
            }
}

TEST(SlotToTag, ThrowsForUnrepresentableSlots)
{
    const uint64_t bad[] = {
        uint64_t(0x80) << 56,                         /* prefix 128 */
        (uint64_t(0xff) << 56) | (uint64_t(5) << 24), /* prefix 255 */
        ~uint64_t(0),                                 /* everything set */
        kBit47 | 0x100,                               /* bits 8-23 in use above 2^47 */
        Build(::gloo::kAllreduceSlotPrefix, 7, 0) | 0x8000,
        Build(::gloo::kBarrierSlotPrefix, 0, 0) | (uint64_t(1) << 23),
    };
    for (uint64_t s : bad) {
        try {
            uint64_t t = glucx::gloo::SlotToTag(s);
            ADD_FAILURE() << "slot 0x" << Hex(s) << " mapped to 0x" << Hex(t)
                          << " instead of throwing";
        } catch (const ::gloo::EnforceNotMet &e) {
            const std::string what = e.what();
            EXPECT_TRUE(what.find(Hex(s)) != std::string::npos ||
                        what.find(std::to_string(s)) != std::string::npos)
                << "the message does not name slot 0x" << Hex(s) << ": " << what;
        } catch (const std::exception &e) {
            ADD_FAILURE() << "slot 0x" << Hex(s) << ": expected gloo::EnforceNotMet, got "
                          << e.what();
        }
    }
}

TEST(CheckGlooBuild, MatchesTheLoadedLibgloo)
{
    EXPECT_EQ(glucx::gloo::CheckGlooBuild(), "");
}

TEST(CreateDevice, RejectsAnUnknownInterface)
{
    glucx::gloo::attr a;
    a.iface = "glucxnosuch0";
    try {
        auto dev = glucx::gloo::CreateDevice(a);
        ADD_FAILURE() << "CreateDevice(iface=" << a.iface << ") did not throw";
    } catch (const ::gloo::EnforceNotMet &e) {
        EXPECT_NE(std::string(e.what()).find(a.iface), std::string::npos)
            << "the message does not name the interface: " << e.what();
    }
}

TEST(CreateDevice, RejectsAHostThatIsNotLocal)
{
    glucx::gloo::attr a;
    a.hostname = "192.0.2.1"; /* TEST-NET-1: never a local address */
    EXPECT_THROW(glucx::gloo::CreateDevice(a), ::gloo::EnforceNotMet);
}

/* ChooseNetDevices: the interface choice the Gloo device and the torch backend share. */
std::string Choose(const std::string &iface, const std::string &host = "",
                   const std::string &source = "")
{
    glucx::gloo::attr a;
    a.iface = iface;
    a.hostname = host;
    a.source = source;
    std::string net = "(untouched)";
    std::string why = glucx::gloo::ChooseNetDevices(a, &net);
    return why.empty() ? net : "error: " + why;
}

TEST(ChooseNetDevices, NothingNamedMeansEveryDevice)
{
    EXPECT_EQ(Choose(""), "");
}

TEST(ChooseNetDevices, ListsKeepEveryInterfaceOnceInOrder)
{
    EXPECT_EQ(Choose("lo"), "lo");
    EXPECT_EQ(Choose("lo,lo"), "lo");
    EXPECT_EQ(Choose(",lo,"), "lo"); /* empty entries are ignored */
}

TEST(ChooseNetDevices, NamesTheMissingInterfaceAndItsSource)
{
    for (const char *list : {"glucxnosuch0", "lo,glucxnosuch0", "glucxnosuch0,lo"}) {
        std::string got = Choose(list, "", "GLOO_SOCKET_IFNAME");
        EXPECT_EQ(got.rfind("error: ", 0), 0u) << list << ": " << got;
        EXPECT_NE(got.find("'glucxnosuch0'"), std::string::npos) << got;
        EXPECT_NE(got.find(std::string("GLOO_SOCKET_IFNAME='") + list + "'"), std::string::npos)
            << got;
        EXPECT_NE(got.find("does not exist"), std::string::npos) << got;
        EXPECT_NE(got.find("lo"), std::string::npos) << "lists the interfaces: " << got;
    }
    EXPECT_NE(Choose(",", "", "X").find("names no network interface"), std::string::npos);
}

TEST(ChooseNetDevices, HostNameGivesTheInterfaceHoldingItsAddress)
{
    EXPECT_EQ(Choose("", "127.0.0.1"), "lo");
    EXPECT_EQ(Choose("", "127.0.1.1"), "lo"); /* all of 127/8 is loopback */
    EXPECT_EQ(Choose("", "::1"), "lo");
    std::string got = Choose("", "192.0.2.1"); /* TEST-NET-1: never a local address */
    EXPECT_NE(got.find("does not resolve to an address of a local interface"), std::string::npos)
        << got;
    EXPECT_NE(got.find("192.0.2.1"), std::string::npos) << got;
    /* an interface, when named, wins over the host name */
    EXPECT_EQ(Choose("lo", "192.0.2.1"), "lo");
}

/* Gloo's connectFullMesh concatenates a rank's pair addresses and splits them evenly, so all
 * pairs of a context must have addresses of one length. */
TEST(CreateDevice, PairAddressesOfAContextHaveOneLength)
{
    for (const char *iface : {"", "lo"}) {
        glucx::gloo::attr a;
        a.iface = iface;
        std::shared_ptr<::gloo::transport::Device> dev;
        ASSERT_NO_THROW(dev = glucx::gloo::CreateDevice(a)) << "iface '" << iface << "'";
        EXPECT_FALSE(dev->str().empty());
        auto ctx = dev->createContext(0, 4);
        std::set<size_t> lengths;
        for (int peer : {1, 2, 3}) {
            auto &pair = ctx->createPair(peer);
            ASSERT_NE(pair, nullptr);
            lengths.insert(pair->address().bytes().size());
            EXPECT_FALSE(pair->address().str().empty());
        }
        EXPECT_EQ(lengths.size(), 1u) << "iface '" << iface << "'";
        EXPECT_GT(*lengths.begin(), 0u);
    }
}

/* Pair addresses against gloo::transport::Address::kMaxByteSize: test_address.cc. */
} // namespace
