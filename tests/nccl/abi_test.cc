// libcoll's nccl.h against NVIDIA's: every value, size, offset, initializer
// field and function type of the table (abi_table.h) must be equal, so a
// program built against NVIDIA's header runs on libcoll's libnccl.so.2.
#include <catch2/catch.hpp>

#include <map>

#include "abi_table.h"

namespace {

template <typename V>
void requireSame(const std::vector<std::pair<std::string, V>>& ours,
                 const std::vector<std::pair<std::string, V>>& nvidia) {
  REQUIRE(ours.size() == nvidia.size());
  for (size_t i = 0; i < ours.size(); i++) {
    INFO(ours[i].first);
    REQUIRE(ours[i].first == nvidia[i].first);
    CHECK(ours[i].second == nvidia[i].second);
  }
}

}  // namespace

TEST_CASE("libcoll's nccl.h has NVIDIA's values, sizes, offsets and initializers", "[nccl][abi]") {
  abi::Table a = abi::ours(), b = abi::nvidia();
  REQUIRE(a.values.size() > 100);
  requireSame(a.values, b.values);
}

TEST_CASE("libcoll's nccl.h declares every function with NVIDIA's type", "[nccl][abi]") {
  abi::Table a = abi::ours(), b = abi::nvidia();
  REQUIRE(a.signatures.size() == 80);
  requireSame(a.signatures, b.signatures);
  // The types name NCCL's own types, not some that only look alike.
  std::map<std::string, std::string> sig(a.signatures.begin(), a.signatures.end());
  CHECK(sig["ncclAllReduce"] ==
        "ncclResult_t (*)(const void*, void*, long unsigned int, ncclDataType_t, ncclRedOp_t, ncclComm*, CUstream_st*)");
  CHECK(sig["ncclCommInitRankConfig"] ==
        "ncclResult_t (*)(ncclComm**, int, ncclUniqueId, int, ncclConfig_v22800*)");
}
