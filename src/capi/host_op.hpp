// Ops whose workloads live in a host language (a Python suite, docs/python.md): the harness
// drives them through the public Op API like any op library's, and each call goes to the host.
#pragma once

#include <string>

#include "capi/caliber_c.h"

namespace caliber::capi {

// Registers the op `info_json` describes (caliber_c.h) for `backend`. Throws
// std::invalid_argument naming the op and the field that is wrong.
void register_host_op(const std::string& backend, const std::string& info_json,
                      caliber_c_call_fn call, caliber_c_launch_fn launch, std::int64_t target);

}  // namespace caliber::capi
