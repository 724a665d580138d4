// Error kinds and culprits: every lockstep error type maps to a kind and back to the same type, so an error raised
// on one worker is raised as the same type on the others, with the task it blames.
#include "lockstep/core/error.h"

#include <gtest/gtest.h>

#include <set>
#include <typeinfo>

namespace lockstep {
namespace {

template <typename E> void expect_round_trip() {
  const E original("what happened");
  const ErrorKind kind = error_kind(original);
  try {
    raise_error(kind, original.what());
  } catch (const std::exception& e) {
    EXPECT_EQ(typeid(e), typeid(E)) << error_kind_name(kind);
    EXPECT_STREQ(e.what(), "what happened");
    EXPECT_EQ(error_kind(e), kind);
  }
}

TEST(ErrorKind, EveryErrorTypeRoundTrips) {
  expect_round_trip<Error>();
  expect_round_trip<ValueError>();
  expect_round_trip<InvalidArgumentError>();
  expect_round_trip<NotFoundError>();
  expect_round_trip<DataLossError>();
  expect_round_trip<RuntimeError>();
  expect_round_trip<DeadlineExceededError>();
  expect_round_trip<UnavailableError>();
  expect_round_trip<AlreadyExistsError>();
  expect_round_trip<PermissionDeniedError>();
  expect_round_trip<FailedPreconditionError>();
  expect_round_trip<OutOfRangeError>();
  expect_round_trip<ResourceExhaustedError>();
  expect_round_trip<UnimplementedError>();
}

TEST(ErrorKind, KindsAndNamesAreDistinct) {
  const std::set<ErrorKind> kinds = {
      error_kind(ValueError("")),         error_kind(InvalidArgumentError("")), error_kind(NotFoundError("")),
      error_kind(DataLossError("")),      error_kind(RuntimeError("")),         error_kind(DeadlineExceededError("")),
      error_kind(UnavailableError("")),   error_kind(AlreadyExistsError("")),   error_kind(PermissionDeniedError("")),
      error_kind(FailedPreconditionError("")), error_kind(OutOfRangeError("")), error_kind(ResourceExhaustedError("")),
      error_kind(UnimplementedError("")), error_kind(Error(""))};
  EXPECT_EQ(kinds.size(), 14u);
  std::set<std::string> names;
  for (ErrorKind k : kinds) names.insert(error_kind_name(k));
  EXPECT_EQ(names.size(), 14u);
  EXPECT_STREQ(error_kind_name(error_kind(NotFoundError(""))), "NotFoundError");
}

TEST(ErrorKind, OtherExceptionsBecomeError) {
  EXPECT_EQ(error_kind(std::runtime_error("x")), ErrorKind::kOther);
  EXPECT_THROW(raise_error(ErrorKind::kOther, "x"), Error);
}

TEST(Culprit, TravelsWithTheErrorAndItsCopies) {
  const UnavailableError lost("worker:1 failed", Culprit{"worker:1"});
  EXPECT_EQ(lost.culprit(), "worker:1");
  const UnavailableError copy = lost;
  EXPECT_EQ(copy.culprit(), "worker:1");
  EXPECT_EQ(culprit_of(copy), "worker:1");
  EXPECT_EQ(ValueError("bad flag").culprit(), "");
  EXPECT_EQ(culprit_of(std::runtime_error("x")), "");
  try {
    raise_error(ErrorKind::kDeadlineExceeded, "worker:2 has not arrived", Culprit{"worker:2"});
  } catch (const DeadlineExceededError& e) {
    EXPECT_EQ(e.culprit(), "worker:2");
  }
}

}  // namespace
}  // namespace lockstep
