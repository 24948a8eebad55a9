// idx.h — the IDX file format (MNIST, Fashion-MNIST): reader, writer, and the
// conversion of a batch to normalized floats.
//
// An IDX file is a big-endian header — magic 0x000008TD (T = 0x08: unsigned
// bytes, D = number of dimensions), then D 32-bit sizes — followed by the
// data.  An image file is 0x00000803 [count, rows, cols] + count*rows*cols
// bytes; a label file is 0x00000801 [count] + count bytes.  Files may be gzip
// compressed (the way Debian ships them) or plain; both are read through
// zlib's gzread, which passes plain files through unchanged.
//
// Every failure is a Status that names the file and what was wrong: missing
// (with the Debian package to install), truncated (expected vs present bytes
// and items), bad magic, image/label counts that differ, a label outside
// [0, numClasses), a corrupt gzip stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coll/base/status.h"

namespace coll::train {

// Where Debian's dataset-fashion-mnist package puts the files:
//   train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz   (60000)
//   t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz    (10000)
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";
// Fashion-MNIST pixel statistics (of x/255 over the training set).
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

// count images of rows x cols unsigned bytes, row-major, image after image
// (pixels.size() == count*rows*cols), and one label per image.
struct Dataset {
  int count = 0;
  int rows = 0, cols = 0;
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;
};

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;

// Reads an image file and its label file (each gzip'd or plain).  Labels must
// lie in [0, numClasses).
Result<Dataset> loadIdxPair(const std::string& imagesPath, const std::string& labelsPath,
                            int numClasses = 10);

// The Fashion-MNIST training set (train = true, 60000 images) or test set
// (10000) from dir.  Looks for "<name>.gz" first, then the uncompressed
// "<name>" (someone may have gunzipped them).
Result<Dataset> loadFashionMnist(const std::string& dir = kFashionMnistDir, bool train = true);

// Writes ds as an IDX image file and label file, gzip'd (gzip = true) or
// plain.  For tests and tools; checks that the sizes in ds are consistent.
Status writeIdxPair(const std::string& imagesPath, const std::string& labelsPath,
                    const Dataset& ds, bool gzip);

// Writes the bytes as they are, gzip'd or plain (tests use it to make
// truncated / bad-magic files).
Status writeBytesFile(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip);

// Gathers samples indices[0..n) of ds into out[n, 1, rows, cols] as
// (pixel/255 - mean)/std with the Fashion-MNIST mean and std, and their labels
// into labels[n] (labels may be null).  An index outside [0, ds.count) is a
// programming error: the process aborts with a message.
void normalizeInto(const Dataset& ds, const int* indices, int n, float* out, int* labels);

}  // namespace coll::train
