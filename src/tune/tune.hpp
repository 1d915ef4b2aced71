// The autotune room in one include.
#pragma once

#include "tune/cache.hpp"
#include "tune/prune.hpp"
#include "tune/tuner.hpp"
#include "tune/warmup.hpp"
