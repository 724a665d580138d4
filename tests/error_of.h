// error_of<E>(f): the message of the exception of type E that f throws, for tests that check what an error says;
// culprit_of<E>(f): the task it blames. Test helpers only.
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "lockstep/core/error.h"

namespace lockstep::testing {

// "" when f throws nothing; a test failure (and "") when it throws an exception of another type.
template <typename E = Error, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another error than expected: " << e.what();
  }
  return "";
}

// The Error::culprit() of the E that f throws; "" (and a test failure if it is not an E) otherwise.
template <typename E = Error, typename F>
std::string culprit_of(F&& f) {
  try {
    f();
    ADD_FAILURE() << "threw nothing";
  } catch (const E& e) {
    return e.culprit();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another error than expected: " << e.what();
  }
  return "";
}

}  // namespace lockstep::testing
