#include "ib/ib_settings.h"

#include "coll/base/settings.h"

namespace coll::ib {

Result<IbSettings> ibSettingsFromTable() {
  IbSettings s;
  s.verbsLib = settings::readText("COLL_IBVERBS_LIB").value_or("");
  auto net = settings::choiceOr("COLL_NET");
  COLL_CHECK(net.status());
  s.net = net.value() == "ib" ? NetChoice::Ib : net.value() == "socket" ? NetChoice::Socket : NetChoice::Auto;
  auto fault = settings::choiceOr("COLL_IB_FAULT");
  COLL_CHECK(fault.status());
  s.fault = fault.value();
  s.hcaText = settings::readText("COLL_IB_HCA").value_or("");
  auto hca = parseHcaFilter(s.hcaText);
  COLL_CHECK(hca.status());
  s.hca = hca.take();
  // The table holds each range, so every value below is in it.
  const std::pair<const char*, int*> ints[] = {
      {"COLL_IB_GID_INDEX", &s.gidIndex}, {"COLL_IB_TIMEOUT", &s.timeout}, {"COLL_IB_RETRY_CNT", &s.retryCnt},
      {"COLL_IB_SL", &s.serviceLevel},    {"COLL_IB_TC", &s.trafficClass}, {"COLL_IB_QPS_PER_CONNECTION", &s.qpsPerConnection},
  };
  for (const auto& [name, field] : ints) {
    auto v = settings::intOr(name);
    COLL_CHECK(v.status());
    *field = static_cast<int>(v.value());
  }
  return s;
}

}  // namespace coll::ib
