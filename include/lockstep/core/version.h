// lockstep's version, from CMake's project(VERSION): for code that checks which lockstep it was built
// against (the macros, set on every target that links lockstep) and which it runs with (version()).
// LOCKSTEP_VERSION is "MAJOR.MINOR.PATCH"; LOCKSTEP_VERSION_MAJOR, _MINOR and _PATCH are its numbers.
#pragma once

namespace lockstep {

// The version of the lockstep library linked in, "MAJOR.MINOR.PATCH" (equal to LOCKSTEP_VERSION when the
// headers and the library come from one build).
const char* version();

}  // namespace lockstep
