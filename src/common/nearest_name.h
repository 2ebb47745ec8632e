// Which known name a mistyped one most likely meant: the "did you mean" of
// mount options and of the CLI's subcommands, computed one way.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace shoal {

// Optimal string alignment distance: insertions, deletions, substitutions and
// transpositions of neighbours each cost one ("endpiont" is 1 from "endpoint").
size_t EditDistance(std::string_view a, std::string_view b);

struct NearestName {
  std::string name;          // the candidate closest to the name asked about; "" when there are none
  bool likely_typo = false;  // close enough to be a typo of it: two edits, or a third of a long name
};
NearestName FindNearestName(std::string_view name, std::span<const std::string> candidates);

}  // namespace shoal
