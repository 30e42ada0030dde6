// A test fixture with one coordinator on a temp data directory, started by the test (with
// its own config) and whose log is printed when the test fails.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>

#include "testlib/cluster.h"

namespace jobctl::testing {

class CoordinatorFixture : public ::testing::Test {
 protected:
  void Start(const std::string& config = "") {
    coord_ = std::make_unique<Coordinator>(dir_, config);
    coord_->Start();
  }
  void TearDown() override {
    if (HasFailure() && coord_) std::cerr << "---- coordinator log ----\n" << coord_->Logs();
  }
  TempDir dir_;
  std::unique_ptr<Coordinator> coord_;
};

}  // namespace jobctl::testing
