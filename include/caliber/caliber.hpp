// caliber public API: everything an op library includes.
#pragma once

#include "caliber/case.hpp"
#include "caliber/config.hpp"
#include "caliber/context.hpp"
#include "caliber/dtype.hpp"
#include "caliber/op.hpp"
#include "caliber/size.hpp"
