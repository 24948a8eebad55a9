#include "data/idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace coll::train {
namespace {

constexpr const char* kInstallHint = "for Fashion-MNIST: apt-get install dataset-fashion-mnist";

struct FileBytes {
  std::vector<uint8_t> bytes;  // decompressed
  bool gzip = false;
};

bool looksGzip(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char m[2] = {0, 0};
  size_t n = std::fread(m, 1, 2, f);
  std::fclose(f);
  return n == 2 && m[0] == 0x1f && m[1] == 0x8b;
}

std::string gzMessage(gzFile f, const std::string& path, int* errnum);

// The whole (decompressed) content of path.  what: "images" / "labels".
Result<FileBytes> readAll(const std::string& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
      return makeError(collInvalidArgument, "{} file '{}' not found ({})", what, path, kInstallHint);
    }
    return makeError(collSystemError, "cannot stat {} file '{}': {}", what, path, std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    return makeError(collInvalidArgument, "{} file '{}' is a directory, not an IDX file", what, path);
  }
  FileBytes out;
  out.gzip = looksGzip(path);
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    int e = errno;
    return makeError(collSystemError, "cannot open {} file '{}': {}", what, path,
                     e != 0 ? std::strerror(e) : "out of memory");
  }
  gzbuffer(f, 256 * 1024);
  constexpr size_t kChunk = 1 << 20;
  size_t have = 0;
  for (;;) {
    out.bytes.resize(have + kChunk);
    int n = gzread(f, out.bytes.data() + have, static_cast<unsigned>(kChunk));
    if (n < 0) {
      int errnum = 0;
      std::string msg = gzMessage(f, path, &errnum);
      if (errnum == Z_ERRNO) msg = std::strerror(errno);
      gzclose_r(f);
      if (out.gzip) {
        return makeError(collInvalidArgument,
                         "{} file '{}': corrupt gzip stream ({}; {} bytes decompressed before it)",
                         what, path, msg, have);
      }
      return makeError(collSystemError, "cannot read {} file '{}': {}", what, path, msg);
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  out.bytes.resize(have);
  int errnum = Z_OK;
  std::string msg = gzMessage(f, path, &errnum);
  int rc = gzclose_r(f);
  if (errnum == Z_BUF_ERROR || rc == Z_BUF_ERROR) {
    return makeError(collInvalidArgument,
                     "{} file '{}': the gzip stream ends early (file cut short?) after {} "
                     "decompressed bytes ({})",
                     what, path, have, msg.empty() ? "unexpected end of file" : msg);
  }
  if (errnum != Z_OK || rc != Z_OK) {
    return makeError(collInvalidArgument, "{} file '{}': corrupt gzip stream ({})", what, path,
                     msg.empty() ? fmt::format("zlib error {}", rc) : msg);
  }
  return out;
}

// gzerror's text, without the "path: " prefix zlib puts in front.
std::string gzMessage(gzFile f, const std::string& path, int* errnum) {
  std::string msg = gzerror(f, errnum);
  if (msg.rfind(path + ": ", 0) == 0) msg.erase(0, path.size() + 2);
  return msg;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void putBe32(std::vector<uint8_t>& v, uint32_t x) {
  v.push_back(static_cast<uint8_t>(x >> 24));
  v.push_back(static_cast<uint8_t>(x >> 16));
  v.push_back(static_cast<uint8_t>(x >> 8));
  v.push_back(static_cast<uint8_t>(x));
}

// A parsed IDX file of unsigned bytes: dims, and where the data starts.
struct IdxView {
  std::vector<uint32_t> dims;
  size_t dataOffset = 0;
};

Result<IdxView> parseHeader(const FileBytes& fb, const std::string& path, const char* what,
                            uint32_t wantMagic) {
  const auto& b = fb.bytes;
  const uint32_t wantDims = wantMagic & 0xff;
  const size_t headerBytes = 4 + 4 * size_t{wantDims};
  if (b.size() < 4) {
    return makeError(collInvalidArgument,
                     "{} file '{}' is truncated: {} bytes, an IDX header needs {} bytes", what, path,
                     b.size(), headerBytes);
  }
  const uint32_t magic = be32(b.data());
  if (magic != wantMagic) {
    std::string why;
    if (magic == kIdxImagesMagic || magic == kIdxLabelsMagic) {
      why = fmt::format(" (that is an IDX {} file: images and labels swapped?)",
                        magic == kIdxImagesMagic ? "images" : "labels");
    } else if ((magic >> 16) != 0) {
      why = fb.gzip ? " (not an IDX file)" : " (not an IDX file; a gzip file would start with 1f 8b)";
    } else if (((magic >> 8) & 0xff) != 0x08) {
      why = fmt::format(" (element type 0x{:02x}, only unsigned bytes 0x08 are supported)",
                        (magic >> 8) & 0xff);
    } else {
      why = fmt::format(" ({} dimensions, expected {})", magic & 0xff, wantDims);
    }
    return makeError(collInvalidArgument, "{} file '{}': bad magic 0x{:08x}, expected 0x{:08x}{}",
                     what, path, magic, wantMagic, why);
  }
  if (b.size() < headerBytes) {
    return makeError(collInvalidArgument,
                     "{} file '{}' is truncated: {} bytes, the IDX header needs {} bytes", what,
                     path, b.size(), headerBytes);
  }
  IdxView v;
  for (uint32_t d = 0; d < wantDims; ++d) v.dims.push_back(be32(b.data() + 4 + 4 * d));
  v.dataOffset = headerBytes;
  if (v.dims[0] > static_cast<uint32_t>(INT_MAX)) {
    return makeError(collInvalidArgument, "{} file '{}': item count {} is too large", what, path,
                     v.dims[0]);
  }
  return v;
}

}  // namespace

Result<Dataset> loadIdxPair(const std::string& imagesPath, const std::string& labelsPath,
                            int numClasses) {
  if (numClasses < 1 || numClasses > 256) {
    return makeError(collInvalidArgument, "loadIdxPair: numClasses {} is outside [1, 256]",
                     numClasses);
  }
  // Images.
  Result<FileBytes> imgR = readAll(imagesPath, "images");
  if (!imgR.isOk()) return imgR.status();
  FileBytes& img = imgR.value();
  Result<IdxView> ivR = parseHeader(img, imagesPath, "images", kIdxImagesMagic);
  if (!ivR.isOk()) return ivR.status();
  const IdxView& iv = ivR.value();
  const uint32_t count = iv.dims[0], rows = iv.dims[1], cols = iv.dims[2];
  if (rows == 0 || cols == 0 || rows > 65535 || cols > 65535) {
    return makeError(collInvalidArgument, "images file '{}': implausible image size {}x{}",
                     imagesPath, rows, cols);
  }
  const uint64_t perImage = uint64_t{rows} * cols;
  const uint64_t wantData = uint64_t{count} * perImage;  // < 2^63: count < 2^31, perImage < 2^32
  const uint64_t haveData = img.bytes.size() - iv.dataOffset;
  if (haveData < wantData) {
    return makeError(collInvalidArgument,
                     "images file '{}' is truncated: the header says {} images of {}x{} ({} bytes "
                     "with the header), the file has {} bytes ({} complete images)",
                     imagesPath, count, rows, cols, wantData + iv.dataOffset, img.bytes.size(),
                     haveData / perImage);
  }
  if (haveData > wantData) {
    return makeError(collInvalidArgument,
                     "images file '{}': {} bytes after the {} images of {}x{} the header says "
                     "({} bytes expected, {} present)",
                     imagesPath, haveData - wantData, count, rows, cols,
                     wantData + iv.dataOffset, img.bytes.size());
  }

  // Labels.
  Result<FileBytes> labR = readAll(labelsPath, "labels");
  if (!labR.isOk()) return labR.status();
  FileBytes& lab = labR.value();
  Result<IdxView> lvR = parseHeader(lab, labelsPath, "labels", kIdxLabelsMagic);
  if (!lvR.isOk()) return lvR.status();
  const IdxView& lv = lvR.value();
  const uint32_t nLabels = lv.dims[0];
  const uint64_t haveLabels = lab.bytes.size() - lv.dataOffset;
  if (haveLabels < nLabels) {
    return makeError(collInvalidArgument,
                     "labels file '{}' is truncated: the header says {} labels ({} bytes with the "
                     "header), the file has {} bytes ({} labels)",
                     labelsPath, nLabels, uint64_t{nLabels} + lv.dataOffset, lab.bytes.size(),
                     haveLabels);
  }
  if (haveLabels > nLabels) {
    return makeError(collInvalidArgument,
                     "labels file '{}': {} bytes after the {} labels the header says ({} bytes "
                     "expected, {} present)",
                     labelsPath, haveLabels - nLabels, nLabels, uint64_t{nLabels} + lv.dataOffset,
                     lab.bytes.size());
  }
  if (nLabels != count) {
    return makeError(collInvalidArgument,
                     "images file '{}' holds {} images but labels file '{}' holds {} labels",
                     imagesPath, count, labelsPath, nLabels);
  }
  for (uint32_t i = 0; i < nLabels; ++i) {
    const uint8_t l = lab.bytes[lv.dataOffset + i];
    if (l >= numClasses) {
      return makeError(collInvalidArgument,
                       "labels file '{}': label {} of item {} is outside [0, {}]", labelsPath, l,
                       i, numClasses - 1);
    }
  }

  Dataset ds;
  ds.count = static_cast<int>(count);
  ds.rows = static_cast<int>(rows);
  ds.cols = static_cast<int>(cols);
  // Drop the header in place rather than copying 47 MB.
  img.bytes.erase(img.bytes.begin(), img.bytes.begin() + static_cast<std::ptrdiff_t>(iv.dataOffset));
  img.bytes.shrink_to_fit();
  ds.pixels = std::move(img.bytes);
  ds.labels.assign(lab.bytes.begin() + static_cast<std::ptrdiff_t>(lv.dataOffset), lab.bytes.end());
  return ds;
}

Result<Dataset> loadFashionMnist(const std::string& dir, bool train) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return makeError(collInvalidArgument,
                     "Fashion-MNIST directory '{}' not found (apt-get install {})", dir,
                     kFashionMnistPackage);
  }
  const std::string prefix = train ? "train" : "t10k";
  auto pick = [&](const std::string& name) {
    const std::string gz = dir + "/" + name + ".gz";
    const std::string plain = dir + "/" + name;
    struct stat s {};
    if (::stat(gz.c_str(), &s) == 0) return gz;
    if (::stat(plain.c_str(), &s) == 0) return plain;
    return gz;  // the name the error message should show
  };
  const std::string images = pick(prefix + "-images-idx3-ubyte");
  const std::string labels = pick(prefix + "-labels-idx1-ubyte");
  Result<Dataset> r = loadIdxPair(images, labels, 10);
  if (!r.isOk()) return r.status();
  Dataset& ds = r.value();
  const int want = train ? 60000 : 10000;
  if (ds.count != want || ds.rows != 28 || ds.cols != 28) {
    return makeError(collInvalidArgument,
                     "'{}' holds {} images of {}x{}; Fashion-MNIST's {} set has {} of 28x28",
                     images, ds.count, ds.rows, ds.cols, train ? "training" : "test", want);
  }
  return r;
}

