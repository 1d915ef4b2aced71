// The one type of a refusal of bad usage or input: a knob's value, a shape file, a selection that
// selects nothing, a batch's or an A/B's flags. Found before anything is written; every subcommand
// prints its message on one line and exits 2 (cli::run_command). The rooms below may throw a type
// of their own derived from it (core::KnobError, core::ShapeError, run::SelectionError), so that a
// caller can tell one refusal from another where it must.
#pragma once

#include <stdexcept>

namespace caliber::core {

class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace caliber::core
