// Checkpoints: round trip, every load error, restoreInto's checks, and that a
// writer that fails or is killed never damages the checkpoint in place.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "checkpoint/checkpoint.h"
#include "raw_file.h"
#include "temp_dir.h"

using coll::Status;
using coll::train::Checkpoint;
using coll::train::CheckpointMeta;
using coll::train::loadCheckpoint;
using coll::train::NamedTensor;
using coll::train::restoreInto;
using coll::train::saveCheckpoint;
using coll::train::TensorSlot;
using coll::train::test::readRaw;
using coll::train::test::TempDir;
using coll::train::test::writeRaw;
using Catch::Matchers::Contains;

namespace {

struct Model {
  std::vector<float> w1, b1, mom, bnMean, empty;
  explicit Model(float base) {
    for (int i = 0; i < 1000; ++i) w1.push_back(base + float(i) * 0.25f);
    b1 = {base, -base, std::numeric_limits<float>::infinity(), -0.0f};
    for (int i = 0; i < 300000; ++i) mom.push_back(float(i % 97) * base);  // > the 1 MiB buffer
    bnMean = {1.5f, 2.5f};
  }
  std::vector<TensorSlot> slots() {
    return {{"fc1.weight", w1.data(), w1.size()},
            {"fc1.bias", b1.data(), b1.size()},
            {"opt.momentum.fc1.weight", mom.data(), mom.size()},
            {"bn1.running_mean", bnMean.data(), bnMean.size()},
            {"empty", empty.data(), 0}};
  }
  std::vector<NamedTensor> tensors() { return coll::train::asNamedTensors(slots()); }
};

CheckpointMeta makeMeta() {
  CheckpointMeta m;
  m.epoch = 3;
  m.step = 1234;
  m.seed = 0xfeedfacecafebeefull;
  m.sampler.epoch = 3;
  m.sampler.step = 17;
  m.sampler.seed = 42;
  m.sampler.datasetSize = 60000;
  m.sampler.globalBatch = 256;
  m.sampler.shuffle = true;
  m.sampler.dropLast = false;
  m.modelKind = "mlp";
  m.extra = {{"lr", "0.05"}, {"nranks", "4"}, {"empty", ""}};
  return m;
}

std::string loadError(const std::string& path) {
  auto r = loadCheckpoint(path);
  REQUIRE_FALSE(r.isOk());
  return r.status().message();
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

// Checks that path holds the checkpoint of Model(base).
void expectModel(const std::string& path, float base) {
  auto r = loadCheckpoint(path);
  INFO(r.status().message());
  REQUIRE(r.isOk());
  Model want(base), got(-1.f);
  REQUIRE(restoreInto(r.value(), got.slots()).isOk());
  CHECK(sameBits(got.w1, want.w1));
  CHECK(sameBits(got.mom, want.mom));
}

}  // namespace

TEST_CASE("checkpoint round trip", "[trainer_data][checkpoint]") {
  TempDir tmp;
  Model m(0.5f);
  const CheckpointMeta meta = makeMeta();
  const std::string path = tmp.file("ck.bin");
  REQUIRE(saveCheckpoint(path, meta, m.tensors()).isOk());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));

  auto r = loadCheckpoint(path);
  INFO(r.status().message());
  REQUIRE(r.isOk());
  const Checkpoint& ck = r.value();
  CHECK(ck.version == coll::train::kCheckpointVersion);
  CHECK(ck.meta.epoch == meta.epoch);
  CHECK(ck.meta.step == meta.step);
  CHECK(ck.meta.seed == meta.seed);
  CHECK(ck.meta.sampler.epoch == 3);
  CHECK(ck.meta.sampler.step == 17);
  CHECK(ck.meta.sampler.seed == 42);
  CHECK(ck.meta.sampler.datasetSize == 60000);
  CHECK(ck.meta.sampler.globalBatch == 256);
  CHECK(ck.meta.sampler.shuffle);
  CHECK_FALSE(ck.meta.sampler.dropLast);
  CHECK(ck.meta.modelKind == "mlp");
  CHECK(ck.meta.extra == meta.extra);
  REQUIRE(ck.tensors.size() == 5);
  CHECK(ck.tensors[0].name == "fc1.weight");  // saved order kept
  REQUIRE(ck.find("fc1.bias") != nullptr);
  CHECK(sameBits(ck.find("fc1.bias")->data, m.b1));
  CHECK(ck.find("nope") == nullptr);

  Model out(0.f);
  auto slots = out.slots();
  std::reverse(slots.begin(), slots.end());  // order does not matter
  REQUIRE(restoreInto(ck, slots).isOk());
  CHECK(sameBits(out.w1, m.w1));
  CHECK(sameBits(out.b1, m.b1));
  CHECK(sameBits(out.mom, m.mom));
  CHECK(sameBits(out.bnMean, m.bnMean));

  // A sampler restores from the saved state.
  coll::train::DistributedSampler s(60000, 0, 4, 64, 42, true, false);
  CHECK(s.restore(ck.meta.sampler).isOk());
  CHECK(s.step() == 17);

  // Saving again replaces the file.
  Model m2(2.0f);
  REQUIRE(saveCheckpoint(path, meta, m2.tensors()).isOk());
  expectModel(path, 2.0f);

  // Nothing to save is fine too.
  REQUIRE(saveCheckpoint(tmp.file("empty.bin"), CheckpointMeta{}, {}).isOk());
  auto e = loadCheckpoint(tmp.file("empty.bin"));
  REQUIRE(e.isOk());
  CHECK(e.value().tensors.empty());
  REQUIRE(restoreInto(e.value(), {}).isOk());
}

