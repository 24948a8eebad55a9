// ib_settings.h — the IB transport's settings, as plain values.
//
// The transport takes an IbSettings and never reads the environment; the
// caller on core's side reads it through the settings table
// (coll/base/settings.h) with ibSettingsFromTable(), which is its own CMake
// target (coll::ib_settings) that the transport does not link.  It lives
// here, beside the struct, so that the COLL_IB_* names, their meaning and
// COLL_IB_HCA's parse are in one folder; core links it and passes the
// result down, as it does with the socket settings.
#pragma once

#include <string>

#include "coll/base/status.h"
#include "ib/hca_filter.h"

namespace coll::ib {

// COLL_NET: which network carries traffic between hosts.
enum class NetChoice { Auto, Ib, Socket };

struct IbSettings {
  std::string verbsLib;      // COLL_IBVERBS_LIB; "" = libibverbs.so.1
  NetChoice net = NetChoice::Auto;  // COLL_NET
  std::string hcaText;       // COLL_IB_HCA as given, for messages
  HcaFilter hca;             // COLL_IB_HCA parsed
  int gidIndex = -1;         // COLL_IB_GID_INDEX; -1: autoGidIndex (ib_devices.h)
  int timeout = 20;          // COLL_IB_TIMEOUT: 4.096 us x 2^timeout per retry
  int retryCnt = 7;          // COLL_IB_RETRY_CNT
  int serviceLevel = 0;      // COLL_IB_SL
  int trafficClass = 0;      // COLL_IB_TC
  int qpsPerConnection = 1;  // COLL_IB_QPS_PER_CONNECTION
  std::string fault = "none";  // COLL_IB_FAULT (tests only)
};

// Every value above through the settings table; the first bad one's error
// names its variable (a range from the table, COLL_IB_HCA's grammar).
Result<IbSettings> ibSettingsFromTable();

}  // namespace coll::ib
