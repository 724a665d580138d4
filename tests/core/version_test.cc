// lockstep::version() and the LOCKSTEP_VERSION macros name one version, the one in CMakeLists.txt.
#include "lockstep/core/version.h"

#include <gtest/gtest.h>

#include <string>

namespace lockstep {
namespace {

TEST(Version, TheFunctionAndTheMacrosAgree) {
  EXPECT_EQ(std::string(version()), LOCKSTEP_VERSION);
  EXPECT_EQ(std::string(version()), std::to_string(LOCKSTEP_VERSION_MAJOR) + "." +
                                        std::to_string(LOCKSTEP_VERSION_MINOR) + "." +
                                        std::to_string(LOCKSTEP_VERSION_PATCH));
}

}  // namespace
}  // namespace lockstep