TEST_CASE("checkpoint load errors", "[trainer_data][checkpoint]") {
  TempDir tmp;
  Model m(1.f);
  const std::string path = tmp.file("ck.bin");
  REQUIRE(saveCheckpoint(path, makeMeta(), m.tensors()).isOk());
  const auto good = readRaw(path);
  const std::string bad = tmp.file("bad.bin");

  SECTION("missing") {
    std::string msg = loadError(tmp.file("missing.bin"));
    CHECK_THAT(msg, Contains(tmp.file("missing.bin")));
    CHECK_THAT(msg, Contains("not found"));
  }
  SECTION("truncated") {
    for (size_t len : {size_t(0), size_t(5), size_t(20), size_t(32), size_t(100), good.size() / 2,
                       good.size() - 1}) {
      CAPTURE(len);
      writeRaw(bad, std::vector<uint8_t>(good.begin(), good.begin() + long(len)));
      std::string msg = loadError(bad);
      CHECK_THAT(msg, Contains(bad));
      CHECK_THAT(msg, Contains("truncated"));
      if (len >= 32) {
        CHECK_THAT(msg, Contains(fmt::format("expected {} bytes", good.size())));
        CHECK_THAT(msg, Contains(fmt::format("the file has {}", len)));
      }
    }
  }
  SECTION("trailing bytes") {
    auto b = good;
    b.push_back(0);
    writeRaw(bad, b);
    CHECK_THAT(loadError(bad), Contains("1 extra"));
  }
  SECTION("wrong magic") {
    auto b = good;
    b[0] = 'X';
    writeRaw(bad, b);
    CHECK_THAT(loadError(bad), Contains("not a libcoll checkpoint"));
    writeRaw(bad, {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
    CHECK_THAT(loadError(bad), Contains("not a libcoll checkpoint"));
  }
  SECTION("wrong version") {
    auto b = good;
    b[8] = 2;
    writeRaw(bad, b);
    std::string msg = loadError(bad);
    CHECK_THAT(msg, Contains("version 2"));
    CHECK_THAT(msg, Contains("reads version 1"));
  }
  SECTION("CRC mismatch") {
    for (size_t at : {size_t(32), size_t(40), good.size() / 2, good.size() - 1}) {
      CAPTURE(at);
      auto b = good;
      b[at] ^= 0x01;  // one bit of the payload
      writeRaw(bad, b);
      std::string msg = loadError(bad);
      CHECK_THAT(msg, Contains("CRC-32"));
      CHECK_THAT(msg, Contains("corrupt"));
    }
    auto b = good;
    b[24] ^= 0x80;  // the stored CRC itself
    writeRaw(bad, b);
    CHECK_THAT(loadError(bad), Contains("CRC-32"));
  }
  SECTION("a directory") {
    CHECK_FALSE(loadCheckpoint(tmp.path).isOk());
  }
}

TEST_CASE("restoreInto checks names and sizes", "[trainer_data][checkpoint]") {
  TempDir tmp;
  Model m(1.f);
  const std::string path = tmp.file("ck.bin");
  REQUIRE(saveCheckpoint(path, makeMeta(), m.tensors()).isOk());
  auto r = loadCheckpoint(path);
  REQUIRE(r.isOk());
  const Checkpoint& ck = r.value();

  Model out(7.f);
  const std::vector<float> before = out.w1;
  SECTION("a tensor the checkpoint lacks") {
    auto slots = out.slots();
    slots[3].name = "bn1.running_var";
    Status st = restoreInto(ck, slots);
    CHECK_THAT(st.message(), Contains("'bn1.running_var'"));
    CHECK_THAT(st.message(), Contains("not in the checkpoint"));
  }
  SECTION("a size mismatch") {
    auto slots = out.slots();
    slots[1].count = 3;
    Status st = restoreInto(ck, slots);
    CHECK_THAT(st.message(), Contains("'fc1.bias' has 4 floats in the checkpoint but 3 in the model"));
  }
  SECTION("a checkpoint tensor the model lacks") {
    auto slots = out.slots();
    slots.pop_back();
    Status st = restoreInto(ck, slots);
    CHECK_THAT(st.message(), Contains("'empty'"));
    CHECK_THAT(st.message(), Contains("no counterpart"));
  }
  SECTION("the same name twice") {
    auto slots = out.slots();
    slots.push_back(slots[0]);
    CHECK_THAT(restoreInto(ck, slots).message(), Contains("twice"));
  }
  CHECK(sameBits(out.w1, before));  // nothing written on failure
}

TEST_CASE("saveCheckpoint rejects bad tensor lists", "[trainer_data][checkpoint]") {
  TempDir tmp;
  float x[2] = {1, 2};
  const std::string path = tmp.file("ck.bin");
  Status st = saveCheckpoint(path, {}, {{"a", x, 2}, {"a", x, 1}});
  CHECK_THAT(st.message(), Contains("'a' appears twice"));
  st = saveCheckpoint(path, {}, {{"", x, 2}});
  CHECK_THAT(st.message(), Contains("empty name"));
  st = saveCheckpoint(path, {}, {{"a", nullptr, 2}});
  CHECK_THAT(st.message(), Contains("NULL"));
  CHECK_FALSE(std::filesystem::exists(path));
  st = saveCheckpoint(tmp.file("no/such/dir/ck.bin"), {}, {{"a", x, 2}});
  CHECK_FALSE(st.isOk());
  CHECK_THAT(st.message(), Contains("cannot create"));
}

namespace {
std::vector<std::string> gStages;
std::string gWatchPath;
std::vector<bool> gTmpExisted, gFinalIsNew;
void recordStage(const char* stage) {
  gStages.push_back(stage);
  gTmpExisted.push_back(std::filesystem::exists(gWatchPath + ".tmp." + std::to_string(::getpid())));
  // Does <path> still hold the old checkpoint (Model(1))?
  auto r = loadCheckpoint(gWatchPath);
  bool isNew = false;
  if (r.isOk()) {
    const auto* t = r.value().find("fc1.weight");
    isNew = t != nullptr && !t->data.empty() && t->data[0] == 9.f;
  }
  gFinalIsNew.push_back(isNew);
}
const char* gKillAt = nullptr;
void killAt(const char* stage) {
  if (std::strcmp(stage, gKillAt) == 0) ::raise(SIGKILL);
}
}  // namespace

TEST_CASE("checkpoint writes go to path.tmp.<pid> and are renamed last", "[trainer_data][checkpoint]") {
  TempDir tmp;
  const std::string path = tmp.file("ck.bin");
  Model old(1.f), neu(9.f);
  REQUIRE(saveCheckpoint(path, makeMeta(), old.tensors()).isOk());
  gWatchPath = path;
  gStages.clear();
  gTmpExisted.clear();
  gFinalIsNew.clear();
  coll::train::detail::setCheckpointTestHook(recordStage);
  Status st = saveCheckpoint(path, makeMeta(), neu.tensors());
  coll::train::detail::setCheckpointTestHook(nullptr);
  REQUIRE(st.isOk());
  REQUIRE(gStages == std::vector<std::string>{"tmp-opened", "payload-written", "synced", "renamed"});
  // The temporary file exists until the rename, and the old checkpoint stays
  // in place until then.
  CHECK(gTmpExisted == std::vector<bool>{true, true, true, false});
  CHECK(gFinalIsNew == std::vector<bool>{false, false, false, true});
  expectModel(path, 9.f);
}

TEST_CASE("a writer killed mid-save leaves the old checkpoint intact", "[trainer_data][checkpoint]") {
  for (const char* stage : {"tmp-opened", "payload-written", "synced"}) {
    CAPTURE(stage);
    TempDir tmp;
    const std::string path = tmp.file("ck.bin");
    Model old(1.f);
    REQUIRE(saveCheckpoint(path, makeMeta(), old.tensors()).isOk());
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      gKillAt = stage;
      coll::train::detail::setCheckpointTestHook(killAt);
      Model neu(9.f);
      (void)saveCheckpoint(path, makeMeta(), neu.tensors());
      ::_exit(3);  // not reached
    }
    int wstatus = 0;
    REQUIRE(::waitpid(pid, &wstatus, 0) == pid);
    REQUIRE(WIFSIGNALED(wstatus));
    CHECK(WTERMSIG(wstatus) == SIGKILL);
    expectModel(path, 1.f);  // old one, complete
    // The killed writer's temporary file is left behind, under its own name.
    const std::string left = path + ".tmp." + std::to_string(pid);
    CHECK(std::filesystem::exists(left));
    if (std::strcmp(stage, "synced") == 0) {
      expectModel(left, 9.f);  // complete, just not renamed
    } else {
      CHECK_FALSE(loadCheckpoint(left).isOk());  // header not written yet
    }
    // The next save succeeds and replaces it.
    Model neu(9.f);
    REQUIRE(saveCheckpoint(path, makeMeta(), neu.tensors()).isOk());
    expectModel(path, 9.f);
  }
}

TEST_CASE("a failing save leaves the old checkpoint intact", "[trainer_data][checkpoint]") {
  TempDir tmp;
  const std::string path = tmp.file("ck.bin");
  Model old(1.f), neu(9.f);
  REQUIRE(saveCheckpoint(path, makeMeta(), old.tensors()).isOk());

  SECTION("the temporary file cannot be created") {
    // A directory where the temporary file goes (works as root, unlike a
    // read-only directory).
    const std::string tmpName = path + ".tmp." + std::to_string(::getpid());
    REQUIRE(std::filesystem::create_directory(tmpName));
    Status st = saveCheckpoint(path, makeMeta(), neu.tensors());
    CHECK_FALSE(st.isOk());
    CHECK_THAT(st.message(), Contains(tmpName));
    expectModel(path, 1.f);
    std::filesystem::remove(tmpName);
  }
  SECTION("the rename fails") {
    // A non-empty directory at <path>'s place cannot be replaced by rename.
    const std::string dirPath = tmp.file("ckdir");
    REQUIRE(std::filesystem::create_directory(dirPath));
    { std::ofstream(dirPath + "/keep") << "x"; }
    Status st = saveCheckpoint(dirPath, makeMeta(), neu.tensors());
    CHECK_FALSE(st.isOk());
    CHECK_THAT(st.message(), Contains("cannot rename"));
    CHECK(std::filesystem::exists(dirPath + "/keep"));
    CHECK_FALSE(std::filesystem::exists(dirPath + ".tmp." + std::to_string(::getpid())));
  }
  SECTION("a read-only directory (non-root only)") {
    if (::geteuid() == 0) {
      SUCCEED("running as root: permissions do not stop writes");
      return;
    }
    REQUIRE(::chmod(tmp.path.c_str(), 0555) == 0);
    Status st = saveCheckpoint(path, makeMeta(), neu.tensors());
    ::chmod(tmp.path.c_str(), 0755);
    CHECK_FALSE(st.isOk());
    CHECK_THAT(st.message(), Contains("cannot create"));
    expectModel(path, 1.f);
  }
  // No temporary file is left behind by a clean failure.
  for (const auto& e : std::filesystem::directory_iterator(tmp.path)) {
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  }
}