Status writeBytesFile(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    if (f == nullptr) {
      return makeError(collSystemError, "cannot create '{}': {}", path, std::strerror(errno));
    }
    size_t off = 0;
    while (off < bytes.size()) {
      const unsigned n = static_cast<unsigned>(std::min<size_t>(bytes.size() - off, 1u << 20));
      if (gzwrite(f, bytes.data() + off, n) != static_cast<int>(n)) {
        int errnum = 0;
        std::string msg = gzMessage(f, path, &errnum);
        gzclose_w(f);
        return makeError(collSystemError, "cannot write '{}': {}", path, msg);
      }
      off += n;
    }
    if (gzclose_w(f) != Z_OK) {
      return makeError(collSystemError, "cannot write '{}' (gzclose failed)", path);
    }
    return Status::ok();
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return makeError(collSystemError, "cannot create '{}': {}", path, std::strerror(errno));
  }
  const bool okWrite = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int e = errno;
  if (std::fclose(f) != 0 || !okWrite) {
    return makeError(collSystemError, "cannot write '{}': {}", path, std::strerror(okWrite ? errno : e));
  }
  return Status::ok();
}

Status writeIdxPair(const std::string& imagesPath, const std::string& labelsPath,
                    const Dataset& ds, bool gzip) {
  if (ds.count < 0 || ds.rows <= 0 || ds.cols <= 0 ||
      ds.pixels.size() != size_t(ds.count) * size_t(ds.rows) * size_t(ds.cols) ||
      ds.labels.size() != size_t(ds.count)) {
    return makeError(collInvalidArgument,
                     "writeIdxPair: inconsistent dataset: count {}, {}x{}, {} pixel bytes, {} labels",
                     ds.count, ds.rows, ds.cols, ds.pixels.size(), ds.labels.size());
  }
  std::vector<uint8_t> img;
  img.reserve(16 + ds.pixels.size());
  putBe32(img, kIdxImagesMagic);
  putBe32(img, static_cast<uint32_t>(ds.count));
  putBe32(img, static_cast<uint32_t>(ds.rows));
  putBe32(img, static_cast<uint32_t>(ds.cols));
  img.insert(img.end(), ds.pixels.begin(), ds.pixels.end());
  std::vector<uint8_t> lab;
  lab.reserve(8 + ds.labels.size());
  putBe32(lab, kIdxLabelsMagic);
  putBe32(lab, static_cast<uint32_t>(ds.count));
  lab.insert(lab.end(), ds.labels.begin(), ds.labels.end());
  COLL_CHECK(writeBytesFile(imagesPath, img, gzip));
  COLL_CHECK(writeBytesFile(labelsPath, lab, gzip));
  return Status::ok();
}

void normalizeInto(const Dataset& ds, const int* indices, int n, float* out, int* labels) {
  std::array<float, 256> lut{};
  for (int v = 0; v < 256; ++v) {
    lut[static_cast<size_t>(v)] =
        (static_cast<float>(v) / 255.0f - kFashionMnistMean) / kFashionMnistStd;
  }
  const size_t per = size_t(ds.rows) * size_t(ds.cols);
  for (int i = 0; i < n; ++i) {
    const int idx = indices[i];
    if (idx < 0 || idx >= ds.count) {
      std::fprintf(stderr, "normalizeInto: index %d (batch position %d) is outside [0, %d)\n", idx,
                   i, ds.count);
      std::abort();
    }
    const uint8_t* src = ds.pixels.data() + size_t(idx) * per;
    float* dst = out + size_t(i) * per;
    for (size_t p = 0; p < per; ++p) dst[p] = lut[src[p]];
    if (labels != nullptr) labels[i] = ds.labels[size_t(idx)];
  }
}

}  // namespace coll::train
