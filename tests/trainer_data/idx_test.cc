// IDX reader/writer: round trips (gzip and plain), every error the reader
// reports, normalization, and the real Fashion-MNIST files when installed.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "data/idx.h"
#include "raw_file.h"
#include "temp_dir.h"

using coll::Status;
using coll::train::Dataset;
using coll::train::loadFashionMnist;
using coll::train::loadIdxPair;
using coll::train::normalizeInto;
using coll::train::writeBytesFile;
using coll::train::writeIdxPair;
using coll::train::test::readRaw;
using coll::train::test::TempDir;
using coll::train::test::writeRaw;
using Catch::Matchers::Contains;

namespace {

Dataset makeDataset(int count, int rows, int cols) {
  Dataset ds;
  ds.count = count;
  ds.rows = rows;
  ds.cols = cols;
  for (int i = 0; i < count * rows * cols; ++i) ds.pixels.push_back(static_cast<uint8_t>((i * 37 + 11) % 256));
  for (int i = 0; i < count; ++i) ds.labels.push_back(static_cast<uint8_t>((i * 7) % 10));
  return ds;
}

std::vector<uint8_t> be32(uint32_t x) {
  return {uint8_t(x >> 24), uint8_t(x >> 16), uint8_t(x >> 8), uint8_t(x)};
}

std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<uint8_t> imagesBytes(const Dataset& ds) {
  return cat({be32(0x803), be32(uint32_t(ds.count)), be32(uint32_t(ds.rows)), be32(uint32_t(ds.cols)), ds.pixels});
}
std::vector<uint8_t> labelsBytes(const Dataset& ds) {
  return cat({be32(0x801), be32(uint32_t(ds.count)), ds.labels});
}

// Loads and expects failure; returns the message.
std::string loadError(const std::string& img, const std::string& lab) {
  auto r = loadIdxPair(img, lab);
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() != collSuccess);
  return r.status().message();
}

}  // namespace

TEST_CASE("IDX round trip, plain and gzip", "[trainer_data][idx]") {
  TempDir tmp;
  for (bool gzip : {false, true}) {
    for (int count : {0, 1, 7, 300}) {
      CAPTURE(gzip, count);
      Dataset ds = makeDataset(count, 3, 5);
      const std::string img = tmp.file("img"), lab = tmp.file("lab");
      REQUIRE(writeIdxPair(img, lab, ds, gzip).isOk());
      auto raw = readRaw(img);
      REQUIRE(raw.size() >= 2);
      CHECK((raw[0] == 0x1f && raw[1] == 0x8b) == gzip);
      auto r = loadIdxPair(img, lab);
      REQUIRE(r.isOk());
      const Dataset& got = r.value();
      CHECK(got.count == count);
      CHECK(got.rows == 3);
      CHECK(got.cols == 5);
      CHECK(got.pixels == ds.pixels);
      CHECK(got.labels == ds.labels);
    }
  }
}

TEST_CASE("IDX writer rejects an inconsistent dataset", "[trainer_data][idx]") {
  TempDir tmp;
  Dataset ds = makeDataset(4, 2, 2);
  ds.labels.pop_back();
  Status st = writeIdxPair(tmp.file("i"), tmp.file("l"), ds, false);
  CHECK_FALSE(st.isOk());
  CHECK_THAT(st.message(), Contains("inconsistent"));
}

TEST_CASE("IDX missing files name the file and the package", "[trainer_data][idx]") {
  TempDir tmp;
  Dataset ds = makeDataset(3, 2, 2);
  REQUIRE(writeIdxPair(tmp.file("img"), tmp.file("lab"), ds, true).isOk());
  std::string m = loadError(tmp.file("nope-images.gz"), tmp.file("lab"));
  CHECK_THAT(m, Contains(tmp.file("nope-images.gz")));
  CHECK_THAT(m, Contains("not found"));
  CHECK_THAT(m, Contains("apt-get install dataset-fashion-mnist"));
  m = loadError(tmp.file("img"), tmp.file("nope-labels"));
  CHECK_THAT(m, Contains(tmp.file("nope-labels")));
  CHECK_THAT(m, Contains("apt-get install dataset-fashion-mnist"));

  auto r = loadFashionMnist(tmp.file("no-such-dir"), true);
  REQUIRE_FALSE(r.isOk());
  CHECK_THAT(r.status().message(), Contains("apt-get install dataset-fashion-mnist"));
  // A directory without the files: the message names the expected file.
  r = loadFashionMnist(tmp.path, false);
  REQUIRE_FALSE(r.isOk());
  CHECK_THAT(r.status().message(), Contains("t10k-images-idx3-ubyte.gz"));
  CHECK_THAT(r.status().message(), Contains("apt-get install dataset-fashion-mnist"));
}

