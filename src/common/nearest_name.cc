#include "common/nearest_name.h"

#include <algorithm>
#include <vector>

namespace shoal {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

NearestName FindNearestName(std::string_view name, std::span<const std::string> candidates) {
  NearestName out;
  size_t best = std::string_view::npos;
  for (const auto& c : candidates) {
    if (size_t d = EditDistance(name, c); d < best) {
      best = d;
      out.name = c;
    }
  }
  out.likely_typo = !out.name.empty() && best <= std::max<size_t>(2, name.size() / 3);
  return out;
}

}  // namespace shoal
