// A fixture for tests that run on several logical CPU devices (more than cores is
// allowed): one intra-op thread each, and afterwards no current distribution and the
// host's own devices again. `Base` adds its own set-up (TempDirTest: a scratch
// directory). Header-only.
#pragma once

#include <gtest/gtest.h>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/devices.h"
#include "chorus/distribution/distribution.h"

namespace chorus::testing {

template <int Devices, class Base = ::testing::Test>
class LogicalDevicesTest : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    backend::cpu::set_intra_op_threads(1);
    chorus::set_cpu_devices(Devices);
  }
  void TearDown() override {
    distribution::set_distribution(nullptr);
    chorus::set_cpu_devices(0);
    Base::TearDown();
  }
};

}  // namespace chorus::testing