TEST_CASE("IDX truncated files say expected vs present", "[trainer_data][idx]") {
  TempDir tmp;
  Dataset ds = makeDataset(7, 3, 5);  // images: 16 + 105 = 121 bytes; labels 8 + 7 = 15
  const std::string img = tmp.file("img"), lab = tmp.file("lab");
  for (bool gzip : {false, true}) {
    CAPTURE(gzip);
    REQUIRE(writeBytesFile(lab, labelsBytes(ds), gzip).isOk());

    auto b = imagesBytes(ds);
    b.resize(b.size() - 10);  // 111 bytes: 6 complete images
    REQUIRE(writeBytesFile(img, b, gzip).isOk());
    std::string m = loadError(img, lab);
    CHECK_THAT(m, Contains(img));
    CHECK_THAT(m, Contains("truncated"));
    CHECK_THAT(m, Contains("7 images of 3x5"));
    CHECK_THAT(m, Contains("121 bytes"));
    CHECK_THAT(m, Contains("has 111 bytes"));
    CHECK_THAT(m, Contains("6 complete images"));

    // Cut inside the header.
    REQUIRE(writeBytesFile(img, {0, 0, 8}, gzip).isOk());
    m = loadError(img, lab);
    CHECK_THAT(m, Contains("truncated"));
    CHECK_THAT(m, Contains("3 bytes"));
    REQUIRE(writeBytesFile(img, cat({be32(0x803), be32(7)}), gzip).isOk());
    m = loadError(img, lab);
    CHECK_THAT(m, Contains("truncated"));
    CHECK_THAT(m, Contains("needs 16 bytes"));

    // Labels cut short.
    REQUIRE(writeBytesFile(img, imagesBytes(ds), gzip).isOk());
    auto l = labelsBytes(ds);
    l.resize(l.size() - 3);
    REQUIRE(writeBytesFile(lab, l, gzip).isOk());
    m = loadError(img, lab);
    CHECK_THAT(m, Contains(lab));
    CHECK_THAT(m, Contains("truncated"));
    CHECK_THAT(m, Contains("7 labels (15 bytes"));
    CHECK_THAT(m, Contains("has 12 bytes (4 labels)"));

    // Trailing bytes are an error too.
    auto extra = labelsBytes(ds);
    extra.push_back(1);
    REQUIRE(writeBytesFile(lab, extra, gzip).isOk());
    m = loadError(img, lab);
    CHECK_THAT(m, Contains("1 bytes after the 7 labels"));
  }
}

TEST_CASE("IDX bad magic", "[trainer_data][idx]") {
  TempDir tmp;
  Dataset ds = makeDataset(4, 2, 3);
  const std::string img = tmp.file("img"), lab = tmp.file("lab");
  REQUIRE(writeIdxPair(img, lab, ds, false).isOk());
  // Swapped.
  std::string m = loadError(lab, img);
  CHECK_THAT(m, Contains("bad magic 0x00000801, expected 0x00000803"));
  CHECK_THAT(m, Contains("swapped"));
  // Garbage.
  auto b = imagesBytes(ds);
  b[0] = 0x12;
  b[1] = 0x34;
  REQUIRE(writeBytesFile(img, b, true).isOk());
  m = loadError(img, lab);
  CHECK_THAT(m, Contains(img));
  CHECK_THAT(m, Contains("bad magic 0x12340803"));
  // Another element type (0x0D = float).
  b = imagesBytes(ds);
  b[2] = 0x0d;
  REQUIRE(writeBytesFile(img, b, false).isOk());
  m = loadError(img, lab);
  CHECK_THAT(m, Contains("element type 0x0d"));
}

TEST_CASE("IDX image and label counts must match", "[trainer_data][idx]") {
  TempDir tmp;
  const std::string img = tmp.file("img"), lab = tmp.file("lab");
  REQUIRE(writeBytesFile(img, imagesBytes(makeDataset(7, 2, 2)), true).isOk());
  REQUIRE(writeBytesFile(lab, labelsBytes(makeDataset(6, 2, 2)), true).isOk());
  std::string m = loadError(img, lab);
  CHECK_THAT(m, Contains("7 images"));
  CHECK_THAT(m, Contains("6 labels"));
}

TEST_CASE("IDX labels outside [0,9]", "[trainer_data][idx]") {
  TempDir tmp;
  Dataset ds = makeDataset(6, 2, 2);
  ds.labels[3] = 10;
  const std::string img = tmp.file("img"), lab = tmp.file("lab");
  REQUIRE(writeIdxPair(img, lab, ds, false).isOk());
  std::string m = loadError(img, lab);
  CHECK_THAT(m, Contains(lab));
  CHECK_THAT(m, Contains("label 10 of item 3 is outside [0, 9]"));
  ds.labels[3] = 255;
  REQUIRE(writeIdxPair(img, lab, ds, true).isOk());
  CHECK_THAT(loadError(img, lab), Contains("label 255 of item 3"));
}

