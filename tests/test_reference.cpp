// The CPU references are the ground truth of every test: check them against values known
// independently (closed forms, identities, published constants).
#include <gtest/gtest.h>

#include <cmath>

#include "course/reference/activation.h"
#include "course/reference/elementwise.h"

namespace {

namespace ref = course::reference;

TEST(ReferenceElementwise, VectorAddAndSaxpy) {
  EXPECT_EQ(ref::vector_add({1, 2}, {3, -4}), (std::vector<double>{4, -2}));
  EXPECT_EQ(ref::saxpy(2.0, {1, 2}, {10, 20}), (std::vector<double>{12, 24}));
}

TEST(ReferenceActivation, GeluTanhKnownValues) {
  EXPECT_DOUBLE_EQ(ref::gelu_tanh(0.0), 0.0);
  // Large positive inputs pass through, large negative ones vanish.
  EXPECT_NEAR(ref::gelu_tanh(10.0), 10.0, 1e-12);
  EXPECT_NEAR(ref::gelu_tanh(-10.0), 0.0, 1e-12);
  // PyTorch: torch.nn.functional.gelu(torch.tensor(1., dtype=torch.float64), approximate="tanh")
  EXPECT_NEAR(ref::gelu_tanh(1.0), 0.8411919906082768, 1e-15);
}

TEST(ReferenceActivation, SiluKnownValues) {
  EXPECT_DOUBLE_EQ(ref::silu(0.0), 0.0);
  EXPECT_NEAR(ref::silu(1.0), 1.0 / (1.0 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(ref::silu(-30.0), 0.0, 1e-11);
}

TEST(ReferenceActivation, AddBiasGeluBroadcastsTheBiasOverRows) {
  const auto y = ref::add_bias_gelu({0, 0, 1, 1}, {1, 0});
  EXPECT_DOUBLE_EQ(y[0], ref::gelu_tanh(1.0));
  EXPECT_DOUBLE_EQ(y[1], 0.0);
  EXPECT_DOUBLE_EQ(y[2], ref::gelu_tanh(2.0));
  EXPECT_DOUBLE_EQ(y[3], ref::gelu_tanh(1.0));
}

TEST(ReferenceActivation, SiluAndMulSplitsGateAndUp) {
  // two rows, d = 2: [g0 g1 u0 u1]
  const auto y = ref::silu_and_mul({1, 2, 3, 4, -1, 0, 5, 6}, 2);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_DOUBLE_EQ(y[0], ref::silu(1) * 3);
  EXPECT_DOUBLE_EQ(y[1], ref::silu(2) * 4);
  EXPECT_DOUBLE_EQ(y[2], ref::silu(-1) * 5);
  EXPECT_DOUBLE_EQ(y[3], 0.0);
}

}  // namespace
