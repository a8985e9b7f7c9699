// Decode + train-transform throughput of the data pipeline: bench_data [IMAGE_FOLDER] [--threads N] [--train-only].
// Without a folder it writes 64 ImageNet-like JPEGs (500x375, quality 90, 4:2:0) to a temp folder first.
// Prints images per CPU-second for one thread and img/s (wall) for N threads (default: all cores), for the
// plain, the DeiT and the eval transform, then the plain one with each training speed-up switched off.
// --train-only: one thread, only the steps tools/bench_data_pil.py times (RRC, flip, normalize).
// --deit-only: one thread, only the DeiT transform, f32 out and pixels out (a longer run, for a profiler).
// --write DIR: only write the 64 synthetic JPEGs into DIR (kept; scripts/bench_feed.sh builds a tree from them).
#include <turbojpeg.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "data/datasets.h"
#include "data/loader.h"
#include "data/samplers.h"
#include "data/sources.h"

namespace fs = std::filesystem;
using namespace vt;

namespace {

std::vector<data::LabeledFile> synthetic_jpegs(const fs::path& dir, int count) {
  fs::create_directories(dir);
  tjhandle tj = tjInitCompress();
  std::vector<data::LabeledFile> files;
  std::vector<uint8_t> rgb(500 * 375 * 3);
  for (int i = 0; i < count; ++i) {
    for (int y = 0; y < 375; ++y)
      for (int x = 0; x < 500; ++x)
        for (int c = 0; c < 3; ++c)  // smooth structure plus texture, roughly photo-sized files
          rgb[(y * 500 + x) * 3 + c] = static_cast<uint8_t>(
              128 + 60 * std::sin(0.02 * (x + 7 * i) + c) * std::cos(0.03 * y) + ((x * 31 + y * 17 + i) % 23));
    unsigned char* buf = nullptr;
    unsigned long size = 0;
    tjCompress2(tj, rgb.data(), 500, 0, 375, TJPF_RGB, &buf, &size, TJSAMP_420, 90, 0);
    const fs::path p = dir / ("img" + std::to_string(i) + ".JPEG");
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(buf), static_cast<std::streamsize>(size));
    tjFree(buf);
    files.push_back({p.string(), i % 10});
  }
  tjDestroy(tj);
  return files;
}

// `pixels`: the workers stop at 8-bit pixels + the erasing draw (what training does; normalize and erasing run on
// the training device).
double images_per_second(const std::vector<data::LabeledFile>& files, const data::ClassificationTransform& t,
                         int threads, int64_t images, bool pixels = false) {
  data::ImageFileSource src(files, t);
  const int64_t n = static_cast<int64_t>(files.size());
  data::LoaderOptions o;
  o.batch_size = 32;
  o.threads = threads;
  o.prefetch_batches = 2 * threads + 2;
  o.pixels = pixels;
  data::Loader loader(
      src,
      [n, images](int64_t epoch) {
        std::vector<int64_t> idx;
        for (int64_t i = 0; i < images; ++i) idx.push_back((i + epoch) % n);
        return idx;
      },
      o);
  loader.start_epoch(0);  // warm-up epoch: page cache, thread-local decoders
  data::Batch b;
  while (loader.next(b)) {
  }
  // One thread: images per CPU-second of the process (fair on a shared, loaded machine); more: wall clock.
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  loader.start_epoch(1);
  int64_t seen = 0;
  while (loader.next(b)) seen += b.images.size(0);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  return seen / (threads == 1 ? cpu : wall);
}

}  // namespace

int main(int argc, char** argv) {
  std::string folder;
  bool train_only = false;  // one thread, the Pillow script's steps only (tools/bench_data_compare.sh)
  std::string write_dir;    // --write: only write the synthetic JPEGs there
  bool deit_only = false;   // --deit-only: one thread, the DeiT transform only (for a profiler)
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--train-only") train_only = true;
    else if (a == "--write" && i + 1 < argc) write_dir = argv[++i];
    else if (a == "--deit-only") deit_only = true;
    else folder = a;
  }
  try {
    if (!write_dir.empty()) {
      fs::create_directories(write_dir);
      std::printf("wrote %zu JPEGs to %s\n", synthetic_jpegs(write_dir, 64).size(), write_dir.c_str());
      return 0;
    }
    std::vector<data::LabeledFile> files;
    fs::path tmp;
    if (folder.empty()) {
      tmp = fs::temp_directory_path() / ("vt_bench_data_" + std::to_string(::getpid()));
      files = synthetic_jpegs(tmp, 64);
    } else {
      files = data::image_folder(folder).samples;
    }
    std::printf("%zu files%s\n", files.size(), folder.empty() ? " (synthetic 500x375 JPEG q90 4:2:0)" : "");
    const int64_t images = 512;
    if (train_only) {
      // The steps of tools/bench_data_pil.py: no colour jitter, no erasing.
      auto t = data::train_transform(224);
      t.color_jitter = 0;
      t.erasing.probability = 0;
      std::printf("RRC+flip+normalize     1 thread: %7.1f img/cpu-s\n", images_per_second(files, t, 1, images));
      if (!tmp.empty()) fs::remove_all(tmp);
      return 0;
    }
    if (deit_only) {
      std::printf(
          "DeiT (+RandAugment)    1 thread: %7.1f img/cpu-s, pixels out (normalize + erase on the device) "
          "%7.1f img/cpu-s\n",
          images_per_second(files, data::deit_train_transform(224), 1, 4 * images),
          images_per_second(files, data::deit_train_transform(224), 1, 4 * images, true));
      if (!tmp.empty()) fs::remove_all(tmp);
      return 0;
    }
    for (const auto& [name, t] : {std::pair{"RRC+flip+erase", data::train_transform(224)},
                                  std::pair{"DeiT (+RandAugment)", data::deit_train_transform(224)},
                                  std::pair{"eval resize+crop", data::eval_transform(224)}}) {
      std::printf("%-22s 1 thread: %7.1f img/cpu-s   %d threads: %7.1f img/s\n", name,
                  images_per_second(files, t, 1, images), threads, images_per_second(files, t, threads, images));
    }
    // What a training run's workers do: stop at 8-bit pixels + the erasing draw (normalize + erase on the device).
    const auto deit = data::deit_train_transform(224);
    std::printf("%-22s 1 thread: %7.1f img/cpu-s   %d threads: %7.1f img/s\n", "DeiT, pixels out",
                images_per_second(files, deit, 1, images, true), threads,
                images_per_second(files, deit, threads, images, true));
    // What each training speed-up is worth: switch them off one at a time, then all (the pipeline before them).
    auto base = data::train_transform(224);
    auto no_crop = base, no_dct = base, exact = base, old = base;
    no_crop.crop_decode = old.crop_decode = false;
    no_dct.dct_downscale = old.dct_downscale = false;
    exact.exact_train_resize = old.exact_train_resize = true;
    std::printf(
        "RRC+flip+erase, 1 thread, img/cpu-s: all on %.1f | whole-image decode %.1f | no DCT scaling %.1f | "
        "Pillow-exact resize %.1f | all off %.1f\n",
        images_per_second(files, base, 1, images), images_per_second(files, no_crop, 1, images),
        images_per_second(files, no_dct, 1, images), images_per_second(files, exact, 1, images),
        images_per_second(files, old, 1, images));
    if (!tmp.empty()) fs::remove_all(tmp);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