TEST_CASE("IDX corrupt gzip streams", "[trainer_data][idx]") {
  TempDir tmp;
  Dataset ds = makeDataset(200, 8, 8);
  const std::string img = tmp.file("img.gz"), lab = tmp.file("lab.gz");
  REQUIRE(writeIdxPair(img, lab, ds, true).isOk());
  const auto good = readRaw(img);
  REQUIRE(good.size() > 40);

  SECTION("gzip file cut short") {
    auto b = good;
    b.resize(b.size() / 2);
    writeRaw(img, b);
    std::string m = loadError(img, lab);
    CHECK_THAT(m, Contains(img));
    CHECK_THAT(m, Contains("gzip"));
  }
  SECTION("gzip trailer CRC wrong") {
    auto b = good;
    b[b.size() - 8] ^= 0xff;  // the CRC-32 of the trailer
    writeRaw(img, b);
    std::string m = loadError(img, lab);
    CHECK_THAT(m, Contains("corrupt gzip stream"));
  }
  SECTION("deflate data scrambled") {
    auto b = good;
    for (size_t i = 12; i < b.size() - 8; i += 3) b[i] = static_cast<uint8_t>(b[i] * 31 + 7);
    writeRaw(img, b);
    std::string m = loadError(img, lab);
    CHECK_THAT(m, Contains("gzip"));
  }
}

TEST_CASE("normalizeInto gathers and normalizes", "[trainer_data][idx]") {
  Dataset ds = makeDataset(5, 2, 3);
  ds.pixels[6] = 0;     // image 1, pixel 0
  ds.pixels[7] = 255;   // image 1, pixel 1
  const int idx[3] = {4, 1, 1};
  std::vector<float> out(3 * 6, -99.f);
  int labels[3] = {-1, -1, -1};
  normalizeInto(ds, idx, 3, out.data(), labels);
  for (int i = 0; i < 3; ++i) {
    CHECK(labels[i] == ds.labels[size_t(idx[i])]);
    for (int p = 0; p < 6; ++p) {
      const float want = (ds.pixels[size_t(idx[i] * 6 + p)] / 255.0f - 0.2860f) / 0.3530f;
      CHECK(out[size_t(i * 6 + p)] == Approx(want).epsilon(1e-6));
    }
  }
  CHECK(out[6] == Approx(-0.2860f / 0.3530f));
  CHECK(out[7] == Approx((1.0f - 0.2860f) / 0.3530f));
  normalizeInto(ds, idx, 1, out.data(), nullptr);  // labels optional
}

TEST_CASE("Fashion-MNIST from the Debian package", "[trainer_data][idx][fashion]") {
  struct stat st {};
  if (::stat(coll::train::kFashionMnistDir, &st) != 0) {
    WARN("skipped: " << coll::train::kFashionMnistDir
                     << " not found (apt-get install dataset-fashion-mnist)");
    return;
  }
  for (bool train : {false, true}) {
    CAPTURE(train);
    auto r = loadFashionMnist(coll::train::kFashionMnistDir, train);
    INFO(r.status().message());
    REQUIRE(r.isOk());
    const Dataset& ds = r.value();
    const int n = train ? 60000 : 10000;
    CHECK(ds.count == n);
    CHECK(ds.rows == 28);
    CHECK(ds.cols == 28);
    CHECK(ds.pixels.size() == size_t(n) * 784);
    REQUIRE(ds.labels.size() == size_t(n));
    std::vector<int> perClass(10, 0);
    int outOfRange = 0;
    for (uint8_t l : ds.labels) {
      if (l > 9) {
        ++outOfRange;
      } else {
        ++perClass[l];
      }
    }
    CHECK(outOfRange == 0);
    for (int c = 0; c < 10; ++c) CHECK(perClass[size_t(c)] == n / 10);  // balanced classes
    if (train) {
      // The normalization constants are the training set's statistics.
      double sum = 0, sq = 0;
      for (uint8_t p : ds.pixels) {
        const double x = p / 255.0;
        sum += x;
        sq += x * x;
      }
      const double mean = sum / double(ds.pixels.size());
      const double sd = std::sqrt(sq / double(ds.pixels.size()) - mean * mean);
      CHECK(mean == Approx(0.2860).margin(5e-4));
      CHECK(sd == Approx(0.3530).margin(5e-4));
    }
  }
}
