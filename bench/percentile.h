// Percentile of a sample, for the benchmark programs' tables.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace shoal::bench {

// The value at fraction `p` (0..1, nearest rank) of `v`; 0 for an empty sample.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace shoal::bench
