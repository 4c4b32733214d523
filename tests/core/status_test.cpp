#include "kselect/status.h"

#include <gtest/gtest.h>

namespace kselect {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError(std::to_string(x) + " is odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  KSELECT_ASSIGN_OR_RETURN(int half, Half(x));
  return Half(half);
}

TEST(StatusTest, OkAndErrorsCarryCodeAndMessage) {
  EXPECT_TRUE(Status::Ok().ok());
  const Status s = ParseError("f.log:3: bad");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kParseError);
  EXPECT_EQ(s.ToString(), "parse_error: f.log:3: bad");
  EXPECT_EQ(s.WithContext("ingest").message(), "ingest: f.log:3: bad");
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  const auto odd = Quarter(6);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(), "3 is odd");
}

TEST(StatusTest, ValueOfAnErrorIsACheckFailureNotACrash) {
  const StatusOr<int> bad = NotFoundError("x");
  EXPECT_THROW((void)bad.value(), CheckFailure);
  EXPECT_THROW(KSELECT_CHECK(1 == 2), CheckFailure);
  EXPECT_THROW(StatusOr<int>{Status::Ok()}, CheckFailure);
}

}  // namespace
}  // namespace kselect
