// The environment of the ranks: job secret, rendezvous port and the
// per-rank COLL_* variables.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collrun {

// True for the variables collrun always sets itself (COLL_RANK, COLL_NRANKS,
// COLL_LOCAL_RANK, COLL_LOCAL_NRANKS, COLL_ROOT, COLL_SECRET).
bool is_launcher_variable(std::string_view name);

// 16 bytes from getrandom(2) as 32 lowercase hex characters.  Throws
// std::runtime_error when the kernel gives no randomness.
std::string make_secret();

// A currently free TCP port on 127.0.0.1 (bind to port 0, read it back,
// close).  Throws std::runtime_error on failure.
int pick_free_port();

// "NAME=VALUE" entries shared by all ranks: `base` (normally environ) minus the
// launcher variables and the names in `extra`, followed by `extra`.
std::vector<std::string> common_env(
    const char* const* base,
    const std::vector<std::pair<std::string, std::string>>& extra);

// common + the launcher variables of one rank.
std::vector<std::string> rank_env(const std::vector<std::string>& common,
                                  int rank, int nranks, const std::string& root,
                                  const std::string& secret);

}  // namespace collrun
